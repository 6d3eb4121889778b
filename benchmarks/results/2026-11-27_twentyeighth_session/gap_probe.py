"""Why does `megagen bench` report Qwen3-0.6B 2-3% slower than ab.py? One build, timed as the bench does
(10 warm-ups, 100 steps) at once, after idle seconds, and after long warm-ups; then as ab.py does."""
import json, statistics, sys, time
import torch
from megagen import models
from megagen.bench import measure, megagen_step

name = sys.argv[1] if len(sys.argv) > 1 else "Qwen3-0.6B"
dev = torch.device("cuda")
model = models.load(name, dtype=torch.bfloat16, device=dev)
torch.manual_seed(0)
prompt = torch.randint(3, model.config.vocab_size, (1, 512), device=dev)
rows = []
def rec(label, times):
    m = statistics.median(times)
    q = sorted(times)
    rows.append(dict(label=label, median=m, p10=q[len(q) // 10], p90=q[9 * len(q) // 10], first10=statistics.median(times[:10]), last10=statistics.median(times[-10:])))
    print(f"{label:40s} median {m:.4f} p10 {rows[-1]['p10']:.4f} p90 {rows[-1]['p90']:.4f} first10 {rows[-1]['first10']:.4f} last10 {rows[-1]['last10']:.4f}", flush=True)
with torch.no_grad():
    step, before, kernel, info = megagen_step(model, prompt, "round_robin", {})
    rec("bench-like: right after build", measure(step, 100, 10, before))
    rec("again at once", measure(step, 100, 10, before))
    time.sleep(5)
    rec("after 5 s idle, 10 warm-ups", measure(step, 100, 10, before))
    time.sleep(5)
    rec("after 5 s idle, 1000 warm-ups", measure(step, 100, 1000, before))
    rec("1000 steps at once", measure(step, 1000, 10, before))
    for r in range(3):
        rec(f"ab-like round {r}", measure(step, 200, 20, before))
    time.sleep(5)
    t = measure(step, 600, 0, before)
    for i in range(0, 600, 50):
        rec(f"after 5 s idle, steps {i}-{i+49}", t[i:i + 50])
    kernel.check()
json.dump(rows, open(sys.argv[2], "w"), indent=1) if len(sys.argv) > 2 else None
