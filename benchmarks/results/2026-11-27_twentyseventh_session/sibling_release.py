"""An o tile's release against how long before it its SM's other CTA started a gate/up weight copy.

    python sibling_release.py PROFILE.npz GATE_UP_SPREAD_CYCLES [SM_GHZ]

For every o_proj tile whose SM's other CTA ran a gate_proj or up_proj tile when the o tile issued its stores (its
third mark), the copy's start is estimated as that gate/up tile's start plus its row tile's share of the spread
(r / 64 of GATE_UP_SPREAD_CYCLES at SM_GHZ, 1.755 by default: Qwen3-0.6B's 64 row tiles an op); prints the o tiles'
median release (third mark -> end) by the time from that start to their stores. Session 27 (issue 14).
"""
import collections
import sys

import numpy as np

from megagen.profiler import CTA, SM, Profile

p = Profile.load(sys.argv[1])
spread, ghz = float(sys.argv[2]), float(sys.argv[3]) if len(sys.argv) > 3 else 1.755
name = np.array([n.split(".")[-1] for n in p.op_names])[p.task_op]
marks, start, end, tile = p.marks, p.start, p.end, p.task_tile
sm, cta = p.rows[:, SM], p.rows[:, CTA]
on_sm = collections.defaultdict(list)
for t in range(p.num_tasks):
    on_sm[sm[t]].append(t)
rows = []
for t in np.flatnonzero(name == "o_proj"):
    stores = marks[t, 2]
    other = [u for u in on_sm[sm[t]] if cta[u] != cta[t] and start[u] <= stores < end[u]
             and name[u] in ("gate_proj", "up_proj")]
    if other and not np.isnan(stores):
        copy_start = start[other[0]] + (tile[other[0]] % 64) / 64 * spread / ghz
        rows.append(((stores - copy_start) / 1e3, (end[t] - stores) / 1e3))
rows = np.array(rows)
edges = [-9, -0.5, 0, 0.5, 1, 1.5, 2, 3, 5, 99]
for lo, hi in zip(edges[:-1], edges[1:]):
    sel = rows[(rows[:, 0] >= lo) & (rows[:, 0] < hi)]
    if len(sel):
        print(f"copy started [{lo}, {hi}) us before the o tile's stores: {len(sel)} tiles, release median "
              f"{np.median(sel[:, 1]):.2f} us")
