"""Attribute the GEMV-chain MegaKernel's time by leaving one cost out at a time (GPU only).

    python benchmarks/diagnose_gemv_chain.py [--splits 1 4]

Each variant swaps one scoreboard device function before the MegaKernel is generated
and is timed in its own process. The variants that skip synchronisation compute wrong
results on purpose: they bound what that synchronisation costs, nothing more.
  baseline      the real kernel
  relaxed       release_tile without its fence
  no_wait       wait_deps returns at once
  no_sync       both of the above
  no_compute    tiles do nothing (dispatch, wait and release only)
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys

import triton
import triton.language as tl

import megagen
from megagen.scoreboard import device as sb

VARIANTS = ("baseline", "relaxed", "no_wait", "no_sync", "no_compute")


@triton.jit
def release_relaxed(counters, task, op_counter, group_counter, SCOPE: tl.constexpr, FENCE: tl.constexpr):
    tl.debug_barrier()
    tl.atomic_add(counters + op_counter, 1, sem="relaxed", scope=SCOPE)
    tl.atomic_add(counters + task, 1, sem="relaxed", scope=SCOPE)
    if group_counter >= 0:
        tl.atomic_add(counters + group_counter, 1, sem="relaxed", scope=SCOPE)


@triton.jit
def wait_nothing(deps, counters, control, dep0, dep_begin, dep_end, epoch, task, cta,
                 SCOPE: tl.constexpr, DEP_BLOCK: tl.constexpr, MAX_SPINS: tl.constexpr):
    return dep_begin * 0 + 1


@triton.jit
def gemv_nothing(w, x, y, tile, N, prefetched, K: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                 ROW_TILES: tl.constexpr, CHUNK: tl.constexpr, X_PARTS: tl.constexpr):
    pass


def apply_variant(variant: str):
    """Swap in the variant's device functions; call before any MegaKernel is generated."""
    if variant in ("relaxed", "no_sync"):
        sb.release_tile = release_relaxed
    if variant in ("no_wait", "no_sync"):
        sb.wait_deps = wait_nothing
    if variant == "no_compute":
        megagen.tasks.gemv.fn = gemv_nothing


def chain(split: int, block_n: int, device, n: int = 4096, layers: int = 8):
    import torch
    torch.manual_seed(0)
    ws = [(torch.randn(n, n, device=device) / n ** 0.5).to(torch.bfloat16) for _ in range(layers)]
    x0 = torch.randn(n, device=device).to(torch.bfloat16)
    shape, dtype = ((n,), torch.bfloat16) if split == 1 else ((split, n), torch.float32)
    xs = [x0] + [torch.empty(shape, device=device, dtype=dtype) for _ in range(layers)]
    g = megagen.TaskGraph("gemv_chain", inputs=[x0, *ws])
    for i in range(layers):
        g.add(megagen.tasks.gemv, w=ws[i], x=xs[i], y=xs[i + 1], BLOCK_N=block_n, BLOCK_K=512)
    return g


def run_variant(variant: str, split: int, block_n: int, num_warps: int) -> dict:
    apply_variant(variant)
    sys.path.insert(0, "benchmarks")
    from core_microbench import cuda_graph, time_ms
    mk = chain(split, block_n, "cuda").compile("round_robin", num_warps=num_warps)
    mk.run()
    t = time_ms(cuda_graph(lambda: mk.run(check=False)))
    return dict(variant=variant, split=split, us=round(t["median_ms"] * 1e3, 1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--splits", type=int, nargs="*", default=[1, 4])
    ap.add_argument("--one", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(run_variant(args.one[0], int(args.one[1]), 32, 8)))
        return
    rows = []
    for split in args.splits:
        for variant in VARIANTS:
            out = subprocess.run([sys.executable, __file__, "--one", variant, str(split)], capture_output=True,
                                 text=True, timeout=300)
            line = out.stdout.strip().splitlines()[-1] if out.returncode == 0 else f"failed: {out.stderr[-500:]}"
            print(line, flush=True)
            rows.append(line)


if __name__ == "__main__":
    main()
