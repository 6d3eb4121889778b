"""megagen bench: the dry run exercises the whole harness (JSON, Markdown, plot) on the CPU."""
import itertools
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from megagen import bench
from megagen.backend import interpreting
from megagen.errors import MegagenError


@pytest.mark.skipif(not interpreting(), reason="the dry run is the interpreter's harness check")
def test_dry_run_writes_json_markdown_and_plot(tmp_path):
    assert bench.main(["--dry-run", "--schedulers", "round_robin", "--out", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "bench.json").read_text())
    assert report["dry_run"] is True and report["device"].startswith("CPU")
    for key in ("date", "command", "torch", "triton", "transformers", "copy_bandwidth_GBps"):
        assert report[key]
    assert report["floor_definition"] == bench.FLOOR_DEFINITION
    assert report["options"] == {} and report["pdl_options"] == {}
    assert report["warmup"] == 1 and report["warmup_seconds"] == 0.0  # the dry run's
    assert report["megagen_source"] == str(Path(bench.__file__).parent)  # which megagen ran (python -m's path)
    (r,) = report["results"]
    assert r["model"] == "tiny-qwen3" and r["bytes_per_step"] > 0 and r["floor_ms"] > 0
    assert set(r["systems"]) == {"hf_eager", "megagen_round_robin"}
    assert set(r["skipped"]) == {"hf_static_cuda_graph", "torch_compile_cuda_graph", "ops_pdl_cuda_graph"}
    for e in r["systems"].values():
        assert e["min_ms"] <= e["median_ms"] <= e["max_ms"] and e["steps"] == 3
        assert e["fraction_of_floor"] == pytest.approx(r["floor_ms"] / e["median_ms"])
    mg = r["systems"]["megagen_round_robin"]
    assert mg["speedup_vs"]["hf_eager"] == pytest.approx(r["systems"]["hf_eager"]["median_ms"] / mg["median_ms"])
    md = (tmp_path / "bench.md").read_text()
    assert "Dry run" in md and "| megagen_round_robin |" in md and "skipped: needs a CUDA GPU" in md
    assert f"Floor: {bench.FLOOR_DEFINITION}" in md and "after at least 1 untimed steps and 0 s" in md
    png = (tmp_path / "bench.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000


def test_measure_warms_up_for_its_steps_and_its_seconds():
    """The warm-up runs ``warmup`` untimed calls and, with ``warmup_s``, more until that many seconds have
    passed (a GPU idle while a system compiled is slower for its first few hundred steps)."""
    starts = []

    def step():
        starts.append(time.perf_counter())
        time.sleep(0.01)
    assert len(bench.measure(step, 3, 2, cuda=False)) == 3 and len(starts) == 5
    starts.clear()
    t0 = time.perf_counter()
    assert len(bench.measure(step, 3, 2, cuda=False, warmup_s=0.2)) == 3
    assert len(starts) >= 2 + 3 and starts[-3] - t0 >= 0.2  # the first timed call starts after the warm-up's time


@pytest.mark.skipif(not interpreting(), reason="the dry run is the interpreter's harness check")
def test_dry_run_with_sample_times_the_sampling_kernel_beside_greedy(tmp_path, monkeypatch):
    from megagen.runner import Runner
    kernels, real_kernel = [], Runner.kernel
    monkeypatch.setattr(Runner, "kernel", lambda self, batch, sample=False: kernels.append(sample) or
                        real_kernel(self, batch, sample))
    assert bench.main(["--dry-run", "--sample", "--baselines", "--schedulers", "round_robin",
                       "--out", str(tmp_path)]) == 0
    (r,) = json.loads((tmp_path / "bench.json").read_text())["results"]
    greedy, sample = r["systems"]["megagen_round_robin"], r["systems"]["megagen_round_robin_sample"]
    assert sample["sampling_settings"] == bench.SAMPLE_SETTINGS
    assert sample["cost_over_greedy"] == pytest.approx(sample["median_ms"] / greedy["median_ms"] - 1)
    assert kernels[0] is False and True in kernels  # greedy first, then the sampling kernel
    assert "megagen_round_robin_sample: drawing each token with" in (tmp_path / "bench.md").read_text()


def test_step_bytes_counts_weights_once_and_the_kv_cache():
    from megagen import models
    tied = models.random_model("tiny-qwen3", dtype=torch.float32)
    untied = models.random_model("tiny-llama", dtype=torch.float32)
    for model in (tied, untied):
        cfg = model.config
        kv = 2 * cfg.num_hidden_layers * cfg.num_key_value_heads * cfg.head_dim * 4  # float32
        params = {p.data_ptr(): p.numel() * 4 for p in model.parameters()}  # tied weights counted once
        embed = model.model.embed_tokens.weight.numel() * 4
        weights = sum(params.values()) - (0 if cfg.tie_word_embeddings else embed)
        assert bench.step_bytes(model, context=10, batch=3) == weights + kv * 10 * 3


@pytest.mark.parametrize("name", ["tiny-qwen3-moe", "tiny-mixtral"])
@pytest.mark.parametrize("batch", [1, 3])
def test_step_bytes_of_a_mixture_counts_the_rows_routed_experts(name, batch):
    """The MoE floor against a count of the model's own tensors: every parameter outside the experts (router, and
    the dense MLP of Qwen3-MoE's mlp_only_layers), plus each sparse layer's expert slices averaged over every way
    the batch's rows can route (each row a uniformly drawn set of k experts), a shared expert counted once."""
    from megagen import models
    model = models.random_model(name, dtype=torch.float32)
    cfg = model.config
    assert not cfg.tie_word_embeddings, "test setup: the embedding table is not read by a decode step"
    outside = sum(p.nbytes for n, p in model.named_parameters() if ".mlp.experts." not in n and "embed_tokens" not in n)
    sparse = [layer.mlp for layer in model.model.layers if hasattr(layer.mlp, "experts")]
    assert len(sparse) == (2 if name == "tiny-qwen3-moe" else cfg.num_hidden_layers) < 4
    routed = 0.0
    for mlp in sparse:
        num = mlp.gate.weight.shape[0]
        per_expert = [sum(p[e].nbytes for p in mlp.experts.parameters()) for e in range(num)]
        choices = list(itertools.combinations(range(num), mlp.gate.top_k))
        unions = [set().union(*rows) for rows in itertools.product(choices, repeat=batch)]
        routed += sum(sum(per_expert[e] for e in union) for union in unions) / len(unions)
    kv = 2 * cfg.num_hidden_layers * cfg.num_key_value_heads * cfg.head_dim * 10 * batch * 4  # context 10, float32
    assert bench.step_bytes(model, context=10, batch=batch) == pytest.approx(outside + routed + kv, abs=1)


def test_without_a_gpu_bench_says_so():
    if not interpreting():
        pytest.skip("a GPU is here")
    r = subprocess.run([sys.executable, "-m", "megagen.bench", "--model", "Qwen3-0.6B"], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 2 and "no CUDA GPU" in r.stderr and "--dry-run" in r.stderr


def test_console_script_dispatches(capsys):
    from megagen import cli
    assert cli.main([]) == 2
    assert cli.main(["nonsense"]) == 2
    with pytest.raises(SystemExit) as exit_:  # reaches megagen.bench's own argument parser
        cli.main(["bench", "--help"])
    assert exit_.value.code == 0 and "megagen bench" in capsys.readouterr().out


def test_combine_merges_reports(tmp_path):
    def report(model, bw):
        return {"device": "GPU X", "driver": "1", "date": "2026-11-21", "command": f"megagen bench --model {model}",
                "torch": "t", "triton": "3.6.0", "transformers": "5.17.0", "megagen": "0", "dry_run": False,
                "baselines": ["hf_eager"], "options": {}, "copy_bandwidth_GBps": bw,
                "results": [{"model": model, "architecture": "A", "dtype": "bfloat16", "batch": 1, "context": 512,
                             "bytes_per_step": 10**9, "floor_ms": 0.25, "skipped": {},
                             "systems": {"hf_eager": dict(median_ms=2.0, min_ms=1.9, max_ms=2.2, steps=100,
                                                          tokens_per_s=500.0, fraction_of_floor=0.125),
                                         "megagen_round_robin": dict(median_ms=1.0, min_ms=0.9, max_ms=1.1,
                                                                     steps=100, tokens_per_s=1000.0,
                                                                     fraction_of_floor=0.25,
                                                                     speedup_vs={"hf_eager": 2.0})}}]}
    paths = []
    for i, (model, bw) in enumerate((("M1", 4000.0), ("M2", 4100.0))):
        paths.append(tmp_path / f"r{i}.json")
        paths[-1].write_text(json.dumps(report(model, bw)))
    assert bench.main(["--combine", *map(str, paths), "--out", str(tmp_path / "all")]) == 0
    merged = json.loads((tmp_path / "all" / "bench.json").read_text())
    assert [r["model"] for r in merged["results"]] == ["M1", "M2"]
    assert [c["copy_bandwidth_GBps"] for c in merged["combined_from"]] == [4000.0, 4100.0]
    md = (tmp_path / "all" / "bench.md").read_text()
    assert "## M1" in md and "## M2" in md and "2.00×" in md


def test_the_pdl_baseline_takes_tiling_options_of_its_own():
    args = bench.parse_args(["--option", "max_tile_rows=64", "--pdl-option", "block_n=16", "--pdl-option",
                             "block_k=512"])
    assert args.options == {"max_tile_rows": 64} and args.pdl_options == {"block_n": 16, "block_k": 512}
    assert bench.parse_args([]).pdl_options == {}


@pytest.mark.skipif(not interpreting(), reason="the dry run is the interpreter's harness check")
def test_a_baseline_the_model_cannot_run_is_reported_and_the_rest_still_run(tmp_path, monkeypatch):
    def no_eager(model, prompt):
        raise RuntimeError("data-dependent expert loop\nsecond line")
    monkeypatch.setattr(bench, "hf_eager", no_eager)
    assert bench.main(["--dry-run", "--schedulers", "round_robin", "--out", str(tmp_path)]) == 0
    (r,) = json.loads((tmp_path / "bench.json").read_text())["results"]
    assert r["skipped"]["hf_eager"] == "failed: RuntimeError: data-dependent expert loop"
    assert set(r["systems"]) == {"megagen_round_robin"} and r["systems"]["megagen_round_robin"]["speedup_vs"] == {}
    assert "| hf_eager | skipped: failed: RuntimeError: data-dependent expert loop |" in (tmp_path / "bench.md").read_text()


@pytest.mark.skipif(not interpreting(), reason="the dry run is the interpreter's harness check")
def test_megagens_own_refusal_in_a_baseline_is_not_hidden(tmp_path, monkeypatch):
    def refused(model, prompt):
        raise MegagenError("bad option")
    monkeypatch.setattr(bench, "hf_eager", refused)
    with pytest.raises(MegagenError, match="bad option"):
        bench.main(["--dry-run", "--schedulers", "round_robin", "--out", str(tmp_path)])
