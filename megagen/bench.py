"""megagen bench: per-token decode latency of megagen beside what a user would run instead.

    megagen bench --model Qwen3-0.6B Qwen3-8B [--batch 1] [--context 512] [--steps 100]
    python -m megagen.bench ...            (the same)
    megagen bench --dry-run                (no GPU: a tiny model in the interpreter checks the harness)

In one process, on one GPU, on the same model and prompt: HuggingFace eager (dynamic cache),
HuggingFace with a static cache replayed from a CUDA graph, torch.compile of that static-cache step
replayed from a CUDA graph (the strongest PyTorch path), megagen's own tile kernels launched op by
op with programmatic dependent launch under a CUDA graph (what the same tiles do without a
MegaKernel), and megagen under each scheduler (one MegaKernel launch per step). Every step is
CUDA-event timed with the context reset before it (so every step decodes at the same context),
median / min / max over ``--steps`` steps after warm-up; prefill is never timed. The floor is the
bytes a step must read over the device-to-device copy bandwidth measured in the same run (FLOOR_DEFINITION).
A baseline the model's own code cannot run (a compile or a CUDA-graph capture that fails) is reported under the
model's ``skipped`` with the error, and the other systems still run.
Writes bench.json (every figure with GPU, driver, versions, date and command), bench.md and
bench.png into ``--out``.
"""
from __future__ import annotations

import argparse
import ast
import dataclasses
import datetime
import json
import statistics
import sys
import time
from pathlib import Path

import torch

import megagen
from megagen import models
from megagen.backend import interpreting
from megagen.errors import MegagenError
from megagen.generation import GREEDY, Sampling, resolve
from megagen.tasks.moe import expected_experts
from megagen.trace import trace

SCHEDULERS = ("round_robin", "zigzag", "work_queue")
# ops_pdl_cuda_graph: megagen's own tile kernels launched op by op with programmatic dependent launch, in a
# CUDA graph: what the same tiles do without a MegaKernel
BASELINES = ("hf_eager", "hf_static_cuda_graph", "torch_compile_cuda_graph", "ops_pdl_cuda_graph")
GRAPH_SYSTEMS = ("hf_static_cuda_graph", "torch_compile_cuda_graph", "ops_pdl_cuda_graph")
COMPILE_MODE = "max-autotune-no-cudagraphs"  # the CUDA graph is captured by hand, around the compiled step
# --sample: what a chat user typically asks of generate; each megagen system is then timed a second time with the
# next token drawn in the MegaKernel under these settings, as system ``megagen_<scheduler>_sample``
SAMPLE_SETTINGS = {"do_sample": True, "temperature": 0.7, "top_k": 50, "top_p": 0.9}
# what floor_ms and bytes_per_step count (bench.json's floor_definition, bench.md's header); step_bytes counts it
FLOOR_DEFINITION = ("floor_ms: bytes_per_step over the copy bandwidth. bytes_per_step: what a step must read, the "
                    "weights (the embedding table only when tied to lm_head; of a mixture-of-experts layer its router "
                    "and only the experts the step routes to) and the KV cache up to the context for every batch row. "
                    "Routing is random at bench time, so a layer of E experts, k routed per row, counts the expected "
                    "union of the rows' experts under uniform routing: E * (1 - (1 - k/E)^batch) experts (k at "
                    "batch 1).")


# -- timing ---------------------------------------------------------------------------------------------

def measure(step, steps: int, warmup: int, before=None, cuda: bool = True,
            warmup_s: float = 0.0) -> list[float]:
    """Milliseconds of ``step()`` per call; ``before()`` runs untimed before every call. Warm-up: ``warmup`` calls,
    and more until ``warmup_s`` seconds have passed, each waited for as the timed ones are. A GPU that sat idle
    (while a system built and compiled) runs its first few hundred steps slower: one Qwen3-0.6B MegaKernel, after
    5 s idle, took 0.700 ms a step for about 250 steps, then 0.687 (H100, BENCHMARKS.md, 2026-11-27)."""
    t0, done = time.perf_counter(), 0
    while done < warmup or time.perf_counter() - t0 < warmup_s:
        if before:
            before()
        step()
        if cuda:
            torch.cuda.synchronize()
        done += 1
    times = []
    for _ in range(steps):
        if before:
            before()
        if cuda:
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            step()
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b))
        else:
            t0 = time.perf_counter()
            step()
            times.append((time.perf_counter() - t0) * 1e3)
    return times


def summarize(times: list[float], batch: int) -> dict:
    median = statistics.median(times)
    return {"median_ms": median, "min_ms": min(times), "max_ms": max(times), "steps": len(times),
            "tokens_per_s": batch / (median / 1e3)}


def copy_bandwidth(device, cuda: bool) -> float:
    """Device-to-device copy bandwidth in bytes/s, counting bytes read plus written."""
    src = torch.randn((256 if cuda else 4) * 2**20, device=device)
    dst = torch.empty_like(src)
    t = statistics.median(measure(lambda: dst.copy_(src), 20, 3, cuda=cuda))
    return 2 * src.numel() * src.element_size() / (t / 1e3)


def step_bytes(model, context: int, batch: int) -> int:
    """Bytes one decode step must read, as FLOOR_DEFINITION says: weights (the embedding only when tied; of each
    mixture-of-experts layer the expected union of the rows' routed experts) and the KV cache. Rounded to a byte:
    the experts' share is an expectation."""
    cfg = model.config
    tied = model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()
    weights = sum(p.numel() * p.element_size() for n, p in model.named_parameters()
                  if tied or "embed_tokens" not in n)
    for e in (layer.experts for layer in trace(model).layers if layer.experts is not None):
        num = e.router.shape[0]
        weights -= (1 - expected_experts(num, e.top_k, batch) / num) * (e.gate_up.nbytes + e.down.nbytes)
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    kv = 2 * cfg.num_hidden_layers * cfg.num_key_value_heads * head_dim * context * batch * model.dtype.itemsize
    return round(weights + kv)


# -- the systems ----------------------------------------------------------------------------------------

def _graph_replay(step, before):
    """``step`` warmed up on a side stream (``before`` ahead of each call), then captured in a CUDA graph
    after one more ``before``; returns the graph's replay."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            before()
            step()
    torch.cuda.current_stream().wait_stream(stream)
    before()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step()
    return graph.replay


def hf_eager(model, prompt):
    """One HuggingFace decode step with a dynamic cache cut back to the prompt before every step."""
    from transformers import DynamicCache
    cache = DynamicCache()
    model(input_ids=prompt, past_key_values=cache, use_cache=True)
    context = prompt.shape[1]
    token = torch.randint(3, model.config.vocab_size, (prompt.shape[0], 1), device=prompt.device)

    def back_to_context():
        extra = cache.get_seq_length() - context
        if extra > 0:
            cache.crop(-extra)
    return (lambda: model(input_ids=token, past_key_values=cache, use_cache=True)), back_to_context


def hf_static(model, prompt, compiled: bool):
    """One decode step with a StaticCache, optionally torch.compile'd, replayed from a CUDA graph."""
    from transformers import StaticCache
    batch, context = prompt.shape
    cache = StaticCache(config=model.config, max_cache_len=context + 16)
    model(input_ids=prompt, past_key_values=cache, use_cache=True,
          cache_position=torch.arange(context, device=prompt.device))
    token = torch.randint(3, model.config.vocab_size, (batch, 1), device=prompt.device)
    position = torch.full((1,), context, device=prompt.device)
    forward = torch.compile(model.forward, mode=COMPILE_MODE) if compiled else model.forward

    def step():
        return forward(input_ids=token, position_ids=position.expand(batch, 1), cache_position=position,
                       past_key_values=cache, use_cache=True)

    def rewind():  # StaticCache counts the tokens it holds on the device; keep the context fixed
        for layer in cache.layers:
            layer.cumulative_length.fill_(context)
    return _graph_replay(step, rewind), rewind


def ops_pdl(model, prompt, options):
    """megagen's decode step as its tile kernels launched op by op (PDL), replayed from a CUDA graph."""
    batch, context = prompt.shape
    runner = megagen.build(model, max_seq_len=context + 16, max_batch_size=batch, **options)
    ops = megagen.OpLaunches(runner.kernel(batch).task_graph, pdl=True)
    runner.prefill(prompt)

    def reset():
        runner.state.pos[:batch].fill_(context)
    return _graph_replay(ops.run, reset), reset


def set_sampling(runner, sample: bool) -> Sampling:
    """GREEDY, or SAMPLE_SETTINGS (with a fixed seed) written where the runner's sampling tasks read them."""
    if not sample:
        return GREEDY
    sampling = resolve(runner.model.generation_config, dict(SAMPLE_SETTINGS), vocab_size=runner.decoder.vocab_size,
                       max_top_k=runner.max_top_k)
    sampling = dataclasses.replace(sampling, seed=1234)
    for state in runner.states:
        state.set_sampling(sampling)
    return sampling


def megagen_step(model, prompt, scheduler, options, sample: bool = False):
    """One MegaKernel launch per step, the position reset to the prompt length before each; on a GPU the
    launch is replayed from a CUDA graph, as every baseline is (a launch from Python costs the GPU idle
    time a decode loop hides). ``sample``: the next token is drawn with SAMPLE_SETTINGS, not picked greedily."""
    batch, context = prompt.shape
    t0 = time.perf_counter()
    runner = megagen.build(model, scheduler=scheduler, max_seq_len=context + 16, max_batch_size=batch, **options)
    kernel = runner.kernel(batch, sample)
    build_s = time.perf_counter() - t0
    runner.prefill(prompt, set_sampling(runner, sample))
    t0 = time.perf_counter()
    kernel.run()  # the first launch compiles
    compile_s = time.perf_counter() - t0

    def reset():
        runner.state.pos[:batch].fill_(context)

    def step():
        kernel.run(check=False)
    info = {"build_s": build_s, "first_launch_s": compile_s, "tasks": kernel.dag.num_tasks, "ctas": kernel.num_ctas}
    if prompt.is_cuda:
        return _graph_replay(step, reset), reset, kernel, info
    return step, reset, kernel, info


def time_baseline(system: str, model, prompt, args, cuda: bool) -> dict:
    """One baseline's timing summary (``summarize``), with its setup time where it compiles or captures."""
    extra = {}
    if system == "hf_eager":
        step, before = hf_eager(model, prompt)
    elif system in ("hf_static_cuda_graph", "torch_compile_cuda_graph"):
        t0 = time.perf_counter()
        step, before = hf_static(model, prompt, compiled=system == "torch_compile_cuda_graph")
        extra["setup_s"] = time.perf_counter() - t0
    else:
        step, before = ops_pdl(model, prompt, {**args.options, **args.pdl_options})
    times = measure(step, args.steps, args.warmup, before, cuda=cuda, warmup_s=args.warmup_seconds)
    return {**summarize(times, args.batch), **extra}


def cannot_run(error: Exception) -> str:
    """Why a baseline did not run, for bench.json's ``skipped``: a model's code may not compile or capture (a
    mixture of experts' data-dependent expert loop, say), which says nothing about megagen, so the other systems
    still run and the report says why this one is missing."""
    first = (str(error).strip().splitlines() or [""])[0]
    return f"failed: {type(error).__name__}: {first[:300]}"


# -- one model ------------------------------------------------------------------------------------------

def bench_model(name: str, args, bandwidth: float, device, progress) -> dict:
    cuda = device.type == "cuda"
    dtype = torch.bfloat16 if cuda else torch.float32
    model = models.load(name, dtype=dtype, device=device)
    torch.manual_seed(0)
    prompt = torch.randint(3, model.config.vocab_size, (args.batch, args.context), device=device)
    nbytes = step_bytes(model, args.context, args.batch)
    result = {"model": name, "architecture": type(model).__name__, "dtype": str(dtype).replace("torch.", ""),
              "batch": args.batch, "context": args.context, "bytes_per_step": nbytes,
              "floor_ms": nbytes / bandwidth * 1e3, "systems": {}, "skipped": {}}
    systems = list(args.baselines) + [f"megagen_{s}" for s in args.schedulers]
    if args.sample:
        systems += [f"megagen_{s}_sample" for s in args.schedulers]
    with torch.no_grad():
        for system in systems:
            progress.set_description(f"{name}: {system}")
            if not cuda and system in GRAPH_SYSTEMS:
                result["skipped"][system] = "needs a CUDA GPU"
                progress.update()
                continue
            if system.startswith("megagen_"):
                scheduler = system[len("megagen_"):].removesuffix("_sample")
                step, before, kernel, extra = megagen_step(model, prompt, scheduler, args.options,
                                                           sample=system.endswith("_sample"))
                times = measure(step, args.steps, args.warmup, before, cuda=cuda, warmup_s=args.warmup_seconds)
                kernel.check()
                result["systems"][system] = {**summarize(times, args.batch), **extra}
            else:
                try:
                    result["systems"][system] = time_baseline(system, model, prompt, args, cuda)
                except MegagenError:  # megagen's own refusal (the PDL baseline's options): the user's to fix
                    raise
                except Exception as e:  # noqa: BLE001 - a baseline the model's code cannot run is reported
                    result["skipped"][system] = cannot_run(e)
                    if cuda:
                        torch.cuda.synchronize()
                        torch.cuda.empty_cache()
            progress.update()
    for entry in result["systems"].values():
        entry["fraction_of_floor"] = result["floor_ms"] / entry["median_ms"]
    for system, entry in result["systems"].items():
        if system.startswith("megagen_"):
            entry["speedup_vs"] = {b: result["systems"][b]["median_ms"] / entry["median_ms"]
                                   for b in args.baselines if b in result["systems"]}
        if system.endswith("_sample"):  # what drawing the token costs over picking it greedily
            greedy = result["systems"][system.removesuffix("_sample")]["median_ms"]
            entry["sampling_settings"] = SAMPLE_SETTINGS
            entry["cost_over_greedy"] = entry["median_ms"] / greedy - 1
    del model
    if cuda:
        torch.cuda.empty_cache()
    return result


# -- reports --------------------------------------------------------------------------------------------

def markdown(report: dict) -> str:
    lines = [f"# megagen bench — {report['device']}, {report['date']}", ""]
    if report["dry_run"]:
        lines += ["**Dry run** in Triton's CPU interpreter: this checks the harness; the times are not "
                  "performance measurements.", ""]
    command = "combined runs (below)" if "combined_from" in report else f"`{report['command']}`"
    lines += [f"Command: {command}. torch {report['torch']}, triton {report['triton']}, "
              f"transformers {report['transformers']}. Copy bandwidth {report['copy_bandwidth_GBps']:.0f} GB/s. "
              "Per-token decode latency, median of "
              + ("wall-clock-timed" if report["dry_run"] else "CUDA-event-timed") + " steps (min–max)"
              + (f", each system after at least {report['warmup']} untimed steps and {report['warmup_seconds']:g} s"
                 if "warmup_seconds" in report else "") + ".", ""]
    if "floor_definition" in report:  # bench.json files written before it was recorded lack it
        lines += [f"Floor: {report['floor_definition']}", ""]
    for part in report.get("combined_from", []):
        lines += [f"- combined: `{part['command']}` ({part['date']}, copy bandwidth "
                  f"{part['copy_bandwidth_GBps']:.0f} GB/s)"]
    if "combined_from" in report:
        lines.append("")
    for r in report["results"]:
        lines += [f"## {r['model']} ({r['dtype']}, batch {r['batch']}, context {r['context']}): "
                  f"floor {r['floor_ms']:.3f} ms ({r['bytes_per_step'] / 1e9:.2f} GB per step)", "",
                  "| system | median ms | min–max ms | tokens/s | of floor | speedup vs " +
                  " / ".join(report["baselines"]) + " |", "|---|---|---|---|---|---|"]
        for system, e in r["systems"].items():
            speedups = " / ".join(f"{e['speedup_vs'][b]:.2f}×" if b in e.get("speedup_vs", {}) else "–"
                                  for b in report["baselines"]) if system.startswith("megagen_") else ""
            lines.append(f"| {system} | {e['median_ms']:.3f} | {e['min_ms']:.3f}–{e['max_ms']:.3f} | "
                         f"{e['tokens_per_s']:.0f} | {e['fraction_of_floor']:.0%} | {speedups} |")
        for system, why in r["skipped"].items():
            lines.append(f"| {system} | skipped: {why} | | | | |")
        lines.append("")
        for system, e in r["systems"].items():
            if "cost_over_greedy" in e:
                lines += [f"{system}: drawing each token with {e['sampling_settings']} takes "
                          f"{e['cost_over_greedy']:+.1%} over greedy.", ""]
    return "\n".join(lines)


def plot(report: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    results = report["results"]
    systems = list(dict.fromkeys(s for r in results for s in r["systems"]))  # in the order they ran
    width = 0.8 / max(len(systems), 1)
    fig, ax = plt.subplots(figsize=(max(6, 2.2 * len(results)) + 2.5, 4.5))
    for i, system in enumerate(systems):
        xs = [j + (i - (len(systems) - 1) / 2) * width for j, r in enumerate(results) if system in r["systems"]]
        ys = [r["systems"][system]["median_ms"] for r in results if system in r["systems"]]
        ax.bar(xs, ys, width, label=system)
    for j, r in enumerate(results):
        ax.hlines(r["floor_ms"], j - 0.45, j + 0.45, colors="black", linestyles="dashed",
                  label="floor (bytes / copy bandwidth)" if j == 0 else None)
    ax.set_xticks(range(len(results)), [f"{r['model']}\nbatch {r['batch']}, ctx {r['context']}" for r in results])
    ax.set_yscale("log")
    ax.set_ylabel("ms per decode step (log scale)")
    title = f"megagen bench, {report['device']}, {report['date']}"
    ax.set_title(title + ("\ndry run: checks the harness, not a measurement" if report["dry_run"] else ""), fontsize=10)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_reports(report: dict, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "bench.json", out / "bench.md", out / "bench.png"]
    paths[0].write_text(json.dumps(report, indent=1))
    paths[1].write_text(markdown(report))
    plot(report, paths[2])
    return paths


# -- command line ---------------------------------------------------------------------------------------

def parse_args(argv):
    ap = argparse.ArgumentParser(prog="megagen bench", description=__doc__.splitlines()[0])
    ap.add_argument("--model", nargs="+", default=None,
                    help=f"presets ({', '.join(sorted(models.PRESETS))}) or local checkpoint directories")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--context", type=int, default=512)
    ap.add_argument("--steps", type=int, default=100, help="timed steps per system (at least 100 for a result)")
    ap.add_argument("--warmup", type=int, default=10, help="untimed steps per system before its timed ones, at least")
    ap.add_argument("--warmup-seconds", type=float, default=1.0,
                    help="... and as many more as fill this many seconds (a GPU idle while a system compiled "
                         "runs its first few hundred steps slower)")
    ap.add_argument("--schedulers", nargs="+", default=list(SCHEDULERS), choices=SCHEDULERS)
    ap.add_argument("--baselines", nargs="*", default=list(BASELINES), choices=BASELINES)
    ap.add_argument("--sample", action="store_true",
                    help=f"also time each megagen system drawing its tokens with {SAMPLE_SETTINGS} (system "
                         "megagen_<scheduler>_sample; bench.json gives its cost over greedy)")
    ap.add_argument("--option", action="append", default=[], help="a megagen.build option, e.g. num_warps=8")
    ap.add_argument("--pdl-option", action="append", default=[],
                    help="a build option for the PDL baseline's tiles only (over --option's), e.g. block_n=16: "
                         "its best tiling need not be the MegaKernel's")
    ap.add_argument("--out", default="bench_out", help="directory for bench.json, bench.md, bench.png")
    ap.add_argument("--dry-run", action="store_true",
                    help="a tiny model in Triton's CPU interpreter: checks the harness, claims no timings")
    ap.add_argument("--combine", nargs="+", metavar="BENCH_JSON",
                    help="merge earlier bench.json files (one GPU kind) into one report in --out; runs nothing")
    args = ap.parse_args(argv)
    args.options = build_options(args.option)
    args.pdl_options = build_options(args.pdl_option)
    return args


def build_options(pairs: list[str]) -> dict:
    """``--option key=value`` arguments as megagen.build keyword arguments: Python literals where they parse
    (16, False, 0.5), strings otherwise (round_robin)."""
    def value(v):
        try:
            return ast.literal_eval(v)
        except (ValueError, SyntaxError):
            return v
    return {k: value(v) for k, v in (o.split("=", 1) for o in pairs)}


def main(argv=None) -> int:
    from tqdm import tqdm
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.combine:
        return _combine(args)
    if args.dry_run:
        if not interpreting():
            raise MegagenError("--dry-run runs in Triton's CPU interpreter; on a GPU machine set TRITON_INTERPRET=1 "
                               "before starting, or leave --dry-run out")
        args.model = args.model or ["tiny-qwen3"]
        args.steps, args.warmup, args.warmup_seconds = min(args.steps, 3), 1, 0.0
        args.context = min(args.context, 16)
        device = torch.device("cpu")
    else:
        if interpreting() or not torch.cuda.is_available():
            print("megagen bench: no CUDA GPU here, so there is nothing to time. `megagen bench --dry-run` checks "
                  "the harness on a tiny model in Triton's CPU interpreter.", file=sys.stderr)
            return 2
        if args.steps < 100:
            print(f"note: {args.steps} timed steps; results for the record use at least 100", file=sys.stderr)
        args.model = args.model or ["Qwen3-0.6B"]
        device = torch.device("cuda")
    cuda = device.type == "cuda"
    report = {"device": torch.cuda.get_device_name() if cuda else "CPU (Triton interpreter)",
              "driver": _driver() if cuda else None, "date": datetime.date.today().isoformat(),
              "command": " ".join(["megagen bench"] + (sys.argv[1:] if argv is None else list(argv))),
              "torch": torch.__version__, "triton": __import__("triton").__version__,
              "transformers": __import__("transformers").__version__, "megagen": megagen.__version__,
              "megagen_source": str(Path(megagen.__file__).parent),
              "floor_definition": FLOOR_DEFINITION, "dry_run": args.dry_run, "baselines": list(args.baselines),
              "options": args.options, "pdl_options": args.pdl_options, "warmup": args.warmup,
              "warmup_seconds": args.warmup_seconds, "results": []}
    bandwidth = copy_bandwidth(device, cuda)
    report["copy_bandwidth_GBps"] = bandwidth / 1e9
    total = len(args.model) * (len(args.baselines) + len(args.schedulers) * (2 if args.sample else 1))
    with tqdm(total=total, file=sys.stderr, unit="system") as progress:
        for name in args.model:
            report["results"].append(bench_model(name, args, bandwidth, device, progress))
            write_reports(report, Path(args.out))  # keep what is done if a later model fails
    for path in write_reports(report, Path(args.out)):
        print(f"wrote {path}")
    print(markdown(report))
    return 0


def _combine(args) -> int:
    reports = [json.loads(Path(p).read_text()) for p in args.combine]
    devices = {r["device"] for r in reports}
    if len(devices) != 1 or len({r["dry_run"] for r in reports}) != 1:
        raise MegagenError(f"--combine needs reports from one device kind and of one kind of run; got {devices}")
    merged = {**reports[0], "results": [res for r in reports for res in r["results"]],
              "combined_from": [{"command": r["command"], "date": r["date"],
                                 "copy_bandwidth_GBps": r["copy_bandwidth_GBps"]} for r in reports]}
    for path in write_reports(merged, Path(args.out)):
        print(f"wrote {path}")
    return 0


def _driver() -> str:
    import subprocess
    try:
        return subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=30).stdout.strip().splitlines()[0]
    except (OSError, IndexError, subprocess.SubprocessError):
        return "unknown"


if __name__ == "__main__":
    from megagen.cli import run
    sys.exit(run(main, "megagen bench"))
