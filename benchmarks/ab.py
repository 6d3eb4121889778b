"""A/B timing of megagen builds on one machine: trees and build options, alternating, medians of rounds.

    python benchmarks/ab.py --model Qwen3-0.6B [--batch 1] [--rounds 3] [--passes 2] [--steps 200] [--sample]
        [--layers N] VARIANT ...

A VARIANT is ``name``, ``name:key=value,key=value`` (megagen.build options, ``scheduler`` among them, round_robin
by default; and ``sample=True`` or ``False``, which overrides ``--sample`` for that variant) or ``name=TREE[:options]``, TREE a
directory holding another ``megagen/`` package, e.g. main's, made with
``mkdir -p /tmp/main && git archive main megagen | tar -x -C /tmp/main``. Variants of one tree share a process:
each is built once, then timed in alternating rounds (``--steps`` CUDA-graph replays a round, the median of each).
Trees need processes of their own, so each pass runs one process a tree, alternating; ``--passes`` repeats
that; ``--sample`` times the sampling step instead of the greedy one; ``--layers N`` keeps the model's first N
layers (real shapes: a model too large for the GPU, e.g. Qwen3-30B-A3B's first 8). Every line names the ``megagen``
it imported. On a machine without a GPU it checks the plumbing in Triton's interpreter (a tiny model, one short
round), claiming no timings.
"""
from __future__ import annotations

import argparse
import ast
import json
import os
import statistics
import subprocess
import sys
import time


def parse_variant(spec: str) -> tuple[str, str | None, dict]:
    """``name[=TREE][:k=v,...]`` as (name, tree or None, build options)."""
    head, _, opts = spec.partition(":")
    name, _, tree = head.partition("=")
    options = {}
    for pair in filter(None, opts.split(",")):
        key, _, value = pair.partition("=")
        try:
            options[key] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            options[key] = value
    if not name.isidentifier():
        raise SystemExit(f"ab.py: a variant's name must be an identifier, got {name!r} in {spec!r}")
    if tree and not os.path.isdir(os.path.join(tree, "megagen")):
        raise SystemExit(f"ab.py: {tree!r} holds no megagen/ package (variant {name!r})")
    return name, tree or None, options


def worker(args) -> None:
    """Time this process's variants (all of one tree), one JSON line of round medians each."""
    import torch

    import megagen
    from megagen import models
    from megagen.bench import measure, megagen_step
    cuda = torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET", "0") == "0"
    dev = torch.device("cuda" if cuda else "cpu")
    name = args.model if cuda else "tiny-qwen3"
    model = models.load(name, dtype=torch.bfloat16 if cuda else torch.float32, device=dev,
                        **({"num_hidden_layers": args.layers} if args.layers else {}))
    torch.manual_seed(0)
    prompt = torch.randint(3, model.config.vocab_size, (args.batch, args.context if cuda else 8), device=dev)
    rounds, steps, warmup = (args.rounds, args.steps, 20) if cuda else (1, 1, 0)
    built = {}
    with torch.no_grad():
        for spec in args.worker:
            variant, _, options = parse_variant(spec)
            t0 = time.perf_counter()
            sample = options.pop("sample", args.sample)
            scheduler = options.pop("scheduler", "round_robin")
            step, before, kernel, info = megagen_step(model, prompt, scheduler, options, sample)
            built[variant] = (step, before, kernel)
            print(f"# {variant}: megagen from {os.path.dirname(megagen.__file__)}, options {options}, built in "
                  f"{time.perf_counter() - t0:.0f} s, {info['tasks']} tasks", file=sys.stderr, flush=True)
        medians = {v: [] for v in built}
        for _ in range(rounds):
            for variant, (step, before, kernel) in built.items():
                medians[variant].append(statistics.median(measure(step, steps, warmup, before, cuda=cuda)))
        for variant, (_, _, kernel) in built.items():
            kernel.check()
            print(json.dumps({"variant": variant, "model": name, "rounds_ms": medians[variant], "timed": cuda}),
                  flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("variants", nargs="*", metavar="VARIANT")
    ap.add_argument("--model", default="Qwen3-0.6B")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--context", type=int, default=512)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--passes", type=int, default=1)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--sample", action="store_true", help="time the sampling step (megagen bench --sample's settings)")
    ap.add_argument("--layers", type=int, default=None, help="keep only the model's first N layers (real shapes)")
    ap.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)  # the variants of one tree, in a child process
    args = ap.parse_args()
    if args.worker:
        worker(args)
        return 0
    if not args.variants:
        ap.error("name at least one VARIANT")
    variants = [parse_variant(v) for v in args.variants]
    if len({name for name, _, _ in variants}) != len(variants):
        raise SystemExit("ab.py: variant names must differ")
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # a variant without TREE: this checkout's
    trees: dict[str, list[str]] = {}
    for spec, (_, tree, _) in zip(args.variants, variants):
        trees.setdefault(os.path.abspath(tree or here), []).append(spec)
    results: dict[str, list[float]] = {name: [] for name, _, _ in variants}
    timed = True
    for _ in range(args.passes):
        for tree, specs in trees.items():
            env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [tree, os.environ.get("PYTHONPATH")])))
            # run as a script (not -m from the repository root), so the working tree's megagen does not shadow TREE's
            cmd = [sys.executable, os.path.abspath(__file__), "--worker", *specs, "--model", args.model,
                   "--batch", str(args.batch), "--context", str(args.context), "--rounds", str(args.rounds),
                   "--steps", str(args.steps)] + (["--sample"] if args.sample else []) + (
                       ["--layers", str(args.layers)] if args.layers else [])
            out = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, text=True, check=True).stdout
            for line in filter(lambda line: line.startswith("{"), out.splitlines()):  # the worker's results
                r = json.loads(line)
                results[r["variant"]] += r["rounds_ms"]
                timed &= r["timed"]
                rounds = " ".join(f"{m:.4f}" for m in r["rounds_ms"]) if r["timed"] else "(interpreter: not timed)"
                model = f"{r['model']} ({args.layers} layers)" if args.layers else r["model"]
                print(f"{model} b{args.batch}{' sampling' if args.sample else ''} {r['variant']}: rounds {rounds}",
                      flush=True)
    print(f"\n| variant | median of {len(next(iter(results.values())))} round medians, ms |\n|---|---|")
    for name, ms in results.items():
        print(f"| {name} | {statistics.median(ms):.4f} |" if timed else f"| {name} | (no GPU: not timed) |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
