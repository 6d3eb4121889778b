"""Does a CTA's dependency poll wait for its own outstanding weight loads?

    python benchmarks/poll_probe.py [--out poll_probe.json]

A MegaKernel tile loads its first weight block before it polls its dependency ("load now, wait later").
Profiles show tiles whose dependency was already met when they started taking 2-3 us from start to
"wait done", against under 1 us for a poll alone. This probe times, in every one of 264 CTAs (two an SM,
4 warps), a 16 KB weight-block load (one MegaKernel GEMV block, from HBM) and one acquire poll of a counter
that is already satisfied, in several orders and flavours, with the global timer:

- ``poll``: the poll alone;
- ``load_then_poll``: the block's loads issued, then the poll (what a MegaKernel tile does today);
- ``load_cg_then_poll``: the same with loads that bypass L1 (``.cg``);
- ``load_then_relaxed_poll``: the same with a relaxed poll (no acquire, so no L1 invalidation);
- ``poll_then_load``: the poll first, the loads issued once it has returned.

Each row reports, in ns (median over CTAs and repeats), when the poll's value was in registers and when
the block's data was, measured from the first instruction.
"""
import argparse
import json
import statistics

import torch
import triton
import triton.language as tl

MODES = ("poll", "load_then_poll", "load_cg_then_poll", "load_then_relaxed_poll", "poll_then_load")
ROWS, COLS = 16, 512  # one batch-1 GEMV weight block of bf16: 16 KB


@triton.jit
def _now_after(dep):
    """The global timer, read once ``dep`` is in registers (the asm takes it as an operand)."""
    return tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l,l", [dep], dtype=tl.int64, is_pure=False,
                                     pack=1)


@triton.jit
def _block(w, base, CG: tl.constexpr):
    offs = base + tl.arange(0, 16)[:, None] * 512 + tl.arange(0, 512)[None, :]
    if CG:
        return tl.load(w + offs, cache_modifier=".cg")
    return tl.load(w + offs, eviction_policy="evict_first")


@triton.jit
def probe_kernel(counter, w, out, STRIDE: tl.constexpr, MODE: tl.constexpr):
    pid = tl.program_id(0)
    base = pid.to(tl.int64) * STRIDE
    t0 = _now_after(pid.to(tl.int64))
    if MODE == "poll":
        seen = tl.atomic_add(counter, 0, sem="acquire", scope="gpu")
        t_poll = _now_after(seen)
        t_data = t_poll
        total = seen.to(tl.float32)
    elif MODE == "poll_then_load":
        seen = tl.atomic_add(counter, 0, sem="acquire", scope="gpu")
        t_poll = _now_after(seen)
        blk = _block(w, base + seen * 0, False)  # issued after the poll returned
        total = tl.sum(tl.sum(blk.to(tl.float32), axis=1), axis=0)
        t_data = _now_after(total.to(tl.int64))
    else:
        blk = _block(w, base, MODE == "load_cg_then_poll")
        if MODE == "load_then_relaxed_poll":
            seen = tl.atomic_add(counter, 0, sem="relaxed", scope="gpu")
        else:
            seen = tl.atomic_add(counter, 0, sem="acquire", scope="gpu")
        t_poll = _now_after(seen)
        total = tl.sum(tl.sum(blk.to(tl.float32), axis=1), axis=0) + seen.to(tl.float32)
        t_data = _now_after(total.to(tl.int64))
    tl.store(out + pid * 3, t_poll - t0)
    tl.store(out + pid * 3 + 1, t_data - t0)
    tl.store(out + pid * 3 + 2, total.to(tl.int64))


def run(mode: str, ctas: int, repeats: int) -> dict:
    stride = ROWS * COLS
    # a fresh slice of a 512 MB array each repeat, so every block comes from HBM, not L2
    slices = max(1, (256 << 20) // (ctas * stride))
    w = torch.randn(slices * ctas * stride, device="cuda", dtype=torch.bfloat16)
    counter = torch.ones(1, dtype=torch.int64, device="cuda")
    out = torch.zeros(ctas, 3, dtype=torch.int64, device="cuda")
    polls, datas = [], []
    for r in range(repeats + 3):
        view = w[(r % slices) * ctas * stride:]
        probe_kernel[(ctas,)](counter, view, out, STRIDE=stride, MODE=mode, num_warps=4)
        torch.cuda.synchronize()
        if r >= 3:
            polls += out[:, 0].tolist()
            datas += out[:, 1].tolist()
    return dict(mode=mode, poll_ns=statistics.median(polls), data_ns=statistics.median(datas),
                poll_p90_ns=sorted(polls)[int(0.9 * len(polls))], data_p90_ns=sorted(datas)[int(0.9 * len(datas))])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ctas", type=int, default=264)
    ap.add_argument("--repeats", type=int, default=50)
    ap.add_argument("--out", default="poll_probe.json")
    args = ap.parse_args()
    rows = [run(m, args.ctas, args.repeats) for m in MODES]
    info = dict(gpu=torch.cuda.get_device_name(), ctas=args.ctas, repeats=args.repeats, rows=rows)
    with open(args.out, "w") as f:
        json.dump(info, f, indent=1)
    print(info["gpu"])
    for r in rows:
        print(f"{r['mode']:24s} poll value in registers {r['poll_ns']:6.0f} ns (p90 {r['poll_p90_ns']:6.0f})   "
              f"block in registers {r['data_ns']:6.0f} ns (p90 {r['data_p90_ns']:6.0f})")


if __name__ == "__main__":
    main()
