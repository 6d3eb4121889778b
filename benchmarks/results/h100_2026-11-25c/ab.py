"""A/B timing of megagen.build option sets in one process: each variant built once, then timed in alternating rounds.
   python -m scratch.ab MODEL name:k=v,k=v name2: ...   (an empty option list is main's defaults)"""
import ast, statistics, sys, time, torch
from megagen import models
from megagen.bench import megagen_step, measure

def parse(spec):
    name, _, opts = spec.partition(":")
    return name, {k: ast.literal_eval(v) for k, v in (o.split("=") for o in opts.split(",") if o)}

model_name, specs = sys.argv[1], [parse(s) for s in sys.argv[2:]]
import os
import megagen
print("megagen from", megagen.__file__, flush=True)
ROUNDS = int(os.environ.get("ROUNDS", 6))
BATCH = int(os.environ.get("BATCH", 1))
dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = models.load(model_name, dtype=torch.bfloat16 if dev.type == "cuda" else torch.float32, device=dev)
ROUNDS = ROUNDS if dev.type == "cuda" else 1
torch.manual_seed(0)
prompt = torch.randint(3, model.config.vocab_size, (BATCH, 512 if dev.type == "cuda" else 8), device=dev)
runs = {}
with torch.no_grad():
    for name, opts in specs:
        t0 = time.time()
        step, before, kernel, info = megagen_step(model, prompt, "round_robin", opts)
        runs[name] = (step, before, kernel)
        print(f"{model_name} {name} {opts} built in {time.time() - t0:.0f} s, {info['tasks']} tasks", flush=True)
    med = {n: [] for n in runs}
    for r in range(ROUNDS):
        for name, (step, before, kernel) in runs.items():
            med[name].append(statistics.median(measure(step, 200 if dev.type == "cuda" else 1, 20 if dev.type == "cuda" else 0, before, cuda=dev.type == "cuda")))
    for name, (step, before, kernel) in runs.items():
        kernel.check()
        print(f"{model_name} b{BATCH} {name}: median of rounds {statistics.median(med[name]):.4f} ms  rounds "
              + " ".join(f"{m:.3f}" for m in med[name]), flush=True)
