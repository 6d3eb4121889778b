"""Registers of the sampling tile functions at Qwen3-0.6B's batch-1 shapes (sm_90a, no GPU)."""
import os, sys
os.environ["TRITON_INTERPRET"] = "0"
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))  # benchmarks/
import torch
import megagen
from megagen.tasks import multinomial as M
from ptxas_report import megakernel_ptx, registers_by_function

V, BLOCK, batch = 151936, int(os.environ.get("BLOCK", 640)), int(os.environ.get("BATCH", 1))
blocks = -(-V // BLOCK)
logits = torch.empty(1, batch, V, dtype=torch.bfloat16)
settings = dict(seed=torch.tensor([1]), temperature=torch.tensor([0.7]), top_k=torch.tensor([50]), top_p=torch.tensor([0.9]))
pos = torch.zeros(batch, dtype=torch.int64)
buffers = dict(cand=torch.zeros(batch, blocks, M.DECODE_LIST, dtype=torch.int64), value=torch.zeros(batch, blocks),
               index=torch.zeros(batch, blocks, dtype=torch.int64))
g = megagen.TaskGraph("s", inputs=[logits, pos, *settings.values()])
g.add(M.sample_partial, logits=logits, pos=pos, BLOCK=BLOCK, **buffers, **{n: settings[n] for n in ("seed", "temperature", "top_k")})
g.add(M.sample_pick, logits=logits, tokens=torch.zeros(batch, dtype=torch.int64), pos=pos, BLOCK=BLOCK,
      ROWS=1 << (batch - 1).bit_length(), pool=torch.zeros(batch, 128, dtype=torch.int64), **buffers, **settings)
print(g.ops[-1].plan.constexprs)
for row in registers_by_function(megakernel_ptx(g, 264)):
    print(*row)
