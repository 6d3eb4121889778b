"""What a dependent chain of CTA-wide reductions costs in one CTA of 4 warps (H100): the unit cost of a
sort-free sampler (radix selection) against bitonic networks. Prints ns per step."""
import json
import os
import sys

import torch
import triton
import triton.language as tl


@triton.jit
def _now():
    return tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64, is_pure=False, pack=1)


@triton.jit
def chain_sum(x_ptr, out, t_ptr, STEPS: tl.constexpr, SIZE: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, SIZE))
    t = tl.load(t_ptr)
    start = _now()
    for i in range(STEPS):
        c = tl.sum((x > t).to(tl.int32), axis=0)
        t = t + (c & 1)
    end = _now()
    tl.store(out + tl.program_id(0) * 2, end - start)
    tl.store(out + tl.program_id(0) * 2 + 1, t.to(tl.int64))


@triton.jit
def _add3(a0, a1, a2, b0, b1, b2):
    return a0 + b0, a1 + b1, a2 + b2


@triton.jit
def chain_radix(x_ptr, out, t_ptr, STEPS: tl.constexpr, SIZE: tl.constexpr):
    """Radix-4 steps: three counts a step in one tuple reduction."""
    x = tl.load(x_ptr + tl.arange(0, SIZE))
    t = tl.load(t_ptr)
    start = _now()
    for i in range(STEPS):
        c0, c1, c2 = tl.reduce(((x > t).to(tl.int32), (x > t + 1).to(tl.int32), (x > t + 2).to(tl.int32)), 0, _add3)
        t = t + ((c0 + c1 + c2) & 3)
    end = _now()
    tl.store(out + tl.program_id(0) * 2, end - start)
    tl.store(out + tl.program_id(0) * 2 + 1, t.to(tl.int64))


@triton.jit
def chain_max64(x_ptr, out, t_ptr, STEPS: tl.constexpr, SIZE: tl.constexpr):
    """Max-and-remove rounds over int64 keys (a block's sorted top-STEPS)."""
    x = tl.load(x_ptr + tl.arange(0, SIZE)).to(tl.int64) << 20
    start = _now()
    acc = tl.zeros((), tl.int64)
    for i in range(STEPS):
        m = tl.max(x, axis=0)
        x = tl.where(x == m, -(2 ** 62), x)
        acc += m
    end = _now()
    tl.store(out + tl.program_id(0) * 2, end - start)
    tl.store(out + tl.program_id(0) * 2 + 1, acc)


@triton.jit
def chain_max32(x_ptr, out, t_ptr, STEPS: tl.constexpr, SIZE: tl.constexpr):
    """Max-and-remove rounds over float32 values with the index (tl.max return_indices)."""
    x = tl.load(x_ptr + tl.arange(0, SIZE)).to(tl.float32)
    i0 = tl.arange(0, SIZE)
    start = _now()
    acc = tl.zeros((), tl.int32)
    for i in range(STEPS):
        m, w = tl.max(x, axis=0, return_indices=True)
        x = tl.where(i0 == w, float("-inf"), x)
        acc += w
    end = _now()
    tl.store(out + tl.program_id(0) * 2, end - start)
    tl.store(out + tl.program_id(0) * 2 + 1, acc.to(tl.int64))


@triton.jit
def chain_cumsum(x_ptr, out, t_ptr, STEPS: tl.constexpr, SIZE: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, SIZE))
    t = tl.load(t_ptr)
    start = _now()
    for i in range(STEPS):
        c = tl.cumsum((x > t).to(tl.int32), axis=0)
        t = t + (tl.max(c, axis=0) & 1)
    end = _now()
    tl.store(out + tl.program_id(0) * 2, end - start)
    tl.store(out + tl.program_id(0) * 2 + 1, t.to(tl.int64))


@triton.jit
def pairwise(x_ptr, out, t_ptr, STEPS: tl.constexpr, SIZE: tl.constexpr):
    """Rank of each of SIZE keys among them by counting ([SIZE, SIZE] comparisons), STEPS times."""
    x = tl.load(x_ptr + tl.arange(0, SIZE))
    t = tl.load(t_ptr)
    start = _now()
    for i in range(STEPS):
        rank = tl.sum((x[None, :] > x[:, None] + t).to(tl.int32), axis=1)
        t = t + (tl.max(rank, axis=0) & 1)
    end = _now()
    tl.store(out + tl.program_id(0) * 2, end - start)
    tl.store(out + tl.program_id(0) * 2 + 1, t.to(tl.int64))


def main():
    res = {}
    x = torch.randint(0, 1 << 30, (8192,), dtype=torch.int32, device="cuda")
    t = torch.zeros(1, dtype=torch.int32, device="cuda")
    out = torch.zeros(264 * 2, dtype=torch.int64, device="cuda")
    cases = [(chain_sum, s) for s in (256, 1024, 2048, 4096)] + [(chain_radix, s) for s in (256, 2048)] + \
        [(chain_max64, s) for s in (1024,)] + [(chain_max32, s) for s in (1024,)] + \
        [(chain_cumsum, s) for s in (1024, 2048)] + [(pairwise, s) for s in (64, 128)]
    for kern, size in cases:
        for grid in (1, 264):
            per = []
            for steps in (8, 72):
                for _ in range(3):
                    kern[(grid,)](x, out, t, STEPS=steps, SIZE=size, num_warps=4)
                torch.cuda.synchronize()
                per.append(float(out[0::2][:grid].float().median()))
            ns = (per[1] - per[0]) / 64
            key = f"{kern.fn.__name__}[{size}] grid={grid}"
            res[key] = ns
            print(f"{key:40s} {ns:8.1f} ns a step", flush=True)
    json.dump(res, open(os.path.join(os.environ.get("OUT", "."), "redbench.json"), "w"), indent=1)


if __name__ == "__main__":
    sys.exit(main())
