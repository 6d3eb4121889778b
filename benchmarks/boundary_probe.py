"""What a layer boundary of the GEMV chain costs at best: a hand-written persistent kernel (GPU only).

    python benchmarks/boundary_probe.py [BN,BK,WARPS,CTAS ...] [--out FILE]

Not megagen: one Triton kernel, 8 dependent 4096x4096 bf16 GEMVs, tile t of every layer on
CTA t % CTAS, written to bound what megagen's MegaKernel can reach with each way of
synchronising layers. Timed with core_microbench.py's helpers (CUDA-graph replays, medians of 200).

  mode 0  counters, megagen's pattern: store, CTA barrier, fence.acq_rel, relaxed increment;
          the next layer's tiles poll with acquire reads
  mode 1  no synchronisation at all (wrong results on purpose: the streaming bound)
  mode 2  data-carried flags: every output is bf16 bits | launch tag << 16 in one int32 store,
          and the consumer spins on each x block inside its tile loop
  mode 3  data-carried flags, the whole x vector checked before the tile
  epoch 0 launch number read with an acquire RMW at start, release RMW at the end (megagen);
        1 one relaxed RMW at start; 2 none (the trivial-kernel rows only)
"""
from __future__ import annotations

import argparse
import datetime
import json
import sys

import torch
import triton
import triton.language as tl

from core_microbench import cuda_graph, time_ms  # benchmarks/ is on sys.path when run as a script
from megagen.scoreboard.device import _fence_acq_rel

MAX_SPINS = tl.constexpr(1 << 20)  # bounded polls: a lost dependency ends the kernel, counted in control[1]


def time_us(fn) -> dict:
    t = time_ms(cuda_graph(fn))
    return dict(median_us=round(t["median_ms"] * 1e3, 2), min_us=round(t["min_ms"] * 1e3, 2))


@triton.jit
def _epoch_begin(control, EPOCH: tl.constexpr, GRID: tl.constexpr):
    if EPOCH == 0:
        return tl.atomic_add(control, 0, sem="acquire", scope="gpu") // GRID + 1
    elif EPOCH == 1:
        return tl.atomic_add(control, 1, sem="relaxed", scope="gpu") // GRID + 1
    else:
        return tl.load(control) * 0 + 1


@triton.jit
def _epoch_end(control, EPOCH: tl.constexpr):
    if EPOCH == 0:
        tl.debug_barrier()
        tl.atomic_add(control, 1, sem="release", scope="gpu")


@triton.jit
def trivial_kernel(control, out, EPOCH: tl.constexpr, GRID: tl.constexpr):
    tl.store(out + tl.program_id(0), _epoch_begin(control, EPOCH, GRID))
    _epoch_end(control, EPOCH)


@triton.jit
def _weights(w, rows, k0, K: tl.constexpr, BK: tl.constexpr):
    cols = k0 + tl.arange(0, BK)
    return tl.load(w + rows[:, None] * K + cols[None, :], eviction_policy="evict_first")


@triton.jit
def _poll_tags(xp, cols, tag, control):
    """Reload x[cols] until every element carries this launch's tag (bounded; a give-up is counted)."""
    v = tl.load(xp + cols, volatile=True)
    bad = tl.sum(((v >> 16) != tag).to(tl.int32), axis=0)
    spins = 0
    while (bad > 0) & (spins < MAX_SPINS):
        v = tl.load(xp + cols, volatile=True)
        bad = tl.sum(((v >> 16) != tag).to(tl.int32), axis=0)
        spins += 1
    if bad > 0:
        tl.atomic_add(control + 1, 1, sem="relaxed", scope="gpu")
    return v


@triton.constexpr_function
def _xmode(layer, mode):
    """How layer ``layer`` reads x in ``mode``: plain bf16 (0), tagged and checked (1), checked per block (2)."""
    return 0 if layer == 0 or mode <= 1 else (2 if mode == 2 else 1)


@triton.jit
def _x_block(xp, k0, tag, control, XMODE: tl.constexpr, BK: tl.constexpr):
    """x[k0:k0+BK] in fp32: plain bf16 (0), tagged and already checked (1), tagged and checked here (2)."""
    cols = k0 + tl.arange(0, BK)
    if XMODE == 0:
        return tl.load(xp + cols).to(tl.float32)
    elif XMODE == 1:
        v = tl.load(xp + cols, cache_modifier=".cg")
        return (v & 0xFFFF).to(tl.int16).to(tl.bfloat16, bitcast=True).to(tl.float32)
    else:
        v = _poll_tags(xp, cols, tag, control)
        return (v & 0xFFFF).to(tl.int16).to(tl.bfloat16, bitcast=True).to(tl.float32)


@triton.jit
def chain_kernel(w, x0, y_bf16, y_tagged, counters, control, N: tl.constexpr, LAYERS: tl.constexpr,
                 BN: tl.constexpr, BK: tl.constexpr, GRID: tl.constexpr, MODE: tl.constexpr, EPOCH: tl.constexpr):
    cta = tl.program_id(0)
    epoch = _epoch_begin(control, EPOCH, GRID)
    tag = (epoch - 1) % 0x7FFF + 1
    TILES: tl.constexpr = N // BN
    for layer in tl.static_range(LAYERS):
        wl = w + layer * N * N
        if layer == 0:
            xp = x0
        elif MODE <= 1:
            xp = y_bf16 + (layer - 1) * N
        else:
            xp = y_tagged + (layer - 1) * N
        for t in range(cta, TILES, GRID):
            rows = t * BN + tl.arange(0, BN)
            wk = _weights(wl, rows, 0, N, BK)  # before the wait, as megagen's prefetch
            if layer > 0:
                if MODE == 0:
                    seen = tl.atomic_add(counters + layer - 1, 0, sem="acquire", scope="gpu")
                    spins = 0
                    while (seen < TILES * epoch) & (spins < MAX_SPINS):
                        seen = tl.atomic_add(counters + layer - 1, 0, sem="acquire", scope="gpu")
                        spins += 1
                    if seen < TILES * epoch:
                        tl.atomic_add(control + 1, 1, sem="relaxed", scope="gpu")
                    tl.debug_barrier()
                elif MODE == 3:
                    _poll_tags(xp, tl.arange(0, N), tag, control)
            acc = tl.zeros((BN, BK), dtype=tl.float32)
            for j in range(1, N // BK):
                w_next = _weights(wl, rows, j * BK, N, BK)
                acc += wk.to(tl.float32) * _x_block(xp, (j - 1) * BK, tag, control, _xmode(layer, MODE), BK)[None, :]
                wk = w_next
            acc += wk.to(tl.float32) * _x_block(xp, N - BK, tag, control, _xmode(layer, MODE), BK)[None, :]
            out = tl.sum(acc, axis=1)
            if MODE <= 1:
                tl.store(y_bf16 + layer * N + rows, out.to(tl.bfloat16))
            else:
                bits = out.to(tl.bfloat16).to(tl.int16, bitcast=True).to(tl.int32) & 0xFFFF
                tl.store(y_tagged + layer * N + rows, bits | (tag << 16))
            if MODE == 0:
                tl.debug_barrier()
                _fence_acq_rel("gpu")  # megagen's release fence
                tl.atomic_add(counters + layer, 1, sem="relaxed", scope="gpu")
    _epoch_end(control, EPOCH)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("configs", nargs="*", metavar="BN,BK,WARPS,CTAS", help="default: 16,512,4,2xSMs")
    ap.add_argument("--out", default="boundary_probe.json")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("boundary_probe needs a CUDA GPU")
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    report = dict(gpu=torch.cuda.get_device_name(), date=datetime.date.today().isoformat(),
                  command="python " + " ".join(sys.argv), rows={})
    for grid in (sms, 2 * sms):
        for epoch in (0, 1, 2):
            control = torch.zeros(4, dtype=torch.int64, device="cuda")
            out = torch.zeros(grid, dtype=torch.int64, device="cuda")
            t = time_us(lambda: trivial_kernel[(grid,)](control, out, EPOCH=epoch, GRID=grid))
            report["rows"][f"trivial_ctas{grid}_epoch{epoch}"] = t
            print(f"trivial kernel, {grid} CTAs, epoch {epoch}: {t}", flush=True)
    n, layers = 4096, 8
    torch.manual_seed(0)
    w = (torch.randn(layers, n, n, device="cuda") / n ** 0.5).to(torch.bfloat16)
    x0 = torch.randn(n, device="cuda").to(torch.bfloat16)
    ref = x0.float()
    for i in range(layers):
        ref = w[i].float() @ ref
    configs = [tuple(int(v) for v in c.split(",")) for c in args.configs] or [(16, 512, 4, 2 * sms)]
    for bn, bk, warps, grid in configs:
        for mode in (0, 1, 2, 3):
            for epoch in ((0, 1) if mode in (0, 2) else (0,)):
                control = torch.zeros(4, dtype=torch.int64, device="cuda")
                counters = torch.zeros(layers, dtype=torch.int64, device="cuda")
                y_bf16 = torch.zeros(layers, n, dtype=torch.bfloat16, device="cuda")
                y_tagged = torch.zeros(layers, n, dtype=torch.int32, device="cuda")

                def launch():
                    chain_kernel[(grid,)](w, x0, y_bf16, y_tagged, counters, control, N=n, LAYERS=layers, BN=bn,
                                          BK=bk, GRID=grid, MODE=mode, EPOCH=epoch, num_warps=warps)
                launch()
                torch.cuda.synchronize()
                y = y_bf16[-1].float() if mode <= 1 else (y_tagged[-1] & 0xFFFF).to(torch.int16).view(
                    torch.bfloat16).float()
                row = time_us(launch)
                row.update(rel_err=round(float((y - ref).norm() / ref.norm()), 5), gave_up=int(control[1]))
                key = f"chain_{bn}x{bk}_{warps}warps_{grid}ctas_mode{mode}_epoch{epoch}"
                report["rows"][key] = row
                print(key, row, flush=True)
    with open(args.out, "w") as f:
        json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
