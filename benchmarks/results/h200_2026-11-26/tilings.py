"""Print each op's tiles and GEMV tile shape for a one-layer decode graph under tiling options."""
import sys, torch
from megagen import models
from megagen.decode import DecodeState, Tiling, decode_graph
from megagen.trace import trace
preset, batch = sys.argv[1], int(sys.argv[2])
opts = dict(kv.split("=") for kv in sys.argv[3:])
opts = {k: int(v) for k, v in opts.items()}
decoder = trace(models.random_model(preset, dtype=torch.bfloat16, num_hidden_layers=1))
g = decode_graph(decoder, DecodeState.allocate(decoder, batch, 528), batch, Tiling(264, **opts))
for op in g.ops:
    c = op.plan.constexprs
    print(f"{op.name:28s} {op.task.name:28s} tiles {op.num_tiles:5d}", {k: c[k] for k in ("TILE_ROWS", "BLOCK_N", "BLOCK_K", "CHUNK", "ROW_TILES", "I", "ROWS") if k in c})
