"""Time tile-level dependency derivation on a decoder-shaped graph of about 20,000 tiles (CPU only).

    python benchmarks/derive_bench.py [--tiles 20000]

Each "layer" is gemv -> add (residual) -> gemv, over ping-pong activation buffers,
so GEMV tiles have a fan-in of every tile of their producer (128) and the buffer
reuse adds write-after-read and write-after-write dependencies. Weights are shared
graph inputs (read-only, so sharing them changes no dependency).
"""
import argparse
import time

import torch

import megagen
from megagen.tasks import add, gemv


def build(target_tiles: int, n: int = 2048, block_n: int = 16) -> megagen.TaskGraph:
    w = torch.empty(n, n, dtype=torch.bfloat16)
    x = torch.randn(n, dtype=torch.bfloat16)
    bufs = [torch.empty(n, dtype=torch.bfloat16) for _ in range(3)]
    g = megagen.TaskGraph("decoder_shaped", inputs=[w, x])
    tiles_per_op = n // block_n
    cur = x
    for i in range(max(1, target_tiles // (3 * tiles_per_op))):
        a, b, c = bufs[i % 3], bufs[(i + 1) % 3], bufs[(i + 2) % 3]
        g.add(gemv, w=w, x=cur, y=a, BLOCK_N=block_n)
        g.add(add, x=a, y=cur if cur is not a else b, out=b, BLOCK=block_n)
        g.add(gemv, w=w, x=b, y=c, BLOCK_N=block_n)
        cur = c
    return g


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tiles", type=int, default=20_000)
    args = ap.parse_args()
    g = build(args.tiles)
    t0 = time.perf_counter()
    dag = g.dependencies
    t1 = time.perf_counter()
    print(f"{dag.num_tasks} tiles, {len(g.ops)} ops, {dag.num_edges} tile dependencies derived in "
          f"{t1 - t0:.3f} s")
    return t1 - t0


if __name__ == "__main__":
    main()
