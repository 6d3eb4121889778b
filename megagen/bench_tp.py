"""Tensor-parallel decode: megagen at tp=N against torch TP + NCCL (+ CUDA graph), and against tp=1.

    python -m megagen.bench_tp --model Qwen3-8B --save-reference ref.pt --out DIR        (tp=1, one GPU)
    torchrun --nproc-per-node 4 -m megagen.bench_tp --model Qwen3-8B --reference ref.pt --out DIR

Every rank builds the same random-weight model (seeded, checked equal across ranks) and prompt.
1. Correctness: megagen generates ``--new-tokens`` greedily with its logits (gathered over the
   vocabulary slices); with ``--save-reference`` they are saved, with ``--reference`` compared with
   the saved tp=1 run: how many tokens agree, and (teacher forcing: every step fed the reference's
   previous token) the cosine, relative error and argmax agreement of every step's logits.
2. Latency, batch 1 at ``--context``: megagen (one MegaKernel launch per rank per step); then the
   HuggingFace model sharded Megatron-style with NCCL all-reduces (``megagen.torch_tp``), eager
   (dynamic cache) and with a static cache replayed from a CUDA graph. CUDA-event timed on every
   rank, the context reset before each step, median / min / max of ``--steps`` after warm-up;
   the reported figure is rank 0's (the ranks wait for each other every step).
Rank 0 writes bench_tp{N}.json (GPU, driver, versions, date, command; ``--option`` build options and a
non-default ``--allreduce`` in the name) into ``--out``; with ``--profile``, also rank 0's timeline of
one step (profile_tp{N}.txt / .png / .npz, the last for ``benchmarks/waterfall.py --tp N``).
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import sys
import time
from pathlib import Path

import torch

import megagen
from megagen import models
from megagen.bench import (_driver, build_options, copy_bandwidth, hf_eager, hf_static, measure, step_bytes,
                           summarize)
from megagen.world import _bounded


def parse_args(argv):
    ap = argparse.ArgumentParser(prog="python -m megagen.bench_tp", description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="Qwen3-8B", help=f"a preset ({', '.join(sorted(models.PRESETS))})")
    ap.add_argument("--context", type=int, default=512)
    ap.add_argument("--new-tokens", type=int, default=128)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--allreduce", default="auto", choices=("auto", "one_shot", "two_shot"))
    ap.add_argument("--reference", help="tp=1 tokens and logits saved by --save-reference, to compare with")
    ap.add_argument("--save-reference", help="save this run's tokens and logits here (run it at tp=1)")
    ap.add_argument("--baselines", nargs="*", default=["torch_tp_eager", "torch_tp_cuda_graph"])
    ap.add_argument("--profile", action="store_true", help="record one step's timeline on every rank")
    ap.add_argument("--option", action="append", default=[], help="a megagen.build option, e.g. block_n=8")
    ap.add_argument("--out", default="bench_tp_out")
    args = ap.parse_args(argv)
    args.options = build_options(args.option)
    return args


def compare(got_tokens, got_logits, ref_tokens, ref_logits) -> dict:
    """Agreement of a generation with the reference's: tokens, and logits at the steps where both decoded
    the same sequence (step s's logits follow new tokens 0..s-1; step 0 is the shared prefill's, left out)."""
    prompt = ref_tokens.shape[1] - ref_logits.shape[1]
    new = min(got_tokens.shape[1], ref_tokens.shape[1]) - prompt
    same = (got_tokens[0, prompt:prompt + new] == ref_tokens[0, prompt:prompt + new]).long()
    prefix = int(same.cumprod(0).sum())  # new tokens equal from the start
    steps = range(1, min(prefix + 1, got_logits.shape[1], ref_logits.shape[1]))
    got = [got_logits[0, s].float() for s in steps]
    ref = [ref_logits[0, s].float() for s in steps]
    cos = [torch.nn.functional.cosine_similarity(g, r, 0).item() for g, r in zip(got, ref)]
    rel = [((g - r).abs().max() / r.abs().max()).item() for g, r in zip(got, ref)]
    return {"new_tokens": new, "tokens_equal_from_start": prefix, "tokens_equal": int(same.sum()),
            "compared_steps": len(cos), "min_cosine": min(cos, default=None),
            "first_step_cosine": cos[0] if cos else None, "max_relative_error": max(rel, default=None)}


@torch.no_grad()
def teacher_forced(runner, prompt, ref_tokens, ref_logits) -> dict:
    """Every decode step fed the reference's previous token: its logits against the reference's."""
    kernel = runner.kernel(1)
    runner.prefill(prompt)
    length = prompt.shape[1]
    cos, rel, same = [], [], 0
    for s in range(1, ref_logits.shape[1]):
        for state in runner.states:
            state.tokens[0] = ref_tokens[0, length + s - 1]
            state.pos[0] = length + s - 1
        kernel.run(check=False)
        got, want = runner.logits(1)[0].float().cpu(), ref_logits[0, s].float().cpu()
        cos.append(torch.nn.functional.cosine_similarity(got, want, 0).item())
        rel.append(((got - want).abs().max() / want.abs().max()).item())
        same += int(got.argmax() == want.argmax())
    kernel.check()
    return {"steps": len(cos), "min_cosine": min(cos), "median_cosine": statistics.median(cos),
            "max_relative_error": max(rel), "argmax_agreement": same / len(cos)}


def profile_step(model, world, args, prompt, out: Path, rank: int) -> None:
    """One profiled step on every rank (a second runner on the same world); rank 0 writes its timeline."""
    runner = megagen.build(model, tp=world.size, world=world, max_seq_len=args.context + args.new_tokens + 16,
                           allreduce=args.allreduce, profile=True, **args.options)
    kernel = runner.kernel(1)
    runner.prefill(prompt)
    measure(lambda: kernel.run(check=False), 5, 5, lambda: [st.pos[:1].fill_(args.context) for st in runner.states])
    profile = kernel.profile()
    if rank == 0:
        profile.plot(out / f"profile_tp{world.size}.png")
        profile.save(out / f"profile_tp{world.size}.npz")
        (out / f"profile_tp{world.size}.txt").write_text(
            f"{args.model}, tp={world.size}, rank 0, batch 1, context {args.context}\n\n{profile.summary()}\n")


def megagen_timing(runner, context: int, args) -> dict:
    kernel = runner.kernel(1)

    def reset():
        for state in runner.states:
            state.pos[:1].fill_(context)
    times = measure(lambda: kernel.run(check=False), args.steps, args.warmup, reset)
    kernel.check()
    return {**summarize(times, 1), "tasks_per_rank": kernel.dag.num_tasks, "ctas": kernel.num_ctas}


def main(argv=None) -> int:
    import torch.distributed as dist
    args = parse_args(sys.argv[1:] if argv is None else argv)
    tp = int(os.environ.get("WORLD_SIZE", "1"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    device = torch.device("cuda", local)
    if tp > 1:
        dist.init_process_group("nccl", device_id=device)
    rank = dist.get_rank() if tp > 1 else 0
    model = models.random_model(args.model, dtype=torch.bfloat16, device=device, seed=0)
    checksum = torch.tensor([sum(float(p.float().sum()) for p in model.parameters())], device=device)
    if tp > 1:
        sums = [torch.empty_like(checksum) for _ in range(tp)]
        dist.all_gather(sums, checksum)
        if len({float(s) for s in sums}) != 1:
            raise SystemExit(f"the ranks built different weights: {[float(s) for s in sums]}")
    gen = torch.Generator().manual_seed(0)
    prompt = torch.randint(3, model.config.vocab_size, (1, args.context), generator=gen).to(device)
    report = {"model": args.model, "tp": tp, "device": torch.cuda.get_device_name(device), "driver": _driver(),
              "date": datetime.date.today().isoformat(),
              "command": ("torchrun --nproc-per-node %d -m megagen.bench_tp " % tp if tp > 1 else
                          "python -m megagen.bench_tp ") + " ".join(sys.argv[1:] if argv is None else argv),
              "torch": torch.__version__, "triton": __import__("triton").__version__,
              "transformers": __import__("transformers").__version__, "megagen": megagen.__version__,
              "context": args.context, "batch": 1, "options": args.options, "systems": {}}
    bandwidth = copy_bandwidth(device, True)
    report["copy_bandwidth_GBps"] = bandwidth / 1e9
    report["bytes_per_step"] = step_bytes(model, args.context, 1)
    report["ideal_floor_ms"] = report["bytes_per_step"] / tp / bandwidth * 1e3  # every byte split evenly

    with torch.no_grad():
        t0 = time.perf_counter()
        runner = megagen.build(model, tp=tp, max_seq_len=args.context + args.new_tokens + 16,
                               allreduce=args.allreduce, **args.options)
        report["build_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        tokens, logits = runner.generate(prompt, args.new_tokens, return_logits=True, do_sample=False)
        report["generate_s"] = time.perf_counter() - t0  # includes the first launch's compile
        if rank == 0 and args.save_reference:
            torch.save({"tokens": tokens.cpu(), "logits": logits.cpu()}, args.save_reference)
        if args.reference:
            ref = torch.load(args.reference)
            report["vs_tp1"] = compare(tokens.cpu(), logits.cpu(), ref["tokens"], ref["logits"])
            report["vs_tp1_teacher_forced"] = teacher_forced(runner, prompt, ref["tokens"], ref["logits"])
        if tp > 1:
            dist.barrier()
        report["systems"]["megagen"] = megagen_timing(runner, args.context, args)
        if args.profile:
            Path(args.out).mkdir(parents=True, exist_ok=True)
            profile_step(model, runner.world, args, prompt, Path(args.out), rank)
        runner.close()
        del runner, logits

        if tp > 1:
            from megagen.torch_tp import shard_hf_model_
            shard_hf_model_(model, rank, tp)
            torch.cuda.empty_cache()
        for system in args.baselines:
            if tp > 1:
                dist.barrier()
            if system == "torch_tp_eager":
                step, before = hf_eager(model, prompt)
            else:
                step, before = hf_static(model, prompt, compiled=False)
            report["systems"][system] = summarize(measure(step, args.steps, args.warmup, before), 1)
    mg = report["systems"]["megagen"]["median_ms"]
    report["speedup_vs"] = {s: e["median_ms"] / mg for s, e in report["systems"].items() if s != "megagen"}
    if rank == 0:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        tag = "".join(f"_{k}{v}" for k, v in sorted({**args.options, "allreduce": args.allreduce}.items())
                      if (k, v) != ("allreduce", "auto"))
        path = out / f"bench_tp{tp}{tag}.json"
        path.write_text(json.dumps(report, indent=2))
        print(json.dumps(report, indent=2))
        print(f"wrote {path}")
    if tp > 1:
        _bounded(dist.destroy_process_group, "destroying the process group", timeout=5)
    return 0


if __name__ == "__main__":
    from megagen.cli import run
    code = run(main, "python -m megagen.bench_tp")
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # the report is written and the world torn down (bounded): skip exit hooks that could hang
