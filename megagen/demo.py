"""The main job: build a small task graph, compile it into one MegaKernel per scheduler, run it, check it.

    python -m megagen.demo

Without a CUDA GPU it runs in Triton's CPU interpreter (a small graph, float32);
on a GPU it uses a larger bf16 graph and also times the MegaKernel.
"""
from __future__ import annotations

import argparse
import time

import torch

import megagen
from megagen.backend import default_device, interpreting
from megagen.tasks import add, gemv


def build(n: int, layers: int, dtype: torch.dtype, device):
    """A residual GEMV stack: h = h + W_i h, the dependency shape of a decoder's layers."""
    torch.manual_seed(0)
    ws = [(torch.randn(n, n, device=device) / n ** 0.5).to(dtype) for _ in range(layers)]
    h = [torch.randn(n, device=device).to(dtype)] + [torch.empty(n, device=device, dtype=dtype) for _ in range(layers)]
    tmp = torch.empty(n, device=device, dtype=dtype)
    g = megagen.TaskGraph("residual_gemv_stack", inputs=[h[0], *ws])
    for i in range(layers):
        g.add(gemv, name=f"proj_{i}", w=ws[i], x=h[i], y=tmp, BLOCK_N=16, BLOCK_K=64 if n <= 256 else 512)
        g.add(add, name=f"residual_{i}", x=h[i], y=tmp, out=h[i + 1], BLOCK=64 if n <= 256 else 1024)
    ref = h[0].float()
    for w in ws:
        ref = ref + (w.float() @ ref.to(dtype).float()).to(dtype).float()
        ref = ref.to(dtype).float()
    return g, h, ref


def main():
    ap = argparse.ArgumentParser(description="Build and run a MegaKernel")
    ap.add_argument("--show-source", action="store_true", help="print the whole generated MegaKernel source")
    args = ap.parse_args()
    device = default_device()
    small = interpreting()
    n, layers, dtype = (128, 3, torch.float32) if small else (4096, 8, torch.bfloat16)
    print(f"megagen {megagen.__version__}: {'Triton interpreter on the CPU' if small else torch.cuda.get_device_name()}")
    g, h, ref = build(n, layers, dtype, device)
    dag = g.dependencies
    print(f"graph: {len(g.ops)} ops, {dag.num_tasks} tiles, {dag.num_edges} tile dependencies")
    for scheduler in ("round_robin", "zigzag", "work_queue"):
        t0 = time.perf_counter()
        mk = g.compile(scheduler)
        h[-1].fill_(float("nan"))
        mk.run()
        mk.run()  # a second launch: counters advance by epoch, nothing is reset
        elapsed = time.perf_counter() - t0
        err = float((h[-1].float() - ref).norm() / ref.norm())
        line = (f"{scheduler:>11}: {mk.num_ctas} CTAs, relative error vs torch {err:.1e}, "
                f"simulated {mk.simulation.summary()}, build+2 runs {elapsed:.1f} s")
        if not small:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(100):
                mk.run(check=False)
            end.record()
            torch.cuda.synchronize()
            mk.check()
            line += f", {start.elapsed_time(end) / 100 * 1e3:.1f} us per launch"
        print(line)
        tolerance = 1e-4 if dtype == torch.float32 else 2e-2
        if not err < tolerance:
            raise SystemExit(f"{scheduler}: result differs from torch (relative error {err:.2e})")
    print(f"generated source: {mk.source_path}")
    src = mk.source.splitlines()
    print("\n".join(src if args.show_source else src[:12] + ["..."]))


if __name__ == "__main__":
    main()
