"""The main job: build a HuggingFace causal LM into a MegaKernel and generate with it beside HuggingFace.

    megagen demo [--model PRESET_OR_PATH] [--new-tokens N] [--batch B]
    python -m megagen.demo ...             (the same)

``--model`` is a preset of megagen.models (random weights; no hub is needed) or a local
checkpoint directory (``from_pretrained``). Without a CUDA GPU it runs the tiny
"tiny-qwen3" preset in float32 in Triton's CPU interpreter; on a GPU, Qwen3-0.6B in
bfloat16, and it also times a decode step.
"""
from __future__ import annotations

import argparse
import sys
import time

import torch

import megagen
from megagen import models
from megagen.backend import default_device, interpreting
from megagen.cli import run


def main(argv=None):
    cpu = interpreting()
    ap = argparse.ArgumentParser(prog="megagen demo", description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="tiny-qwen3" if cpu else "Qwen3-0.6B",
                    help=f"a preset ({', '.join(sorted(models.PRESETS))}) or a local checkpoint directory")
    ap.add_argument("--prompt-len", type=int, default=8 if cpu else 512)
    ap.add_argument("--new-tokens", type=int, default=8 if cpu else 32)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--show-source", action="store_true", help="print the whole generated MegaKernel source")
    args = ap.parse_args(argv)
    if args.new_tokens < 2:
        ap.error("--new-tokens must be at least 2 (the first new token comes from the prefill)")
    device = default_device()
    dtype = torch.float32 if cpu else torch.bfloat16
    print(f"megagen {megagen.__version__}: {'Triton interpreter on the CPU' if cpu else torch.cuda.get_device_name()}")
    model = models.load(args.model, dtype=dtype, device=device, **({"initializer_range": 0.3} if cpu else {}))
    t0 = time.perf_counter()
    runner = megagen.build(model, max_seq_len=args.prompt_len + args.new_tokens, max_batch_size=args.batch)
    kernel = runner.kernel(args.batch)
    print(f"{args.model} ({type(model).__name__}, {dtype}): {len(runner.task_graph.ops)} ops, "
          f"{kernel.dag.num_tasks} tiles, {kernel.num_ctas} CTAs; built in {time.perf_counter() - t0:.1f} s")

    torch.manual_seed(1)
    ids = torch.randint(3, model.config.vocab_size, (args.batch, args.prompt_len), device=device)
    t0 = time.perf_counter()
    ours = runner.generate(ids, max_new_tokens=args.new_tokens, do_sample=False)
    elapsed = time.perf_counter() - t0
    with torch.no_grad():
        theirs = model.generate(ids, do_sample=False, max_new_tokens=args.new_tokens)
    for b in range(args.batch):
        print(f"row {b} megagen:     {ours[b, args.prompt_len:].tolist()}")
        print(f"row {b} HuggingFace: {theirs[b, args.prompt_len:].tolist()}")
    same = ours.shape == theirs.shape and torch.equal(ours, theirs)
    print(f"identical tokens: {same}  (generate took {elapsed:.1f} s, Triton compile included)")
    if not same and cpu:
        raise SystemExit("megagen's tokens differ from HuggingFace's (float32 must match exactly)")
    if not same:
        print("(in bfloat16 a near-tie can flip an argmax and the sequences then diverge; "
              "benchmarks/decode_check.py measures the logits' agreement)")

    # every scheduler: the same decode step from the same state gives the same logits
    logits = {}
    for scheduler in ("round_robin", "zigzag", "work_queue"):
        other = runner if scheduler == "round_robin" else megagen.build(
            model, scheduler=scheduler, max_seq_len=args.prompt_len + args.new_tokens, max_batch_size=args.batch)
        other.prefill(ours[:, :-2])
        other.state.tokens[:args.batch] = ours[:, -2]  # replay the last step: same token, same position
        other.kernel(args.batch).run()
        logits[scheduler] = other.logits(args.batch).float()
        err = ((logits[scheduler] - logits["round_robin"]).abs().max() / logits["round_robin"].abs().max()).item()
        print(f"{scheduler:>11}: {other.kernel(args.batch).num_ctas} CTAs, logits within {err:.1e} (relative) "
              "of round_robin's")
        if err > 1e-5:
            raise SystemExit(f"{scheduler}: logits differ from round_robin's")

    if not cpu:
        runner.prefill(ids)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(20):
            kernel.run(check=False)
        end.record()
        torch.cuda.synchronize()
        kernel.check()
        print(f"decode step: {start.elapsed_time(end) / 20:.3f} ms per token (one MegaKernel launch)")
    print(f"generated source: {kernel.source_path}")
    src = kernel.source.splitlines()
    print("\n".join(src if args.show_source else src[:14] + ["..."]))


if __name__ == "__main__":
    sys.exit(run(main, "megagen demo"))
