"""Under torchrun: NVSHMEM starts, and megagen's allreduce tasks run across ranks in one MegaKernel.

    torchrun --nproc-per-node 2 benchmarks/allreduce_probe.py [--out DIR]

For each message size and form (one-shot, two-shot) it builds a graph of one allreduce of random fp32
partial sums, checks every rank's result against torch's sum of all ranks' inputs (gathered with
NCCL), and times the MegaKernel launch (CUDA events, median of 200 after 20 warm-up) beside
torch.distributed.all_reduce (NCCL) of the same message replayed from a CUDA graph. Rank 0 writes
allreduce_probe_tp{N}.json. The first thing it proves is that the world starts and tears down.
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
import torch.distributed as dist

import megagen
from megagen.bench import measure
from megagen.graph import TaskGraph
from megagen.tasks.comm import allreduce_ops
from megagen.world import NvshmemWorld, _bounded


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="allreduce_probe_out")
    ap.add_argument("--sizes", type=int, nargs="+", default=[4096, 65536, 1 << 20], help="fp32 elements per rank")
    args = ap.parse_args()
    local = int(os.environ["LOCAL_RANK"])
    device = torch.device("cuda", local)
    torch.cuda.set_device(device)
    dist.init_process_group("nccl", device_id=device)
    tp, rank = dist.get_world_size(), dist.get_rank()
    t0 = time.perf_counter()
    world = NvshmemWorld(tp)
    report = {"tp": tp, "device": torch.cuda.get_device_name(device), "date": datetime.date.today().isoformat(),
              "command": f"torchrun --nproc-per-node {tp} benchmarks/allreduce_probe.py " + " ".join(sys.argv[1:]),
              "world_start_s": time.perf_counter() - t0, "results": []}
    gen = torch.Generator(device=device).manual_seed(rank)
    for n in args.sizes:
        for mode in ("one_shot", "two_shot"):
            g = TaskGraph(f"allreduce_{n}_{mode}", world=world, rank=rank)
            part = world.symmetric(rank, (1, 1, n), torch.float32)
            part.copy_(torch.randn(1, 1, n, generator=gen, device=device))
            residual = torch.zeros(1, 1, n, device=device)
            out = torch.empty(1, 1, n, device=device)
            g.input(part, residual)
            allreduce_ops(g, "ar", part, residual, out, ranks=tp, mode=mode)
            kernel = megagen.MegaKernel([g], world=world, num_ctas=min(132, max(1, n // 256)))
            kernel.run()
            want = part.clone()
            dist.all_reduce(want)
            error = (out - want).abs().max().item()
            mg = measure(lambda: kernel.run(check=False), 200, 20)
            kernel.check()
            message = part.clone()
            graph = torch.cuda.CUDAGraph()
            dist.all_reduce(message)  # warm NCCL before capture
            with torch.cuda.graph(graph):
                dist.all_reduce(message)
            nccl = measure(graph.replay, 200, 20)
            report["results"].append({"elements": n, "bytes": 4 * n, "mode": mode, "max_abs_error": error,
                                      "megagen_us": 1e3 * statistics.median(mg),
                                      "nccl_cuda_graph_us": 1e3 * statistics.median(nccl)})
            if rank == 0:
                print(json.dumps(report["results"][-1]), flush=True)
    ok = all(r["max_abs_error"] < 1e-4 for r in report["results"])
    world.close()
    if rank == 0:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / f"allreduce_probe_tp{tp}.json").write_text(json.dumps(report, indent=2))
        print("ok" if ok else "MISMATCH", flush=True)
    _bounded(dist.destroy_process_group, "destroying the process group", timeout=5)
    return 0 if ok else 1


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    os._exit(code)  # everything is torn down (bounded); skip exit hooks that could hang
