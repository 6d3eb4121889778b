"""Core microbenchmarks on one GPU: per-task overhead, one dependency hop, and an 8-GEMV chain.

    python benchmarks/core_microbench.py --out benchmarks/results/core_microbench.json

The GEMV chain (8 dependent 4096x4096 bf16 GEMVs, random weights and input) runs as
one MegaKernel, as the same tile kernels launched op by op under a CUDA graph, and
as torch.matmul under a CUDA graph. Every figure is a median of CUDA-event timings
after warm-up; the floor is the weight bytes over the copy bandwidth measured here.
"""
from __future__ import annotations

import argparse
import datetime
import json
import platform
import statistics
import sys

import numpy as np
import torch
import triton
import triton.language as tl

import megagen
from megagen.tasks import gemv


# ---- timing -----------------------------------------------------------------------------------
def time_ms(fn, iters: int = 200, warmup: int = 20) -> dict:
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    for s, e in zip(starts, ends):
        s.record()
        fn()
        e.record()
    torch.cuda.synchronize()
    t = [s.elapsed_time(e) for s, e in zip(starts, ends)]
    return dict(median_ms=statistics.median(t), min_ms=min(t), max_ms=max(t), runs=iters)


def cuda_graph(fn):
    """Capture fn (already warmed up) into a CUDA graph; returns its replay."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    torch.cuda.synchronize()
    return g.replay


def copy_bandwidth() -> float:
    """Device-to-device copy bandwidth in bytes/s, counting bytes read plus written."""
    n = 1 << 30
    a = torch.randint(0, 255, (n,), dtype=torch.uint8, device="cuda")
    b = torch.empty_like(a)
    r = time_ms(lambda: b.copy_(a), iters=50, warmup=5)
    return 2 * n / (r["median_ms"] * 1e-3)


# ---- tasks only this benchmark needs, registered through the public API ----------------------
@triton.jit
def bump_tile(x, y, tile):
    tl.store(y + tile, tl.load(x + tile) + 1)


def _bump_plan(x, y):
    t = megagen.tile_arange(x.numel())
    return megagen.TilePlan(t.size, reads={"x": ((t, 1),)}, writes={"y": ((t, 1),)})


bump = megagen.register_task("bump", bump_tile, inputs=("x",), outputs=("y",), plan=_bump_plan)


class Fixed(megagen.Scheduler):
    """Place task i on CTA cta_of(i) (for the hop benchmark)."""

    name = "fixed"

    def __init__(self, cta_of):
        self.cta_of = cta_of

    def assign(self, dag, num_ctas):
        i = np.arange(dag.num_tasks)
        cta = self.cta_of(i) % num_ctas
        return megagen.StaticSchedule([i[cta == c] for c in range(num_ctas)], self.name)


def bump_chain(ops: int, width: int):
    bufs = [torch.randint(0, 1000, (width,), dtype=torch.int32, device="cuda") for _ in range(ops + 1)]
    g = megagen.TaskGraph(f"bump_{ops}x{width}", inputs=[bufs[0]])
    for i in range(ops):
        g.add(bump, x=bufs[i], y=bufs[i + 1])
    return g, bufs


def task_overhead(sms: int) -> dict:
    """Per-task cost: (time with P tasks per CTA - time with 1) / (P - 1), with and without a dependency."""
    out = {}
    for label in ("independent", "one_dep_same_cta"):
        times = {}
        for p in (1, 65):
            if label == "independent":
                x = torch.randint(0, 1000, (sms * p,), dtype=torch.int32, device="cuda")
                y = torch.empty_like(x)
                g = megagen.TaskGraph("independent", inputs=[x])
                g.add(bump, x=x, y=y)
            else:
                g, bufs = bump_chain(p, sms)
            mk = g.compile("round_robin")
            mk.run()
            times[p] = time_ms(cuda_graph(lambda: mk.run(check=False)))["median_ms"]
            mk.check()
        out[label + "_us"] = (times[65] - times[1]) / 64 * 1e3
        out[label + "_launch_1_task_per_cta_us"] = times[1] * 1e3
    return out


def dependency_hop() -> dict:
    """A chain of single-tile ops; alternating between two CTAs versus all on one CTA."""
    ops = 256
    res = {}
    for label, cta_of in (("alternating_2_ctas", lambda i: i % 2), ("same_cta", lambda i: i * 0)):
        g, bufs = bump_chain(ops, 1)
        mk = g.compile(Fixed(cta_of), num_ctas=2)
        mk.run()
        assert torch.equal(bufs[-1], bufs[0] + ops), "bump chain result wrong"
        t = time_ms(cuda_graph(lambda: mk.run(check=False)))["median_ms"]
        mk.check()
        res[label + "_us_per_task"] = t / ops * 1e3
    res["hop_us"] = res["alternating_2_ctas_us_per_task"] - res["same_cta_us_per_task"]
    return res


# ---- the GEMV chain --------------------------------------------------------------------------
# (BLOCK_N, BLOCK_K, num_warps, SPLIT_K, CTAs per SM)
GEMV_CONFIGS = ((32, 512, 8, 1, 1), (32, 1024, 8, 1, 1), (32, 512, 8, 2, 1), (32, 512, 8, 4, 1), (16, 512, 4, 1, 2),
                (16, 512, 4, 4, 2))
CONFIG_KEYS = ("BLOCK_N", "BLOCK_K", "num_warps", "SPLIT_K", "ctas_per_sm")


def gemv_chain(bandwidth: float, sms: int, layers: int = 8, n: int = 4096, configs=GEMV_CONFIGS,
               schedulers=("round_robin", "zigzag", "work_queue")) -> dict:
    """8 dependent GEMVs; SPLIT_K > 1 passes fp32 partial sums [S, n] between layers (see tasks/linear.py)."""
    torch.manual_seed(0)
    ws = [(torch.randn(n, n, device="cuda") / n ** 0.5).to(torch.bfloat16) for _ in range(layers)]
    x0 = torch.randn(n, device="cuda").to(torch.bfloat16)
    ref = x0.float()
    for w in ws:
        ref = w.float() @ ref
    weight_bytes = sum(w.numel() * w.element_size() for w in ws)
    floor_ms = weight_bytes / bandwidth * 1e3
    results = dict(layers=layers, n=n, weight_bytes=weight_bytes, floor_ms=floor_ms, configs=[])

    def build(cfg):
        s = cfg["SPLIT_K"]
        shape, dtype = ((n,), torch.bfloat16) if s == 1 else ((s, n), torch.float32)
        xs = [x0] + [torch.full(shape, float("nan"), device="cuda", dtype=dtype) for _ in range(layers)]
        g = megagen.TaskGraph("gemv_chain", inputs=[x0, *ws])
        for i in range(layers):
            g.add(gemv, w=ws[i], x=xs[i], y=xs[i + 1], BLOCK_N=cfg["BLOCK_N"], BLOCK_K=cfg["BLOCK_K"])
        return g, xs

    def rel_err(out):
        out = out.float().reshape(-1, n).sum(0)
        return float((out - ref).norm() / ref.norm())

    configs = [dict(zip(CONFIG_KEYS, c)) for c in configs]
    for cfg in configs:
        row = dict(cfg)
        g, xs = build(cfg)
        for sched in schedulers:
            mk = g.compile(sched, num_warps=cfg["num_warps"], num_ctas=cfg["ctas_per_sm"] * sms)
            xs[-1].fill_(float("nan"))
            try:
                mk.run()
            except megagen.MegagenError as e:  # e.g. too many CTAs to be co-resident
                row[f"megakernel_{sched}_error"] = str(e)
                continue
            row[f"megakernel_{sched}_rel_err"] = rel_err(xs[-1])
            row[f"megakernel_{sched}"] = time_ms(cuda_graph(lambda: mk.run(check=False)))
            mk.check()
        eager = megagen.OpLaunches(g, num_warps=cfg["num_warps"])
        xs[-1].fill_(float("nan"))
        eager.run()
        row["op_launches_rel_err"] = rel_err(xs[-1])
        row["op_launches_cuda_graph"] = time_ms(cuda_graph(eager.run))
        results["configs"].append(row)
        print(json.dumps({k: (round(v["median_ms"] * 1e3, 1) if isinstance(v, dict) else
                              (float(f"{v:.2g}") if isinstance(v, float) else v)) for k, v in row.items()}),
              flush=True)

    ys = [torch.empty(n, device="cuda", dtype=torch.bfloat16) for _ in range(layers)]

    def torch_chain():
        y = x0
        for w, out in zip(ws, ys):
            y = torch.matmul(w, y, out=out)

    torch_chain()
    results["torch_matmul_rel_err"] = rel_err(ys[-1])
    results["torch_matmul_cuda_graph"] = time_ms(cuda_graph(torch_chain))
    best = min(((r[f"megakernel_{s}"]["median_ms"], i, s) for i, r in enumerate(results["configs"])
                for s in schedulers if f"megakernel_{s}" in r))
    results["best_megakernel"] = dict(ms=best[0], scheduler=best[2],
                                      config={k: results["configs"][best[1]][k] for k in configs[0]})
    best_ops = min(r["op_launches_cuda_graph"]["median_ms"] for r in results["configs"])
    results["best_op_launches_cuda_graph_ms"] = best_ops
    best_graph = min(best_ops, results["torch_matmul_cuda_graph"]["median_ms"])
    results["speedup_vs_best_cuda_graph_chain"] = best_graph / best[0]
    results["megakernel_fraction_of_floor"] = floor_ms / best[0]
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="core_microbench.json")
    ap.add_argument("--skip", nargs="*", default=[], choices=["overhead", "hop", "gemv"])
    ap.add_argument("--gemv-configs", nargs="*", metavar="BN,BK,WARPS,SPLIT,CTAS_PER_SM",
                    help="GEMV-chain configurations to time (default: the committed set)")
    ap.add_argument("--schedulers", nargs="*", default=["round_robin", "zigzag", "work_queue"])
    args = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("core_microbench needs a CUDA GPU (it times kernels); run the tests for CPU checks")
    props = torch.cuda.get_device_properties(0)
    report = dict(gpu=props.name, sms=props.multi_processor_count, date=datetime.date.today().isoformat(),
                  command="python " + " ".join(sys.argv), torch=torch.__version__, triton=triton.__version__,
                  python=platform.python_version())
    report["copy_bandwidth_TBps"] = copy_bandwidth() / 1e12
    print(f"copy bandwidth {report['copy_bandwidth_TBps']:.2f} TB/s", flush=True)
    if "overhead" not in args.skip:
        report["task_overhead"] = task_overhead(props.multi_processor_count)
        print("task overhead", report["task_overhead"], flush=True)
    if "hop" not in args.skip:
        report["dependency_hop"] = dependency_hop()
        print("dependency hop", report["dependency_hop"], flush=True)
    if "gemv" not in args.skip:
        configs = ([tuple(int(v) for v in c.split(",")) for c in args.gemv_configs] if args.gemv_configs
                   else GEMV_CONFIGS)
        report["gemv_chain"] = gemv_chain(report["copy_bandwidth_TBps"] * 1e12, props.multi_processor_count,
                                          configs=configs, schedulers=args.schedulers)
        gc = report["gemv_chain"]
        print(f"GEMV chain: floor {gc['floor_ms'] * 1e3:.1f} us, megakernel {gc['best_megakernel']['ms'] * 1e3:.1f} us ({gc['best_megakernel']}), "
              f"op launches + CUDA graph {gc['best_op_launches_cuda_graph_ms'] * 1e3:.1f} us, torch.matmul + CUDA "
              f"graph {gc['torch_matmul_cuda_graph']['median_ms'] * 1e3:.1f} us, speedup "
              f"{gc['speedup_vs_best_cuda_graph_chain']:.2f}x", flush=True)
    with open(args.out, "w") as f:
        json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
