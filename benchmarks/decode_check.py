"""Check megagen.build on real-size models with random bf16 weights, and time a decode step.

For each preset: build the runner, prefill a random prompt to the given context, generate
new tokens, and compare every MegaKernel step's logits with HuggingFace's bf16 eager forward
over the same sequence (teacher forcing): cosine similarity and argmax agreement. Then time
one decode step at the context (position reset before every step, so the context stays
fixed) for megagen (plain launch and CUDA graph replay), HuggingFace eager, and
HuggingFace with a static KV cache under a CUDA graph, all in this process, each the
median of ``--steps`` CUDA-event-timed steps after warm-up. The floor is the bytes a step
must read (weights, embedding only when tied, plus the KV cache up to the context) over
the device-to-device copy bandwidth measured here.

    python benchmarks/decode_check.py --presets Qwen3-0.6B Llama-3.2-1B Qwen3-8B --out results.json

``--layers N`` keeps a preset's first N layers (every shape otherwise real), to check a model too large for the GPU
at hand, e.g. Qwen3-30B-A3B's experts on an H100.
"""
import argparse
import copy
import json
import statistics
import sys
import time

import megagen
import torch

from megagen import models
from megagen.bench import build_options, copy_bandwidth, hf_eager, hf_static, measure, step_bytes


def timed(step, steps: int, before=None) -> list[float]:
    return measure(step, steps, warmup=5, before=before)


def summary(times):
    return {"median_ms": statistics.median(times), "min_ms": min(times), "max_ms": max(times), "n": len(times)}


def hf_baselines(model, prompt, steps):
    """HuggingFace eager and static cache + CUDA graph; a baseline that cannot run (e.g. a model whose
    forward cannot be captured) is reported with its error instead of ending the check."""
    out = {}
    with torch.no_grad():
        for name, make in (("hf_eager", lambda: hf_eager(model, prompt)),
                           ("hf_static_cuda_graph", lambda: hf_static(model, prompt, compiled=False))):
            try:
                step, before = make()
                out[name] = summary(timed(step, steps, before))
            except (RuntimeError, NotImplementedError) as e:
                out[name] = {"error": f"{type(e).__name__}: {str(e)[:300]}"}
                torch.cuda.synchronize()
    return out


def check(preset, args, bandwidth):
    torch.manual_seed(0)
    layers = {"num_hidden_layers": args.layers} if args.layers else {}
    model = models.random_model(preset, dtype=torch.bfloat16, device="cuda", **layers)
    vocab = model.config.vocab_size
    prompt = torch.randint(0, vocab, (1, args.context), device="cuda")
    result = {"preset": preset, "layers": model.config.num_hidden_layers, "context": args.context,
              "bytes_per_step": step_bytes(model, args.context, 1)}
    result["floor_ms"] = result["bytes_per_step"] / bandwidth * 1e3

    t0 = time.perf_counter()
    runner = megagen.build(model, max_seq_len=args.context + args.new_tokens + 16, **args.options)
    result["build_s"] = time.perf_counter() - t0
    kernel = runner.kernel(1)
    result["tasks"] = kernel.dag.num_tasks
    runner.prefill(prompt)
    t0 = time.perf_counter()
    kernel.run()
    torch.cuda.synchronize()
    result["first_launch_s (Triton compile)"] = time.perf_counter() - t0

    if not args.skip_check:
        result.update(compare_with_hf(model, runner, prompt, args))

    def reset():
        runner.state.pos.fill_(args.context)
    result["megagen"] = summary(timed(lambda: kernel.run(check=False), args.steps, before=reset))
    kernel.check()
    graph = torch.cuda.CUDAGraph()
    reset()
    with torch.cuda.graph(graph):
        kernel.run(check=False)
    result["megagen_cuda_graph"] = summary(timed(graph.replay, args.steps, before=reset))
    kernel.check()
    floor = result["floor_ms"]
    if not args.skip_hf:
        result.update(hf_baselines(model, prompt, args.steps))
        if "median_ms" in result["hf_static_cuda_graph"]:
            result["speedup_vs_hf_static_cuda_graph"] = (result["hf_static_cuda_graph"]["median_ms"]
                                                         / result["megagen"]["median_ms"])
    for k in ("megagen", "megagen_cuda_graph", "hf_eager", "hf_static_cuda_graph"):
        if "median_ms" in result.get(k, {}):
            result[k]["fraction_of_floor"] = floor / result[k]["median_ms"]
    return result


def compare_with_hf(model, runner, prompt, args) -> dict:
    """Teacher-forced comparison of every MegaKernel step's logits with HuggingFace's forward.

    Both are compared with an fp32 copy of the model on the same sequence, so the report shows
    megagen's bf16 error next to HuggingFace's own bf16 error."""
    seq, logits = runner.generate(prompt, args.new_tokens, return_logits=True, do_sample=False)
    ours = logits[0, 1:].float()
    fp32_bytes = sum(p.numel() for p in model.parameters()) * 4
    with torch.no_grad():
        hf = model(seq).logits[0, args.context:args.context + len(ours)].float()
        ref = None
        if torch.cuda.mem_get_info()[0] > 1.2 * fp32_bytes:  # an fp32 copy fits beside the model
            model32 = copy.deepcopy(model).float()
            ref = model32(seq).logits[0, args.context:args.context + len(ours)].float()
            del model32
    torch.cuda.empty_cache()

    def cos(a, b):
        return torch.nn.functional.cosine_similarity(a, b, dim=1)

    def agree(a, b):
        return (a.argmax(1) == b.argmax(1)).float().mean().item()
    hf_tokens = model.generate(prompt, do_sample=False, max_new_tokens=args.new_tokens)
    same = (seq[0, args.context:] == hf_tokens[0, args.context:]).int()
    out = dict(generated=int(seq.shape[1] - args.context),
               cosine_vs_hf_bf16={"min": cos(ours, hf).min().item(), "median": cos(ours, hf).median().item()},
               argmax_agreement_vs_hf_bf16=agree(ours, hf),
               tokens_equal_to_hf_generate_prefix=int(same.cumprod(0).sum()))
    if ref is None:
        out["fp32_reference"] = "skipped: an fp32 copy of the model does not fit in the GPU's free memory"
        return out
    return dict(out, cosine_vs_fp32={"min": cos(ours, ref).min().item(), "median": cos(ours, ref).median().item()},
                hf_bf16_cosine_vs_fp32={"min": cos(hf, ref).min().item(), "median": cos(hf, ref).median().item()},
                argmax_agreement_vs_fp32=agree(ours, ref), hf_bf16_argmax_agreement_vs_fp32=agree(hf, ref))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--presets", nargs="+", default=["Qwen3-0.6B"])
    ap.add_argument("--context", type=int, default=512)
    ap.add_argument("--new-tokens", type=int, default=128)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--layers", type=int, default=None, help="keep only the first N layers of each preset")
    ap.add_argument("--option", action="append", default=[], help="megagen.build option, e.g. num_warps=8")
    ap.add_argument("--skip-check", action="store_true", help="time only; no comparison with HuggingFace")
    ap.add_argument("--skip-hf", action="store_true", help="do not time the HuggingFace baselines")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    args.options = build_options(args.option)
    bandwidth = copy_bandwidth(torch.device("cuda"), cuda=True)
    report = {"gpu": torch.cuda.get_device_name(), "date": time.strftime("%Y-%m-%d"),
              "command": " ".join(["python"] + sys.argv), "torch": torch.__version__,
              "triton": __import__("triton").__version__, "transformers": __import__("transformers").__version__,
              "copy_bandwidth_TBps": bandwidth / 1e12, "options": args.options, "results": []}
    for preset in args.presets:
        r = check(preset, args, bandwidth)
        report["results"].append(r)
        print(json.dumps(r, indent=1), flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
