"""Profile one decode step of a model: per-task timeline, Chrome trace and summary.

    python benchmarks/profile_decode.py --model Qwen3-0.6B --out benchmarks/results/profile_qwen3_0.6b

Builds the model's MegaKernel with ``profile=True``, prefills a random prompt to the context,
replays its launch from a CUDA graph (position reset before each, as in megagen bench), and records
the last one. Writes trace.json.gz (open it in https://ui.perfetto.dev), timeline.png, summary.txt, the
raw rows (profile.npz) and the per-layer waterfall (waterfall.md, ``benchmarks/waterfall.py``,
against the copy bandwidth measured in the same run). Also times the step with and without
profiling, to show what recording costs: CUDA-graph replays, as megagen bench times them (a launch from
Python leaves the GPU idle while it is issued: three trees of Qwen3-30B-A3B's first 8 layers took 0.594-0.658
ms a step timed launch by launch, against 0.571-0.588 replayed by ab.py; H200, 2026-11-28, BENCHMARKS.md).
"""
import argparse
import gzip
import shutil
import statistics
from pathlib import Path

import torch

from megagen import models
from megagen.bench import SAMPLE_SETTINGS, build_options, copy_bandwidth, measure, megagen_step
from waterfall import markdown, waterfall


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="Qwen3-0.6B")
    ap.add_argument("--context", type=int, default=512)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--layers", type=int, default=None, help="keep only the model's first N layers (real shapes)")
    ap.add_argument("--scheduler", default="round_robin")
    ap.add_argument("--out", default="profile_out")
    ap.add_argument("--sample", action="store_true", help=f"draw the tokens with {SAMPLE_SETTINGS}, not greedily")
    ap.add_argument("--option", action="append", default=[], help="a megagen.build option, e.g. max_tile_rows=16")
    args = ap.parse_args()
    options = build_options(args.option)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    model = models.load(args.model, dtype=torch.bfloat16, device="cuda",
                        **({"num_hidden_layers": args.layers} if args.layers else {}))
    prompt = torch.randint(3, model.config.vocab_size, (args.batch, args.context), device="cuda")
    bandwidth = copy_bandwidth(torch.device("cuda"), True)
    lines = [f"{args.model}, batch {args.batch}, context {args.context}, scheduler {args.scheduler}, options {options}, "
             f"{'sampling' if args.sample else 'greedy'}, {torch.cuda.get_device_name()}, copy bandwidth {bandwidth / 1e9:.0f} GB/s"]
    for profile in (False, True):
        step, reset, kernel, _ = megagen_step(model, prompt, args.scheduler, {**options, "profile": profile},
                                              args.sample)
        times = measure(step, 50, 10, reset, warmup_s=1.0)
        kernel.check()
        lines.append(f"decode step {'with' if profile else 'without'} profiling: "
                     f"{statistics.median(times):.3f} ms (median of 50 CUDA-graph replays)")
    p = kernel.profile()
    p.save(out / "profile.npz")
    p.to_chrome_trace(out / "trace.json")
    with open(out / "trace.json", "rb") as src, gzip.open(out / "trace.json.gz", "wb") as dst:
        shutil.copyfileobj(src, dst)
    (out / "trace.json").unlink()
    p.plot(out / "timeline.png")
    text = "\n".join(lines) + "\n\n" + p.summary() + "\n"
    (out / "summary.txt").write_text(text)
    table = markdown(waterfall(p, model.config, args.context, bandwidth, args.batch), f"{args.model}: {lines[0]}")
    (out / "waterfall.md").write_text(table)
    print(text + "\n" + table)


if __name__ == "__main__":
    main()
