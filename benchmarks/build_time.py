"""Time megagen.build's own work (trace -> graph -> dependencies -> schedule -> source) for a preset.

Weights are left uninitialised (meta device, then ``to_empty``): build time does not depend
on their values, and a CPU-only machine then builds an 8B model in seconds of allocation.
Triton's compile happens at the first launch and is not part of this figure.

    python benchmarks/build_time.py Qwen3-8B
"""
import argparse
import time

import megagen  # noqa: F401  (interpreter without a GPU)
import torch
from transformers import AutoModelForCausalLM

from megagen import models
from megagen.decode import DecodeState, Tiling, decode_graph
from megagen.compiler import build_kernel
from megagen.trace import trace


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("preset", nargs="?", default="Qwen3-8B")
    ap.add_argument("--num-ctas", type=int, default=132, help="CTAs the graph is sized for (132 = H100/H200 SMs)")
    ap.add_argument("--scheduler", default="round_robin")
    args = ap.parse_args()
    config = models.preset_config(args.preset)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    model = model.to_empty(device="cpu").eval()
    model.model.rotary_emb = type(model.model.rotary_emb)(config)  # its tables are computed at init, skipped above

    t0 = time.perf_counter()
    decoder = trace(model)
    t1 = time.perf_counter()
    state = DecodeState.allocate(decoder, 1, 1024)
    graph = decode_graph(decoder, state, 1, Tiling(args.num_ctas))
    t2 = time.perf_counter()
    build = build_kernel(graph, args.scheduler, num_ctas=args.num_ctas, interleaved=False)
    t3 = time.perf_counter()
    print(f"{args.preset}: {len(graph.ops)} ops, {build.dag.num_tasks} tiles, {build.dag.num_edges} tile dependencies "
          f"({build.dag.num_sets} shared producer sets, {build.dag.dep_idx.size} single), "
          f"{len(build.variants)} dispatch variants")
    print(f"trace {t1 - t0:.2f} s, graph {t2 - t1:.2f} s (incl. KV cache allocation), "
          f"dependencies + schedule + simulation + source {t3 - t2:.2f} s; total {t3 - t0:.2f} s")


if __name__ == "__main__":
    main()
