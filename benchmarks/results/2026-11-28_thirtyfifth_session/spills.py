"""Where the decode MegaKernel's spill instructions come from (Python function), sampling step, sm_90a."""
import collections, os, sys
os.environ["TRITON_INTERPRET"] = "0"
sys.path.insert(0, os.path.join(os.getcwd(), "benchmarks"))
from ptxas_report import decode_step, megakernel_ptx, disassembled
from ncu_attribute import instruction_lines, function_at
preset = sys.argv[1] if len(sys.argv) > 1 else "Qwen3-0.6B"
sample = None if os.environ.get("GREEDY") else 64
g = decode_step(preset, 1, 1, 512, {}, sample, 264)
lines = instruction_lines(disassembled(megakernel_ptx(g, 264)))
c = collections.Counter()
for path, line, ins in lines:
    op = ins.strip().split()[0] if not ins.strip().startswith("@") else ins.strip().split()[1]
    if op.startswith("STL") or op.startswith("LDL"):
        c[(function_at(path, line), op.split(".")[0])] += 1
for k, v in sorted(c.items()):
    print(v, *k)
