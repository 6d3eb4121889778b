"""Lean profile: one profiled build, 20 launches, the last one's rows and waterfall (no unprofiled timing)."""
import argparse, sys
from pathlib import Path
import torch
sys.path.insert(0, "benchmarks")
import megagen
from megagen import models
from megagen.bench import build_options, copy_bandwidth, measure
from waterfall import markdown, waterfall

ap = argparse.ArgumentParser()
ap.add_argument("--model", default="Qwen3-0.6B")
ap.add_argument("--context", type=int, default=512)
ap.add_argument("--out", required=True)
ap.add_argument("--option", action="append", default=[])
a = ap.parse_args()
out = Path(a.out); out.mkdir(parents=True, exist_ok=True)
model = models.load(a.model, dtype=torch.bfloat16, device="cuda")
prompt = torch.randint(3, model.config.vocab_size, (1, a.context), device="cuda")
bw = copy_bandwidth(torch.device("cuda"), True)
runner = megagen.build(model, max_seq_len=a.context + 16, profile=True, **build_options(a.option))
k = runner.kernel(1, False)
runner.prefill(prompt)
times = measure(lambda: k.run(check=False), 20, 5, before=lambda: runner.state.pos[:1].fill_(a.context))
k.check()
p = k.profile()
p.save(out / "profile.npz")
t = markdown(waterfall(p, model.config, a.context, bw, 1), f"{a.model} profiled step {sorted(times)[10]:.3f} ms, bw {bw/1e9:.0f} GB/s")
(out / "waterfall.md").write_text(t)
print(t)
