"""A GEMV op's tile steps by K chunk, from a profile's marks: wait -> input ready -> last products -> stores -> end.

    python tile_steps.py PROFILE.npz OP_SUFFIX ROW_TILES

e.g. ``o_proj 32`` for Qwen3-0.6B's o projection (4 K chunks of 32 row tiles). Medians over every layer, in us.
Session 27 (issue 14).
"""
import sys

import numpy as np

from megagen.profiler import Profile

p = Profile.load(sys.argv[1])
suffix, row_tiles = sys.argv[2], int(sys.argv[3])
marks, wait_done, end, tile = p.marks, p.wait_done, p.end, p.task_tile
by_chunk = {}
for k, op in enumerate(p.op_names):
    if op.endswith(suffix):
        tasks = np.arange(p.op_offsets[k], p.op_offsets[k + 1])
        for t in tasks:
            steps = [marks[t, 0] - wait_done[t], marks[t, 1] - marks[t, 0], marks[t, 2] - marks[t, 1],
                     end[t] - marks[t, 2]]
            by_chunk.setdefault(tile[t] // row_tiles, []).append(steps)
for chunk, steps in sorted(by_chunk.items()):
    med = np.nanmedian(np.array(steps, dtype=float), axis=0) / 1e3
    print(f"{suffix} chunk {chunk}: {len(steps)} tiles; input {med[0]:.2f}, products {med[1]:.2f}, "
          f"stores {med[2]:.2f}, release {med[3]:.2f}")
