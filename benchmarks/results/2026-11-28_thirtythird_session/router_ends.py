"""When o, the router's tiles and the route end in a Qwen3-30B-A3B profile, per layer (1-7), in us after the
attention's last tile ends; how long the router's last tile ran after its wait, and its marks (input ready, last
products, stores issued; us after its wait); when the experts' gate/up waits were done.

    python router_ends.py callN/profile_X.npz      (megagen importable)
"""
import sys

import numpy as np

from megagen.profiler import Profile

p = Profile.load(sys.argv[1])
names = list(p.op_names)


def tasks(name):
    k = names.index(name)
    return np.arange(p.op_offsets[k], p.op_offsets[k + 1])


rows = []
for layer in range(1, 8):
    t0 = p.end[tasks(f"L{layer}.attention")].max()
    o, router, gate = (tasks(f"L{layer}.{op}") for op in ("o_proj", "router_a", "experts_gate"))
    last = router[np.argmax(p.end[router])]
    row = dict(layer=layer, o_end=p.end[o].max() - t0, router_end=p.end[router].max() - t0,
               router_second_end=np.sort(p.end[router])[-2] - t0, router_last_wait=p.wait_done[last] - t0,
               router_last_run=p.end[last] - p.wait_done[last], gate_first_wait=p.wait_done[gate].min() - t0)
    rows.append({k: v if k == "layer" else v / 1e3 for k, v in row.items()})
    marks = [round((m - p.wait_done[last]) / 1e3, 2) for m in p.marks[last] if m > 0]
    print({k: v if k == "layer" else round(float(v), 2) for k, v in rows[-1].items()}, "last router marks", marks)
print("median", {k: round(float(np.median([r[k] for r in rows])), 2) for k in rows[0] if k != "layer"})
