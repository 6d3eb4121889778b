"""The waterfall's loop-steps column for a profile saved before profiles kept each op's loop steps (2026-11-28): the
steps are taken from a one-layer Qwen3-30B-A3B decode graph built on the CPU with the same tiling options (every
layer is tiled alike), then the marks table is printed.

    python loop_steps.py call2/profile_packed.npz [option=value ...] [--bandwidth-gbps B]   (megagen importable)
"""
import argparse
import re
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # benchmarks/
import waterfall  # noqa: E402
from ptxas_report import decode_step  # noqa: E402

from megagen import models  # noqa: E402
from megagen.profiler import Profile  # noqa: E402
from megagen.tasks.linear import loop_steps  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("profile")
ap.add_argument("options", nargs="*")
ap.add_argument("--bandwidth-gbps", type=float, default=4125.0)
args = ap.parse_args()
options = {k: v == "True" if v in ("True", "False") else int(v) for k, v in (o.split("=") for o in args.options)}
graph = decode_step("Qwen3-30B-A3B", 1, 1, 512, options, None, 264)
steps = {re.sub(r"^L0\.", "", op.name): loop_steps(op.plan.constexprs) for op in graph.ops}
p = Profile.load(args.profile)
p.op_steps = np.array([steps[re.sub(r"^L\d+\.", "", name)] for name in p.op_names])
rows = waterfall.waterfall(p, models.preset_config("Qwen3-30B-A3B"), 512, args.bandwidth_gbps * 1e9)
print(waterfall.markdown(rows, args.profile).split("Inside the tiles")[1].split("\n\n", 1)[1])
