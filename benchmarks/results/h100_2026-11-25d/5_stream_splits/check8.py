"""GPU check: batch 8 with the o/down projections split 8 ways (stream_k_splits=8) against HuggingFace bf16."""
import sys, torch, megagen
from megagen import models
torch.manual_seed(0)
name = sys.argv[1]
model = models.load(name, dtype=torch.bfloat16, device="cuda")
ids = torch.randint(3, model.config.vocab_size, (8, 64), device="cuda")
for opts in (dict(stream_k_splits=8), dict(stream_k_splits=4)):
    r = megagen.build(model, max_seq_len=128, max_batch_size=8, **opts)
    parts = {op.name: op.tensors["y"].shape[0] for op in r.kernel(8).task_graph.ops if op.name in ("L0.o_proj", "L0.down_proj")}
    seq, logits = r.generate(ids, max_new_tokens=16, return_logits=True)
    with torch.no_grad():
        ref = model(seq).logits[:, ids.shape[1] - 1:-1].float()
    cos = torch.nn.functional.cosine_similarity(logits.float().flatten(0, 1), ref.flatten(0, 1), dim=-1)
    agree = (logits.float().argmax(-1) == ref.argmax(-1)).float().mean().item()
    print(name, opts, "parts", parts, f"cosine min {cos.min().item():.5f} mean {cos.mean().item():.5f} argmax agreement {agree:.3f}", flush=True)
    del r; torch.cuda.empty_cache()
