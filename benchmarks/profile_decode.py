"""Profile one decode step of a model: per-task timeline, Chrome trace and summary.

    python benchmarks/profile_decode.py --model Qwen3-0.6B --out benchmarks/results/profile_qwen3_0.6b

Builds the model's MegaKernel with ``profile=True``, prefills a random prompt to the context,
runs warm-up launches (position reset before each, as in megagen bench), and records the last
one. Writes trace.json.gz (open it in https://ui.perfetto.dev), timeline.png, summary.txt and the
raw rows (profile.npz). Also times the step with and without profiling, to show what recording costs.
"""
import argparse
import gzip
import shutil
import statistics
from pathlib import Path

import torch

import megagen
from megagen import models
from megagen.bench import measure


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="Qwen3-0.6B")
    ap.add_argument("--context", type=int, default=512)
    ap.add_argument("--scheduler", default="round_robin")
    ap.add_argument("--out", default="profile_out")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    model = models.load(args.model, dtype=torch.bfloat16, device="cuda")
    prompt = torch.randint(3, model.config.vocab_size, (1, args.context), device="cuda")
    lines = [f"{args.model}, batch 1, context {args.context}, scheduler {args.scheduler}, "
             f"{torch.cuda.get_device_name()}"]
    for profile in (False, True):
        runner = megagen.build(model, scheduler=args.scheduler, max_seq_len=args.context + 16, profile=profile)
        kernel = runner.kernel(1)
        runner.prefill(prompt)
        times = measure(lambda: kernel.run(check=False), 50, 10,
                        before=lambda: runner.state.pos.fill_(args.context))
        kernel.check()
        lines.append(f"decode step {'with' if profile else 'without'} profiling: "
                     f"{statistics.median(times):.3f} ms (median of 50)")
    p = kernel.profile()
    p.save(out / "profile.npz")
    p.to_chrome_trace(out / "trace.json")
    with open(out / "trace.json", "rb") as src, gzip.open(out / "trace.json.gz", "wb") as dst:
        shutil.copyfileobj(src, dst)
    (out / "trace.json").unlink()
    p.plot(out / "timeline.png")
    text = "\n".join(lines) + "\n\n" + p.summary() + "\n"
    (out / "summary.txt").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
