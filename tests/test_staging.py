"""Weights staged in shared memory (megagen.tasks.staging): which tiles stage, what the GPU driver compiles to,
and (on a GPU) that staged GEMV tiles compute what the register path computes."""
from __future__ import annotations

import pytest
import torch

import megagen
from megagen import models
from megagen.backend import interpreting
from megagen.compiler import build_kernel
from megagen.decode import DecodeState, Tiling, decode_graph
from megagen.tasks import linear as Lin
from megagen.tasks.staging import STAGE_MAX_BYTES, area_bytes
from megagen.trace import trace
from mgutil import assert_matches, rand

DTYPES = [torch.bfloat16, torch.float16]


def test_stage_bytes_rules():
    w = torch.empty(256, 1024, dtype=torch.bfloat16)
    fit = (STAGE_MAX_BYTES - area_bytes(0, 1024)) // (1024 * 2)  # rows of 1024 bf16 columns the area holds
    assert Lin.stage_bytes(w, 1, fit, 1024) == area_bytes(fit * 1024 * 2, 1024) <= STAGE_MAX_BYTES
    # the mbarrier's line, the box and the input, each on 128-byte lines
    assert Lin.stage_bytes(w, 1, 8, 512) == 128 + 8 * 512 * 2 + 512 * 4
    assert Lin.stage_bytes(w, 1, 4, 72) == 128 + 640 + 72 * 4  # a box of 576 bytes takes 5 lines
    assert not Lin.stage_bytes(w, 1, fit + 1, 1024)  # a box past the area
    assert not Lin.stage_bytes(w, 2, 8, 1024)  # a batch runs on tensor cores from registers
    assert not Lin.stage_bytes(w.float(), 1, 8, 1024)  # fp32 weights
    assert not Lin.stage_bytes(torch.empty(64, 1025, dtype=torch.bfloat16), 1, 8, 1025)  # rows not 16-byte aligned
    assert not Lin.stage_bytes(torch.empty(64 * 1024 + 8, dtype=torch.bfloat16)[1:-7].view(64, 1024), 1, 8, 1024)


def _decoder(**overrides):
    return trace(models.random_model("tiny-qwen3", dtype=torch.bfloat16, **overrides))


def _staged(graph) -> dict:
    return {op.name: op.plan.constexprs["STAGE_BYTES"] for op in graph.ops if "STAGE_BYTES" in op.plan.constexprs}


def test_a_decode_step_stages_every_projection_or_none(monkeypatch):
    decoder = _decoder()
    state = DecodeState.allocate(decoder, 1, 64)
    staged = _staged(decode_graph(decoder, state, 1, Tiling(8)))
    layers = {name: v for name, v in staged.items() if name.startswith("L")}
    assert len(layers) == 2 * 7 and all(layers.values())
    assert not any(_staged(decode_graph(decoder, state, 1, Tiling(8, stage_weights=False))).values())
    assert not any(_staged(decode_graph(decoder, DecodeState.allocate(decoder, 2, 64), 2, Tiling(8))).values())
    # one projection that cannot stage (here the down projection, the only one of K = intermediate size) turns
    # staging off for all: the L1 cache it takes would slow the phases that do not stage
    down_k = decoder.layers[0].down.weight.shape[1]
    real = Lin.stage_bytes
    monkeypatch.setattr(Lin, "stage_bytes", lambda w, batch, rows, chunk: w.shape[1] != down_k and real(w, batch, rows,
                                                                                                            chunk))
    assert not any(_staged(decode_graph(decoder, state, 1, Tiling(8))).values())


def _projections(dtype, device, stage: bool):
    """Staged GEMV shapes with every corner: a tail tile, a box of rows that is not whole row blocks, rows copied
    one by one (split K), the RMSNorm, activation and residual forms."""
    k, n = 512, 100
    x, res = rand(k, device=device), rand(n, device=device)
    norm_w = rand(k, device=device, dtype=dtype)
    w1 = rand(n, k, device=device, scale=k ** -0.5, dtype=dtype)
    w2 = rand(n, k, device=device, scale=k ** -0.5, dtype=dtype)
    w3 = rand(48, k, device=device, scale=k ** -0.5, dtype=dtype)
    gate, up = rand(k, device=device, dtype=dtype), rand(k, device=device, dtype=dtype)
    y1, y2, y3 = (torch.empty(n, device=device), torch.empty(2, n, device=device), torch.empty(48, device=device))
    g = megagen.TaskGraph("staged_projections", inputs=[x, res, norm_w, w1, w2, w3, gate, up])
    g.add(Lin.rmsnorm_gemv, w=w1, x=x, norm_w=norm_w, y=y1, BLOCK_N=16, BLOCK_K=128, TILE_ROWS=24, stage=stage)
    g.add(Lin.gemv_residual, w=w2, x=gate, residual=res, y=y2, BLOCK_N=16, BLOCK_K=128, TILE_ROWS=32, stage=stage)
    g.add(Lin.silu_mul_gemv, w=w3, x=gate, x2=up, y=y3, BLOCK_N=16, BLOCK_K=256, TILE_ROWS=16, stage=stage)
    return g, (y1, y2, y3)


def test_the_gpu_driver_stages_and_the_interpreters_does_not(device):
    """(test_gpu_compile compiles a staged GPU driver for sm_90.)"""
    g, _ = _projections(torch.bfloat16, device, stage=True)
    assert all(_staged(g).values())
    gpu = build_kernel([g], "round_robin", num_ctas=8, interleaved=False)
    # the area the largest box and its input take: w1's 24 rows of 512 columns and 512 inputs
    assert gpu.staging == area_bytes(24 * 512 * 2, 512) == max(_staged(g).values())
    assert f"stage = stage_area(arg_area, {gpu.staging})" in gpu.source and all(v.staged for v in gpu.variants)
    interpreted = build_kernel([g], "round_robin", num_ctas=8, interleaved=True)
    assert not interpreted.staging and "stage = None" in interpreted.source
    assert "stage_area" not in interpreted.source
    plain, _ = _projections(torch.bfloat16, device, stage=False)
    assert not build_kernel([plain], "round_robin", num_ctas=8, interleaved=False).staging


ON_GPU_ONLY = pytest.mark.skipif(interpreting(), reason="staging runs on a GPU only (the interpreter runs no inline PTX)")


@ON_GPU_ONLY
@pytest.mark.parametrize("dtype", DTYPES)
def test_staged_tiles_compute_what_the_register_path_computes(dtype, device):
    torch.manual_seed(0)
    staged, outs = _projections(dtype, device, stage=True)
    torch.manual_seed(0)
    plain, expected = _projections(dtype, device, stage=False)
    # two CTAs: each runs many staged tiles one after another, reusing its area and its barrier's phases
    mk_staged, mk_plain = staged.compile("round_robin", num_ctas=2), plain.compile("round_robin", num_ctas=2)
    assert mk_staged.build.staging and not mk_plain.build.staging
    for _ in range(3):  # launches after the first find the barrier and the area as the one before left them
        for t in outs + expected:
            t.fill_(float("nan"))
        mk_staged.run()
        mk_plain.run()
        for name, got, want in zip(("rmsnorm_gemv", "gemv_residual", "silu_mul_gemv"), outs, expected):
            assert_matches(got, want, rtol=1e-4, atol=1e-5, what=name)


@ON_GPU_ONLY
def test_a_staged_decode_step_gives_the_register_paths_tokens(device):
    """Every projection staged, four CTAs taking turns over the tiles, against the same model with staging off: the
    same greedy tokens. The last split of each KV head merges the attention's splits in both (where o stages, it
    would merge them itself, summing in another order: test_o_tiles_merging_the_splits_...)."""
    model = models.random_model("tiny-qwen3", dtype=torch.bfloat16, device=device)
    ids = torch.randint(3, model.config.vocab_size, (1, 20), device=device)
    runs = {}
    for stage in (True, False):
        runner = megagen.build(model, max_seq_len=64, num_ctas=4, attention_split_keys=8, stage_weights=stage,
                               merge_in_o=False)
        assert bool(runner.kernel(1, False).build.staging) == stage
        runs[stage] = runner.generate(ids, max_new_tokens=12)
    assert torch.equal(runs[True], runs[False])


def _o_inputs(graph) -> dict:
    return {op.name: (op.task.name, sorted(op.tensors)) for op in graph.ops
            if op.name.endswith((".attention", ".o_proj"))}


def test_the_o_projection_merges_the_attention_splits_where_it_stages():
    decoder = _decoder()
    state = DecodeState.allocate(decoder, 1, 64)
    merged = _o_inputs(decode_graph(decoder, state, 1, Tiling(8)))
    assert merged["L0.attention"][0] == "qk_norm_split_attention" and "out" not in merged["L0.attention"][1]
    assert merged["L0.o_proj"] == ("merge_gemv_residual", ["residual", "w", "x", "x2", "y"])
    # the last split of each KV head merges them where o does not stage, at a batch, or when told to
    for graph in (decode_graph(decoder, state, 1, Tiling(8, stage_weights=False)),
                  decode_graph(decoder, DecodeState.allocate(decoder, 2, 64), 2, Tiling(8)),
                  decode_graph(decoder, state, 1, Tiling(8, merge_in_o=False))):
        ops = _o_inputs(graph)
        assert ops["L0.attention"][0] == "qk_norm_attention" and ops["L0.o_proj"][0] in ("gemv_residual", "gemv")


@pytest.mark.parametrize("name", ["tiny-qwen3", "tiny-llama"])
def test_o_tiles_merging_the_splits_decode_as_the_last_split_merging_them(name):
    """The same bf16 model, context and prompt; each op agrees with its reference, and the logits of the two forms
    agree (both round the merged heads to the model dtype; only the order of their sums may differ)."""
    device = "cpu" if interpreting() else "cuda"
    torch.manual_seed(0)
    model = models.random_model(name, dtype=torch.bfloat16, device=device)
    prompt = torch.randint(3, model.config.vocab_size, (1, 7), device=device)
    logits, tokens = {}, {}
    for merge_in_o in (True, False):
        runner = megagen.build(model, max_seq_len=32, merge_in_o=merge_in_o)
        tasks = {op.task.name for op in runner.task_graph.ops}
        assert ("merge_gemv_residual" in tasks) == merge_in_o
        tokens[merge_in_o] = runner.generate(prompt, max_new_tokens=3)
        lm_head = next(op for op in runner.task_graph.ops if op.name == "lm_head")
        logits[merge_in_o] = lm_head.tensors["y"].float().clone()  # the last step's
        if merge_in_o:
            assert megagen.find_mismatch(runner.task_graph) is None
    assert torch.equal(tokens[True], tokens[False])
    assert_matches(logits[True], logits[False], rtol=2e-2, atol=2e-2)


def _qwen3_06b_layers(layers: int, device="cpu"):
    """Qwen3-0.6B's layer shapes (hidden 1024, intermediate 3072, 16 heads of 128), a small vocabulary."""
    return models.random_model("Qwen3-0.6B", dtype=torch.bfloat16, device=device, num_hidden_layers=layers,
                               vocab_size=512)


def _tile_counts(graph) -> dict:
    return {op.name.split(".")[-1]: (op.num_tiles, op.plan.constexprs.get("TILE_ROWS")) for op in graph.ops
            if op.name.startswith("L0.")}


def test_gate_up_takes_taller_tiles_where_its_neighbours_would_share_its_ctas():
    """Qwen3-0.6B's layer on 264 CTAs (an H100's two an SM): 192 gate/up tiles of 32 rows leave 56 of the 128 down
    tiles (and of the 128 o tiles) on CTAs that run a gate/up tile just before (after); 128 of 48 rows none."""
    decoder = trace(_qwen3_06b_layers(1))
    state = DecodeState.allocate(decoder, 1, 64)
    wide = decode_graph(decoder, state, 1, Tiling(264))
    counts = _tile_counts(wide)
    assert counts["gate_proj"] == counts["up_proj"] == (64, 48)
    assert counts["o_proj"][0] + 128 <= 264 and counts["down_proj"][0] + 128 <= 264
    assert max(_staged(wide).values()) == area_bytes(48 * 1024 * 2, 1024) <= STAGE_MAX_BYTES
    for narrow in (decode_graph(decoder, state, 1, Tiling(264, wide_gate_up=False)),  # told not to
                   decode_graph(decoder, state, 1, Tiling(264, stage_weights=False))):  # tiles that do not stage
        assert _tile_counts(narrow)["gate_proj"] == (96, 32)
    batch = DecodeState.allocate(decoder, 2, 64)  # a batch's tiles do not stage
    assert (_tile_counts(decode_graph(decoder, batch, 2, Tiling(264)))
            == _tile_counts(decode_graph(decoder, batch, 2, Tiling(264, wide_gate_up=False))))
    assert _tile_counts(decode_graph(decoder, state, 1, Tiling(512)))["gate_proj"] == (96, 32)  # CTAs enough


def test_staged_phases_start_their_copies_at_the_issue_rate():
    """Where the projections stage, each phase spreads its tiles' copy starts over its weight bytes / copy_issue_rate
    SM cycles (q, k and v as one phase, gate and up as one); the lm_head, which does not stage, does not spread,
    nor does any op where nothing stages; rate 0 turns it off, and a negative rate is refused."""
    decoder = trace(_qwen3_06b_layers(1))
    state = DecodeState.allocate(decoder, 1, 64)
    layer = decoder.layers[0]

    def spreads(tiling, state=state, batch=1):
        g = decode_graph(decoder, state, batch, tiling)
        return {op.name.split(".")[-1]: op.plan.constexprs["COPY_SPREAD"] for op in g.ops
                if "COPY_SPREAD" in op.plan.constexprs}

    def cycles(rate, *linears):
        return round(sum(lin.weight.nbytes for lin in linears) / rate)

    rate = Tiling(264).copy_issue_rate
    on = spreads(Tiling(264))
    qkv = cycles(rate, layer.attn.q, layer.attn.k, layer.attn.v)
    assert on["q_proj"] == on["k_proj"] == on["v_proj"] == qkv > 0
    assert on["o_proj"] == cycles(rate, layer.attn.o) > 0
    assert on["gate_proj"] == on["up_proj"] == cycles(rate, layer.gate, layer.up) > qkv
    assert on["down_proj"] == cycles(rate, layer.down) > 0
    assert on["lm_head"] == 0
    assert spreads(Tiling(264, copy_issue_rate=2 * rate))["up_proj"] == cycles(2 * rate, layer.gate, layer.up)
    assert set(spreads(Tiling(264, copy_issue_rate=0)).values()) == {0}
    assert set(spreads(Tiling(264, stage_weights=False)).values()) == {0}
    assert set(spreads(Tiling(264), DecodeState.allocate(decoder, 2, 64), 2).values()) == {0}
    with pytest.raises(megagen.MegagenError, match="copy_issue_rate must be an int of at least 0, got -1"):
        Tiling(264, copy_issue_rate=-1)
    with pytest.raises(megagen.TaskDefinitionError, match="COPY_SPREAD"):
        Lin.linear_plan(torch.empty(64, 64, dtype=torch.bfloat16), torch.empty(64, dtype=torch.bfloat16),
                        torch.empty(64), COPY_SPREAD=-5)


@ON_GPU_ONLY
def test_wide_gate_up_tiles_decode_as_their_references(device):
    """The 96 KB boxes of the wide gate/up tiles (the largest staging area) on a GPU: every op agrees with its
    reference, and the greedy tokens are the register path's."""
    torch.manual_seed(0)
    model = _qwen3_06b_layers(2, device)
    prompt = torch.randint(3, model.config.vocab_size, (1, 9), device=device)
    tokens = {}
    for stage in (True, False):
        runner = megagen.build(model, max_seq_len=32, num_ctas=264, stage_weights=stage)
        tokens[stage] = runner.generate(prompt, max_new_tokens=4)
        if stage:
            assert runner.kernel(1, False).build.staging == area_bytes(48 * 1024 * 2, 1024)
            assert megagen.find_mismatch(runner.task_graph) is None
    assert torch.equal(tokens[True], tokens[False])
