import torch, sys
sys.path.insert(0, '/work/wt3')
from megagen import models
torch.manual_seed(0)
m = models.random_model("Qwen3-0.6B", dtype=torch.bfloat16)
m.eval()
ids = torch.randint(0, m.config.vocab_size, (1, 48))
with torch.no_grad():
    logits = m(ids).logits[0].float()  # [48, V] bf16-rounded values in float
block, k, T = 576, 50, 0.7
y = logits / torch.tensor([T])
V = y.shape[1]
for D in (4, 8):
    full = 0
    for row in y:
        blocks = row.split(block)
        tops = [b.topk(min(D, b.numel())).values for b in blocks]
        entries = torch.cat(tops)
        floor = entries.topk(k).values[-1]
        full += any(t.numel() == D and t[-1] >= floor for t in tops)
    print(f"D={D}: rows with a full list {full}/{len(y)}")
row = y[-1]
kth = row.topk(k).values[-1]
print("ties at the 50th value:", int((row == kth).sum()), "tokens >= it:", int((row >= kth).sum()))
