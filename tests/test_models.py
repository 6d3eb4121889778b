"""megagen.build(model) on HuggingFace causal LMs: tokens and logits against transformers itself.

Every model here is a tiny random-weight float32 model (``models.random_model``); its weights are
drawn with ``initializer_range=0.3`` so that greedy decoding wanders through the vocabulary instead
of repeating one token (with HuggingFace's default 0.02 most tiny models emit a single token over
and over, which would make a token comparison nearly vacuous).

The reference is always transformers: ``model.generate(ids, do_sample=False, max_new_tokens=N)``
for the tokens, and one full forward pass over the generated sequence for each MegaKernel decode
step's logits. A decode step takes a few seconds in Triton's interpreter, so runners are built
once per module and shared, and the number of decode steps is kept small.
"""
from __future__ import annotations

import copy

import networkx as nx
import pytest
import torch

import megagen
from megagen import models
from megagen.backend import default_device
from megagen.runner import EOS_CHECK_EVERY
from megagen.runtime import MegaKernel

DEVICE = default_device()  # the CPU under the interpreter, else the GPU

MAX_SEQ_LEN = 32
INIT = dict(initializer_range=0.3)
LOGITS_RTOL = 1e-4  # max |megagen - HF| / max |HF|, per batch row and decode step


# ---------------------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------------------

def tiny(name: str, **overrides):
    return models.random_model(name, dtype=torch.float32, device=DEVICE, **{**INIT, **overrides})


def prompt(batch: int, length: int, seed: int = 1) -> torch.Tensor:
    """Random token ids in 3..255: clear of bos/eos/pad ids (0..2), so HF never infers an attention mask."""
    return torch.randint(3, 256, (batch, length), generator=torch.Generator().manual_seed(seed)).to(DEVICE)


@torch.no_grad()
def hf_generate(model, ids: torch.Tensor, new: int) -> torch.Tensor:
    return model.generate(ids, do_sample=False, max_new_tokens=new)


@torch.no_grad()
def check_against_hf(runner, model, ids: torch.Tensor, new: int, *, expect_full_length: bool = True):
    """Generate with megagen and with HF; tokens must be equal and every decode step's logits within tolerance."""
    ref = hf_generate(model, ids, new)
    seq, logits = runner.generate(ids, max_new_tokens=new, return_logits=True)
    assert seq.dtype == ref.dtype and seq.shape == ref.shape and torch.equal(seq, ref), (
        f"tokens differ from HF generate:\nmegagen {seq.tolist()}\nHF      {ref.tolist()}")
    if expect_full_length:
        assert ref.shape[1] == ids.shape[1] + new, "test setup: HF stopped early (eos); pick another prompt"
    assert logits.shape == (ids.shape[0], seq.shape[1] - ids.shape[1], model.config.vocab_size), (
        f"expected logits [batch, new tokens, vocab], got {tuple(logits.shape)}")
    full = model(ref).logits  # causal: position t's logits depend on tokens 0..t only
    length = ids.shape[1]
    for i in range(logits.shape[1]):
        got = logits[:, i]
        want = full[:, length - 1 + i]
        assert tuple(got.shape) == tuple(want.shape), f"step {i}: logits shape {tuple(got.shape)} != {tuple(want.shape)}"
        for b in range(want.shape[0]):
            err = ((got[b].float() - want[b]).abs().max() / want[b].abs().max()).item()
            assert err <= LOGITS_RTOL, f"step {i}, row {b}: relative logits error {err:.3g} > {LOGITS_RTOL}"
        # the token taken at this step is the argmax of these logits
        assert torch.equal(got.argmax(-1), ref[:, length + i]), f"step {i}: token is not the argmax of the logits"
    return seq


# ---------------------------------------------------------------------------------------------------------
# shared runners (one per family; the interpreter makes every decode step expensive)
# ---------------------------------------------------------------------------------------------------------

# family -> (max_batch_size, batch, prompt length); mistral's prompt and generation pass its window of 8;
# llama is batch 2 so its batch-2 kernel is reused by the eos tests; qwen2 takes batch 3 for the batch tests.
FAMILIES = {
    "tiny-qwen3": (1, 1, 5),
    "tiny-llama": (2, 2, 5),
    "tiny-qwen2": (3, 1, 6),
    "tiny-mistral": (2, 2, 10),
}
FAMILY_NEW_TOKENS = 9  # prefill + 8 MegaKernel decode steps


@pytest.fixture(scope="module")
def family():
    cache = {}

    def get(name):
        if name not in cache:
            model = tiny(name)
            # 8 keys a split: a 32-slot cache still splits, so these tests run the split attention and its merge
            runner = megagen.build(model, max_seq_len=MAX_SEQ_LEN, max_batch_size=FAMILIES[name][0],
                                   attention_split_keys=8)
            cache[name] = (model, runner)
        return cache[name]

    return get


# ---------------------------------------------------------------------------------------------------------
# 1. every family, float32: tokens equal HF generate, logits match a full HF forward
# ---------------------------------------------------------------------------------------------------------

def _check_family_setup(name, model):
    """The preset really exercises what distinguishes its family (or the test would prove little)."""
    attn = model.model.layers[0].self_attn
    if name == "tiny-qwen3":
        assert hasattr(attn, "q_norm") and hasattr(attn, "k_norm")
        assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()
    elif name == "tiny-llama":
        assert model.model.rotary_emb.rope_type == "llama3"
    elif name == "tiny-qwen2":
        assert attn.q_proj.bias is not None and attn.k_proj.bias is not None and attn.v_proj.bias is not None
    elif name == "tiny-mistral":
        assert model.config.sliding_window == 8


@pytest.mark.parametrize("name", list(FAMILIES))
def test_family_matches_hf(name, family):
    model, runner = family(name)
    _check_family_setup(name, model)
    _, batch, length = FAMILIES[name]
    ids = prompt(batch, length, seed=11 + list(FAMILIES).index(name))
    seq = check_against_hf(runner, model, ids, FAMILY_NEW_TOKENS)
    if name == "tiny-mistral":
        # the window must matter here: without it, HF's logits over this sequence are different
        assert seq.shape[1] > 8 and length > 8
        unwindowed = tiny(name, sliding_window=None)
        assert all(torch.equal(x, y) for x, y in zip(model.state_dict().values(), unwindowed.state_dict().values()))
        with torch.no_grad():
            a = model(seq).logits[:, length:]
            b = unwindowed(seq).logits[:, length:]
        assert (a - b).abs().max() > 1e-2 * a.abs().max(), "test setup: the sliding window changes nothing"


# ---------------------------------------------------------------------------------------------------------
# 2. attention and RoPE variants on tiny-llama
# ---------------------------------------------------------------------------------------------------------

VARIANTS = {
    "mha": dict(num_key_value_heads=4),
    "mqa": dict(num_key_value_heads=1),
    "rope_linear": dict(rope_scaling={"rope_type": "linear", "factor": 2.0}),
    "rope_yarn": dict(rope_scaling={"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32}),
    "tied_lm_head": dict(tie_word_embeddings=True),
}


def _check_variant_setup(variant, model):
    attn = model.model.layers[0].self_attn
    tied = model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()
    if variant == "mha":
        assert attn.k_proj.out_features == attn.q_proj.out_features == 64
    elif variant == "mqa":
        assert attn.k_proj.out_features == attn.v_proj.out_features == 16
    elif variant == "rope_linear":
        assert model.model.rotary_emb.rope_type == "linear"
    elif variant == "rope_yarn":
        assert model.model.rotary_emb.rope_type == "yarn"
    if variant == "tied_lm_head":
        assert tied
    else:
        assert not tied


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_llama_variant_matches_hf(variant):
    model = tiny("tiny-llama", **VARIANTS[variant])
    _check_variant_setup(variant, model)
    runner = megagen.build(model, max_seq_len=MAX_SEQ_LEN)
    check_against_hf(runner, model, prompt(1, 6, seed=5), 4)  # prefill + 3 decode steps


def test_qwen2_per_layer_sliding_window():
    """Qwen2 slides only on the layers config.layer_types marks (here layer 1 of 2, window 4)."""
    model = tiny("tiny-qwen2", use_sliding_window=True, sliding_window=4, max_window_layers=1)
    assert [layer.self_attn.sliding_window for layer in model.model.layers] == [None, 4]
    runner = megagen.build(model, max_seq_len=MAX_SEQ_LEN)
    seq = check_against_hf(runner, model, prompt(1, 8, seed=6), 4)
    with torch.no_grad():
        a = model(seq).logits[:, 8:]
        full = tiny("tiny-qwen2")
        assert all(torch.equal(x, y) for x, y in zip(model.state_dict().values(), full.state_dict().values()))
        b = full(seq).logits[:, 8:]
    assert (a - b).abs().max() > 1e-2 * a.abs().max(), "test setup: the sliding window changes nothing"


# ---------------------------------------------------------------------------------------------------------
# 3. batch sizes: one runner, batch 3 then batch 1
# ---------------------------------------------------------------------------------------------------------

def test_batch_three_then_one(family):
    model, runner = family("tiny-qwen2")
    assert runner.max_batch_size == 3
    check_against_hf(runner, model, prompt(3, 7, seed=21), 3)
    # batch 1 after batch 3: rows 1 and 2 of the state hold stale positions and cache
    check_against_hf(runner, model, prompt(1, 4, seed=22), 3)


# ---------------------------------------------------------------------------------------------------------
# 4. a checkpoint loaded from a local path
# ---------------------------------------------------------------------------------------------------------

def test_from_pretrained_local_path(tmp_path):
    from transformers import AutoModelForCausalLM
    tiny("tiny-qwen3", seed=3).save_pretrained(tmp_path)
    model = AutoModelForCausalLM.from_pretrained(tmp_path, dtype=torch.float32).to(DEVICE).eval()
    runner = megagen.build(model, max_seq_len=MAX_SEQ_LEN)
    ids = prompt(1, 5, seed=31)
    ref = hf_generate(model, ids, 3)
    assert torch.equal(runner.generate(ids, max_new_tokens=3), ref)


def _prompt_without_near_ties(model, fp32, batch: int):
    """A prompt on which HuggingFace's bf16 and fp32 models generate the same tokens, and those tokens. Where they
    differ (a near-tie), bf16 rounding in another order may go either way, and megagen's tokens follow one or the
    other; which prompts have near-ties depends on the device's arithmetic, so the first without one is used."""
    for seed in range(1, 40):
        ids = prompt(batch, 6, seed=seed)
        ref = hf_generate(model, ids, 4)
        if torch.equal(ref, hf_generate(fp32, ids, 4)):
            return ids, ref
    raise AssertionError("test setup: every prompt tried has a near-tie between HF bf16 and fp32")


# batch 3: the GEMVs run as bf16 tensor-core products; with 16 CTAs q/k/v split K as well
@pytest.mark.parametrize("batch, num_ctas", [(1, None), (3, None), (3, 16)], ids=["1", "3", "3-split-qkv"])
def test_bfloat16_model_matches_hf(batch, num_ctas):
    """A bf16 model (random_model's and a bf16 checkpoint's default dtype) gives HuggingFace's tokens, and
    logits as close to an fp32 forward as HuggingFace's own bf16 ones. Under the interpreter this needs
    megagen.interpreter's bf16 fixes: without them a bf16 tl.dot multiplies the raw bits."""
    model = models.random_model("tiny-qwen3", device=DEVICE, **INIT)
    assert model.dtype == torch.bfloat16
    fp32 = models.random_model("tiny-qwen3", dtype=torch.float32, device=DEVICE, **INIT)  # the same draws
    options = {} if num_ctas is None else dict(num_ctas=num_ctas, qkv_split_min_k=1)
    runner = megagen.build(model, max_seq_len=MAX_SEQ_LEN, max_batch_size=batch, **options)
    if num_ctas is not None:
        assert _qkv_parts(runner, batch) > 1
    ids, ref = _prompt_without_near_ties(model, fp32, batch)
    seq, logits = runner.generate(ids, max_new_tokens=4, return_logits=True)
    assert torch.equal(seq, ref), f"tokens differ from HF generate:\nmegagen {seq.tolist()}\nHF      {ref.tolist()}"
    with torch.no_grad():
        exact = fp32(ref).logits[:, ids.shape[1] - 1:-1].float()
        hf = model(ref).logits[:, ids.shape[1] - 1:-1].float()
    ours_err = (logits.float() - exact).abs().max().item()
    hf_err = (hf - exact).abs().max().item()
    assert 0 < hf_err and ours_err <= 2 * hf_err, f"megagen's bf16 logits are {ours_err:.3g} from fp32, HF's {hf_err:.3g}"


def _qkv_parts(runner, batch: int) -> int:
    """How many split-K partial sums the first layer's q projection writes for the attention."""
    return next(op for op in runner.kernel(batch).task_graph.ops if op.name == "L0.q_proj").tensors["y"].shape[0]


@pytest.mark.parametrize("name", ["tiny-qwen3", "tiny-llama"])
def test_split_k_projections_match_hf(name):
    """Where a batch leaves CTAs idle, q/k/v split K: the attention adds their fp32 partial sums and rounds
    them to the model dtype itself. Tokens and logits still match HF (tiny-qwen3: q/k RMSNorm on the sums)."""
    model = tiny(name)
    runner = megagen.build(model, max_seq_len=MAX_SEQ_LEN, max_batch_size=2, num_ctas=16, attention_split_keys=8,
                           qkv_split_min_k=1)
    assert _qkv_parts(runner, 2) > 1 and _qkv_parts(runner, 1) == 1, "split only for a batch"
    default = megagen.build(model, max_seq_len=MAX_SEQ_LEN, max_batch_size=2, num_ctas=16)
    assert _qkv_parts(default, 2) == 1, f"hidden size {model.config.hidden_size}: below the default qkv_split_min_k"
    check_against_hf(runner, model, prompt(2, 5, seed=5), 5)


def _op_names(runner, batch: int) -> set[str]:
    return {op.name for op in runner.kernel(batch).task_graph.ops}


def test_rmsnorm_phase_for_a_batch_matches_hf(family):
    """From norm_phase_min_batch on, the RMSNorms before q/k/v, gate/up and the lm_head are ops of their own and
    the GEMVs read their rows (here also at batch 1, with 16-row weight blocks for the batch and the o and down
    projections unsplit): HF's tokens and logits. By default batch 1 keeps them fused."""
    model = tiny("tiny-llama")
    runner = megagen.build(model, max_seq_len=MAX_SEQ_LEN, max_batch_size=2, num_ctas=16, attention_split_keys=8,
                           norm_phase_min_batch=1, batch_block_rows=16, stream_k_splits=1)
    norms = {"L0.input_norm", "L0.post_norm", "L1.input_norm", "final_norm"}
    assert norms <= _op_names(runner, 2) and norms <= _op_names(runner, 1)
    _, default = family("tiny-llama")
    down = [next(op for op in r.kernel(b).task_graph.ops if op.name == "L0.down_proj").tensors["y"].shape[0]
            for r, b in ((runner, 2), (default, 2))]
    assert down[0] == 1 < down[1], f"stream_k_splits=1 leaves the down projection unsplit: {down}"
    check_against_hf(runner, model, prompt(2, 5, seed=6), 4)
    check_against_hf(runner, model, prompt(1, 5, seed=7), 4)
    assert not norms & _op_names(default, 1) and norms <= _op_names(default, 2)
    with pytest.raises(megagen.MegagenError, match="batch_block_rows must be 16, 32 or 64"):
        megagen.build(model, max_seq_len=MAX_SEQ_LEN, batch_block_rows=24)


# ---------------------------------------------------------------------------------------------------------
# 5. unsupported models and settings
# ---------------------------------------------------------------------------------------------------------

def test_gpt2_is_unsupported_naming_module_and_operation():
    from transformers import GPT2Config, GPT2LMHeadModel
    model = GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab_size=64)).eval()
    with pytest.raises(megagen.UnsupportedModelError) as info:
        megagen.build(model, max_seq_len=MAX_SEQ_LEN)
    msg = str(info.value)
    assert "transformer.h.0.ln_1" in msg and "LayerNorm" in msg, msg


def test_gelu_llama_is_unsupported():
    model = models.random_model("tiny-llama", dtype=torch.float32, hidden_act="gelu")
    with pytest.raises(megagen.UnsupportedModelError, match=r"(?i)gelu"):
        megagen.build(model, max_seq_len=MAX_SEQ_LEN)


def test_dynamic_rope_is_unsupported():
    model = models.random_model("tiny-llama", dtype=torch.float32, rope_scaling={"rope_type": "dynamic", "factor": 2.0})
    assert model.model.rotary_emb.rope_type == "dynamic"
    with pytest.raises(megagen.UnsupportedModelError) as info:
        megagen.build(model, max_seq_len=MAX_SEQ_LEN)
    assert "model.rotary_emb" in str(info.value) and "dynamic" in str(info.value), str(info.value)


@pytest.mark.parametrize("obj", [torch.nn.Linear(4, 4), "tiny-llama", None], ids=["nn.Linear", "str", "None"])
def test_non_model_is_rejected(obj):
    with pytest.raises(megagen.MegagenError):
        megagen.build(obj, max_seq_len=MAX_SEQ_LEN)


def test_float64_model_is_rejected():
    model = models.random_model("tiny-qwen3", dtype=torch.float64)
    with pytest.raises(megagen.MegagenError, match="float64"):
        megagen.build(model, max_seq_len=MAX_SEQ_LEN)


# ---------------------------------------------------------------------------------------------------------
# 6. bad input: a clear MegagenError before anything runs, and the runner still works afterwards
# ---------------------------------------------------------------------------------------------------------

BAD_INPUTS = [
    (lambda: dict(input_ids=torch.tensor([[5, 256, 7]])), r"256"),                     # id == vocab
    (lambda: dict(input_ids=torch.tensor([[5, 300, 7]])), r"300"),                     # id > vocab
    (lambda: dict(input_ids=torch.tensor([[5, -1, 7]])), r"-1"),                       # negative id
    (lambda: dict(input_ids=prompt(1, 30), max_new_tokens=3), r"max_seq_len"),        # 30 + 3 > 32
    (lambda: dict(input_ids=prompt(1, 4), max_new_tokens=MAX_SEQ_LEN), r"max_seq_len"),
    (lambda: dict(input_ids=prompt(2, 4)), r"max_batch_size"),                        # batch 2 > 1
    (lambda: dict(input_ids=prompt(1, 4).float()), r"(?i)int"),                       # float ids
    (lambda: dict(input_ids=prompt(1, 4), max_new_tokens=0), r"max_new_tokens"),
    (lambda: dict(input_ids=torch.zeros(1, 0, dtype=torch.int64)), r"length"),        # empty prompt
    (lambda: dict(input_ids=prompt(1, 4), max_new_token=2), r"did you mean 'max_new_tokens'"),  # misspelt
    (lambda: dict(input_ids=prompt(1, 4), do_samples=True), r"did you mean 'do_sample'"),
    (lambda: dict(input_ids=prompt(1, 4), do_sample="yes"), r"do_sample must be True, False or None"),
    (lambda: dict(input_ids=prompt(1, 4), do_sample=True, temperature=0.0), r"temperature must be a positive"),
    (lambda: dict(input_ids=prompt(1, 4), do_sample=True, temperature=-0.5), r"temperature must be a positive"),
    (lambda: dict(input_ids=prompt(1, 4), top_p=0.0), r"top_p must be in \(0, 1\]"),       # even when greedy
    (lambda: dict(input_ids=prompt(1, 4), do_sample=True, top_p=1.5), r"top_p must be in \(0, 1\]"),
    (lambda: dict(input_ids=prompt(1, 4), top_k=-1), r"top_k must be >= 0"),
    (lambda: dict(input_ids=prompt(1, 4), do_sample=True, top_k=100), r"more than max_top_k=64"),
    (lambda: dict(input_ids=prompt(1, 4), do_sample=True, top_k=None, top_p=0.9), r"top_p=0.9 without top_k"),
]


def test_bad_input_is_rejected_before_running(family, monkeypatch):
    model, runner = family("tiny-qwen3")
    assert runner.max_batch_size == 1 and runner.max_seq_len == MAX_SEQ_LEN
    calls = []
    real_forward, real_run = model.forward, MegaKernel.run
    monkeypatch.setattr(model, "forward", lambda *a, **k: calls.append("forward") or real_forward(*a, **k))
    monkeypatch.setattr(MegaKernel, "run", lambda self, *a, **k: calls.append("run") or real_run(self, *a, **k))
    for make, pattern in BAD_INPUTS:
        kwargs = {"max_new_tokens": 2, **make()}
        with pytest.raises(megagen.MegagenError, match=pattern):
            runner.generate(**kwargs)
        assert not calls, f"{kwargs}: the model or the MegaKernel ran before the error ({calls})"
    monkeypatch.undo()
    # still correct afterwards, right at the limit: prompt + new tokens == max_seq_len
    check_against_hf(runner, model, prompt(1, MAX_SEQ_LEN - 3, seed=41), 3)


def test_bad_build_arguments(family):
    model, _ = family("tiny-qwen3")
    with pytest.raises(megagen.MegagenError, match="max_batch_size"):
        megagen.build(model, max_seq_len=MAX_SEQ_LEN, max_batch_size=9)
    assert model.config.max_position_embeddings == 256
    with pytest.raises(megagen.MegagenError, match="max_seq_len"):
        megagen.build(model, max_seq_len=257)


@pytest.mark.parametrize("option, closest", [("max_seq_length", "max_seq_len"), ("batch_size", "max_batch_size"),
                                             ("num_cta", "num_ctas"), ("blockn", "block_n")])
def test_misspelt_build_option_names_the_closest(family, monkeypatch, option, closest):
    model, _ = family("tiny-qwen3")
    monkeypatch.setattr(megagen.runner, "trace", lambda m: pytest.fail("traced before refusing the option"))
    with pytest.raises(megagen.MegagenError) as info:
        megagen.build(model, **{option: 2})
    msg = str(info.value)
    assert f"no option {option!r}" in msg and f"did you mean {closest!r}" in msg, msg
    assert "max_seq_len" in msg and "num_warps" in msg and "block_k" in msg, f"valid options not listed: {msg}"


# ---------------------------------------------------------------------------------------------------------
# 7. what the runner exposes
# ---------------------------------------------------------------------------------------------------------

def test_runner_exposes_graph_schedule_and_source(family):
    model, runner = family("tiny-qwen3")
    g = runner.graph
    assert isinstance(g, nx.DiGraph)
    nodes = set(g.nodes)
    for layer in range(model.config.num_hidden_layers):
        for op in ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"):
            assert f"L{layer}.{op}" in nodes, f"L{layer}.{op} missing from {sorted(nodes)}"
    assert "lm_head" in nodes
    assert nx.is_directed_acyclic_graph(g)
    assert nx.has_path(g, "L0.q_proj", "lm_head")
    flat, _ = runner.schedule.flat()  # every task of the decode step, placed exactly once
    assert sorted(flat.tolist()) == list(range(runner.kernel(1).dag.num_tasks))
    assert "def megakernel" in runner.source


# ---------------------------------------------------------------------------------------------------------
# 8. end of sequence: HF stops early and pads finished rows; megagen must return the same
# ---------------------------------------------------------------------------------------------------------

def _with_generation_config(model, monkeypatch, **settings):
    config = copy.deepcopy(model.generation_config)
    for k, v in settings.items():
        setattr(config, k, v)
    monkeypatch.setattr(model, "generation_config", config)


def _first_new(tokens: list[int], step: int) -> int:
    """The first step >= ``step`` whose token does not appear earlier in the row."""
    for s in range(step, len(tokens)):
        if tokens[s] not in tokens[:s]:
            return s
    raise AssertionError(f"test setup: no usable eos candidate in {tokens}")


def _two_row_eos(rows: list[list[int]]) -> tuple[int, int]:
    """Steps s0 < s1 - 1 such that row 0 first ends at s0 and row 1 first ends at s1 with eos {rows[0][s0], rows[1][s1]}."""
    for s1 in range(len(rows[1]) - 2, 1, -1):  # s1 < last step: HF stops early
        for s0 in range(1, s1 - 1):
            eos = {rows[0][s0], rows[1][s1]}
            if not eos & set(rows[0][:s0]) and not eos & set(rows[1][:s1]) and rows[0][s0] != rows[1][s1]:
                return s0, s1
    raise AssertionError(f"test setup: no usable eos pair in {rows}")


def test_eos_stops_early_batch_one(family, monkeypatch):
    model, runner = family("tiny-llama")
    assert model.generation_config.eos_token_id == 2
    new = 5
    _with_generation_config(model, monkeypatch, eos_token_id=None)
    for seed in range(51, 81):  # a prompt whose generation has a token, from step 2 on, not seen before it
        ids = prompt(1, 5, seed=seed)
        free = hf_generate(model, ids, new)[0, 5:].tolist()
        try:
            step = _first_new(free[:-1], 2)
            break
        except AssertionError:
            continue
    else:
        raise AssertionError("test setup: no prompt gives a usable eos candidate")
    _with_generation_config(model, monkeypatch, eos_token_id=free[step])
    ref = hf_generate(model, ids, new)
    assert ref.shape[1] == 5 + step + 1 < 5 + new, "test setup: HF did not stop at the eos"
    seq = runner.generate(ids, max_new_tokens=new)
    assert seq.shape == ref.shape and torch.equal(seq, ref), f"megagen {seq.tolist()}\nHF      {ref.tolist()}"

    # With room for 20 tokens generation stops early: the tokens are read every EOS_CHECK_EVERY launches,
    # and every launch with a streamer, which gets what HF's streamer gets
    long, kernel = MAX_SEQ_LEN - 5, runner.kernel(1)
    assert step < EOS_CHECK_EVERY < long - 1, "test setup"
    before = kernel.launches
    assert torch.equal(runner.generate(ids, max_new_tokens=long), ref)
    assert kernel.launches - before == EOS_CHECK_EVERY - 1  # the first token comes from the prefill
    ours, hf = Recorder(), Recorder()
    before = kernel.launches
    assert torch.equal(runner.generate(ids, max_new_tokens=long, streamer=ours), ref)
    assert kernel.launches - before == step
    with torch.no_grad():
        model.generate(ids, do_sample=False, max_new_tokens=long, streamer=hf)
    assert ours.calls == hf.calls and ours.calls[-1] == "end", f"megagen {ours.calls}\nHF      {hf.calls}"


def test_eos_pads_finished_rows_batch_two(family, monkeypatch):
    model, runner = family("tiny-llama")
    ids, new = prompt(2, 5, seed=52), 6
    _with_generation_config(model, monkeypatch, eos_token_id=None)
    free = hf_generate(model, ids, new)[:, 5:].tolist()
    # row 0 ends first, row 1 later; neither eos appears in the other row before that row ends
    s0, s1 = _two_row_eos(free)
    eos = [free[0][s0], free[1][s1]]
    _with_generation_config(model, monkeypatch, eos_token_id=eos, pad_token_id=0)
    ref = hf_generate(model, ids, new)
    assert ref.shape[1] == 5 + s1 + 1 < 5 + new, f"test setup: HF did not stop at the second eos ({ref.tolist()})"
    assert (ref[0, 5 + s0 + 1:] == 0).all() and ref[0, 5 + s0 + 1:].numel() > 0, "test setup: row 0 not padded"
    seq = runner.generate(ids, max_new_tokens=new)
    assert seq.shape == ref.shape and torch.equal(seq, ref), f"megagen {seq.tolist()}\nHF      {ref.tolist()}"
    ours, hf = Recorder(), Recorder()  # a finished row streams pad tokens, as HF's does
    runner.generate(ids, max_new_tokens=new, streamer=ours)
    with torch.no_grad():
        model.generate(ids, do_sample=False, max_new_tokens=new, streamer=hf)
    assert ours.calls == hf.calls, f"megagen {ours.calls}\nHF      {hf.calls}"


class Recorder:
    """A streamer that records what it is given: HuggingFace's interface (put, end)."""

    def __init__(self):
        self.calls = []

    def put(self, value):
        self.calls.append(value.tolist())

    def end(self):
        self.calls.append("end")


def test_text_streamer_prints_the_new_text(family, capsys):
    from tokenizers import Tokenizer, models as tokenizer_models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast, TextStreamer
    model, runner = family("tiny-qwen3")
    words = Tokenizer(tokenizer_models.WordLevel({f"w{i}": i for i in range(model.config.vocab_size)}, unk_token="w0"))
    words.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=words)
    ids = prompt(1, 5)
    seq = runner.generate(ids, max_new_tokens=6, streamer=TextStreamer(tokenizer, skip_prompt=True))
    text = tokenizer.decode(seq[0, 5:])
    assert len(text.split()) == seq.shape[1] - 5 and capsys.readouterr().out == text + "\n"


def test_bad_streamer_is_refused_before_running(family):
    model, runner = family("tiny-qwen3")
    ids = prompt(1, 5)
    kernel = runner.kernel(1)
    before = kernel.launches
    with pytest.raises(megagen.MegagenError, match="streamer must have put"):
        runner.generate(ids, max_new_tokens=3, streamer=print)
    assert kernel.launches == before
    assert torch.equal(runner.generate(ids, max_new_tokens=3), hf_generate(model, ids, 3))  # still usable


# ---------------------------------------------------------------------------------------------------------
# 9. settings under which greedy generate is not a plain argmax, mixed dtypes, launches past the cache
# ---------------------------------------------------------------------------------------------------------

def test_generation_settings_that_change_greedy_decoding_are_refused(family, monkeypatch):
    model, runner = family("tiny-llama")
    _with_generation_config(model, monkeypatch, repetition_penalty=1.1)
    with pytest.raises(megagen.UnsupportedModelError, match="repetition_penalty=1.1"):
        runner.generate(prompt(1, 4), max_new_tokens=2)
    _with_generation_config(model, monkeypatch, repetition_penalty=1.0, eos_token_id=None)
    assert torch.equal(runner.generate(prompt(1, 4), max_new_tokens=2), hf_generate(model, prompt(1, 4), 2))


def test_mixed_parameter_dtypes_are_refused():
    model = tiny("tiny-qwen3")
    model.model.norm.to(torch.float64)
    with pytest.raises(megagen.MegagenError, match="mixes parameter dtypes"):
        megagen.build(model)


def test_a_launch_past_the_cache_stays_inside_it(family):
    """Replaying launches beyond max_seq_len (generate refuses to) must not write outside the KV cache."""
    model, runner = family("tiny-qwen3")
    runner.prefill(prompt(1, 4))
    kernel = runner.kernel(1)
    before = [c.clone() for c in runner.state.k_cache + runner.state.v_cache]
    runner.state.pos[0] = MAX_SEQ_LEN + 7
    kernel.run()
    for old, new in zip(before, runner.state.k_cache + runner.state.v_cache):
        changed = (old != new).any(-1)  # [B_max, KV, S_max]
        assert not changed[..., :-1].any(), "only the last cache slot may be written"
    assert int(runner.state.pos[0]) == MAX_SEQ_LEN + 8


# ---------------------------------------------------------------------------------------------------------
# 9. tiling: GEMV phases sized to whole waves of CTAs, consumers polling one counter per producer op
# ---------------------------------------------------------------------------------------------------------

def test_gemv_tiles_fill_whole_waves_and_respect_alignment():
    from megagen.decode import GemvTiles, Tiling
    t = Tiling(264)
    # Qwen3-0.6B's gate and up (3072 rows each over K = 1024): 16-row tiles would be 384, one and a half waves
    rows, split, *_ = t.gemv_tiles([3072, 3072], 1024, 1, 2, split_k=False)
    assert split == 1 and rows % 4 == 0 and 2 * -(-3072 // rows) <= 264, rows
    aligned = t.gemv_tiles([3072, 3072], 1024, 1, 2, split_k=False, align=1024).rows
    assert 1024 % aligned == 0 and aligned >= 16
    # a residual projection too short to fill the CTAs splits K instead of shrinking tiles below a block
    rows, split, *_ = t.gemv_tiles([1024], 2048, 1, 2, split_k=True)
    assert rows >= 16 and split > 1 and split * -(-1024 // rows) <= 264
    assert Tiling(264, max_tile_rows=16).gemv_tiles([151936], 1024, 1, 2, split_k=False).rows == 16
    # the lm_head of greedy decoding may take taller tiles: Qwen3-0.6B's in one wave
    assert t.gemv_tiles([151936], 1024, 1, 2, split_k=False, max_rows=576) == GemvTiles(576, 1, 32, 256)
    # Llama-3.2-1B's down projection at batch 8 (64-row blocks): 32 row tiles, so K splits fill the CTAs, as many as
    # allowed
    assert t.gemv_tiles([2048], 8192, 8, 2, split_k=True, max_splits=4)[:2] == (64, 4)
    assert t.gemv_tiles([2048], 8192, 8, 2, split_k=True, max_splits=8)[:2] == (64, 8)


def test_batch1_phase_of_long_tiles_takes_half_height_blocks():
    """At batch 1 a phase whose tiles would be few and long (Llama-3.2-1B's q/k/v: 96 tiles of 8 loop steps) takes
    16 x 512 blocks, twice the tiles of half the steps; one the cost calls only slightly faster that way
    (Qwen3-0.6B's q/k/v), a phase that splits K, a batch, 8-row blocks and ``latency_tiles=False`` keep the tiling's
    blocks and the tiling the bytes streamed choose."""
    from megagen.decode import GemvTiles, Tiling
    t = Tiling(264)
    llama_qkv = ([2048, 512, 512], 2048)
    assert t.gemv_tiles(*llama_qkv, 1, 2, split_k=False) == GemvTiles(16, 1, 16, 512)
    assert Tiling(264, latency_tiles=False).gemv_tiles(*llama_qkv, 1, 2, split_k=False) == GemvTiles(32, 1, 32, 256)
    assert t.gemv_tiles(*llama_qkv, 8, 2, split_k=False)[2:] == (32, 256)  # a batch (linear.block_shape widens it)
    assert t.gemv_tiles([2048, 1024, 1024], 1024, 1, 2, split_k=False) == GemvTiles(32, 1, 32, 256)  # Qwen3-0.6B
    assert t.gemv_tiles([2048], 2048, 1, 2, split_k=True)[2:] == (32, 256)  # Llama-3.2-1B's o splits K instead
    assert Tiling.for_tp(264, 4).gemv_tiles(*llama_qkv, 1, 2, split_k=False)[2:] == (8, 512)
    # what the switch rests on: the phase's time in loop-step round trips, 96 tiles of 8 steps against 192 of 4
    long, short = t._batch1_tile_us(GemvTiles(32, 1, 32, 256), 2048, 96, 2), t._batch1_tile_us(
        GemvTiles(16, 1, 16, 512), 2048, 192, 2)
    assert short < 0.8 * long


def test_batch1_tiles_that_stream_take_whole_row_blocks():
    """At batch 1 a tile whose rows are not a multiple of its blocks' (Qwen3-8B's gate/up at tp=2 and Qwen3-1.7B's:
    48 rows in 32 x 256 blocks, the second row block half empty) takes gemv_blocks' half-height blocks where they
    divide them, as many weights a block; tiles of whole blocks, that split K, that only shorter blocks divide
    (Qwen2.5-7B's 76 rows), over a K the wider blocks do not divide, or offered no other blocks keep theirs."""
    from megagen.decode import GemvTiles, Tiling
    t = Tiling(264)
    assert t.in_whole_row_blocks(GemvTiles(48, 1, 32, 256), 4096) == GemvTiles(48, 1, 16, 512)
    assert t.in_whole_row_blocks(GemvTiles(112, 1, 32, 256), 4096) == GemvTiles(112, 1, 16, 512)
    for kept in (GemvTiles(96, 1, 32, 256), GemvTiles(48, 2, 32, 256), GemvTiles(76, 1, 32, 256)):
        assert t.in_whole_row_blocks(kept, 3584) == kept
    assert t.in_whole_row_blocks(GemvTiles(48, 1, 32, 256), 256) == GemvTiles(48, 1, 32, 256)  # K of one block
    assert Tiling(264, latency_tiles=False).in_whole_row_blocks(GemvTiles(48, 1, 32, 256), 4096).block_n == 32


@pytest.mark.parametrize("whole", [True, False])
def test_whole_row_blocks_in_a_decode_step_match_hf(whole):
    """tiny-qwen3 tiled for 12 CTAs in 16 x 16 blocks gives gate/up 24-row tiles: in 8 x 32 blocks by default, in the
    tiling's with ``whole_row_blocks=False``; tokens and logits match HF either way. (Not staged, as on a CPU: on a
    GPU the tiny model's projections would stage, and staged tiles keep their blocks.)"""
    model = tiny("tiny-qwen3")
    runner = megagen.build(model, max_seq_len=MAX_SEQ_LEN, num_ctas=12, block_n=16, block_k=16, max_tile_rows=24,
                           attention_split_keys=8, stage_weights=False, whole_row_blocks=whole)
    ops = {op.name: op for op in runner.kernel(1).task_graph.ops}
    for name in ("L0.gate_proj", "L0.up_proj"):
        c = ops[name].plan.constexprs
        assert (c["TILE_ROWS"], c["BLOCK_N"], c["BLOCK_K"]) == ((24, 8, 32) if whole else (24, 16, 16))
    check_against_hf(runner, model, prompt(1, 5), FAMILY_NEW_TOKENS)


def test_batch1_phase_of_few_rows_takes_narrow_blocks():
    """A phase of very few rows (a MoE router: Qwen3-30B-A3B's 128 experts over 2048 columns) takes blocks ever
    narrower, down to MIN_BLOCK_ROWS rows, where the cost calls them faster: 16 tiles of 8 x 1024 blocks where the
    tiling's own blocks gave 4 tiles of 8 loop steps (8.2 us a layer on an H100). Blocks keep their weights."""
    from megagen.decode import MIN_BLOCK_ROWS, GemvTiles, Tiling
    t = Tiling(264)
    assert t.gemv_blocks(1, split_k=False) == [(32, 256), (16, 512), (8, 1024), (4, 2048)]
    assert all(n >= MIN_BLOCK_ROWS and n * k == 32 * 256 for n, k in t.gemv_blocks(1, split_k=False))
    assert t.gemv_blocks(1, split_k=True) == t.gemv_blocks(8, split_k=False) == [(32, 256)]
    assert t.gemv_tiles([128], 2048, 1, 2, split_k=False) == GemvTiles(8, 1, 8, 1024)
    assert t.gemv_tiles([128], 2048, 1, 2, split_k=False, blocks=[(32, 256)]) == GemvTiles(32, 1, 32, 256)


def test_gemv_weight_blocks_by_tp():
    """Batch-1 blocks of 32 x 256, 8 x 512 from tp=4 on; a user's block_n or block_k replaces the pair; a batch's
    blocks are the same as 16 x 512 gave them (tensor-core blocks at least batch_block_rows tall)."""
    from megagen.decode import Tiling
    from megagen.tasks import linear as Lin

    def block(tp=1, **options):
        t = Tiling.for_tp(264, tp, **options)
        return t.block_n, t.block_k
    assert block() == block(2) == (Tiling(264).block_n, Tiling(264).block_k) == (32, 256)
    assert block(4) == block(8) == (8, 512)
    assert block(4, block_n=16) == (16, 256) and block(1, block_k=512) == (32, 512)
    assert Tiling.for_tp(264, 4, max_tile_rows=64).max_tile_rows == 64
    assert all(Lin.block_shape(b, 32, 256) == Lin.block_shape(b, 16, 512) for b in (2, 8, 16))
    # Qwen3-0.6B's lm_head at batch 1 in one wave of 576-row tiles, whole 32-row blocks
    assert Tiling(264).gemv_tiles([151936], 1024, 1, 2, split_k=False, max_rows=576)[:2] == (576, 1)


def test_lm_head_runs_one_wave_of_tiles_each_followed_by_an_argmax_tile():
    """Greedy decoding at batch 1: the lm_head in one wave of tiles of whole weight blocks, each tile's rows one
    argmax block, so an argmax tile waits for one lm_head tile; a batch keeps argmax blocks of up to 4096 logits,
    which its lm_head tiles divide."""
    from megagen.decode import DecodeState, Tiling, decode_graph
    from megagen.graph.dependencies import derive_dependencies
    from megagen.trace import trace
    decoder = trace(tiny("tiny-qwen3"))
    vocab = decoder.lm_head.shape[0]
    for batch in (1, 3):
        g = decode_graph(decoder, DecodeState.allocate(decoder, batch, MAX_SEQ_LEN), batch,
                         Tiling(8, attention_split_keys=8))
        ops = {op.name: op for op in g.ops}
        rows, block = ops["lm_head"].plan.constexprs["TILE_ROWS"], ops["argmax"].plan.constexprs["ROWS"]
        if batch == 1:
            assert ops["lm_head"].num_tiles <= 8 < -(-vocab // 16) and rows % 16 == 0 and block == rows
            dag = derive_dependencies(g).tile_graph()
            for tile in range(ops["argmax"].num_tiles):
                assert [p for p in dag.predecessors(("argmax", tile)) if p[0] == "lm_head"] == [("lm_head", tile)]
        else:
            assert block == vocab and block % rows == 0


def test_mlp_is_fused_where_one_wave_of_tiles_covers_it():
    from megagen.decode import Tiling
    fused = Tiling(264, fuse_mlp=True)
    assert fused.mlp_tiles(3072) == dict(I=16, BLOCK_K=256, BLOCK_H=512)  # Qwen3-0.6B on an H100: 192 tiles
    assert fused.mlp_tiles(8192) is None  # Llama-3.2-1B: two waves, measured slower fused
    assert Tiling(264).mlp_tiles(3072) is None, "off by default"
    with pytest.raises(megagen.MegagenError, match="fuse_mlp must be True or False"):
        Tiling(264, fuse_mlp=1)


@pytest.mark.parametrize("name", ["tiny-qwen3", "tiny-llama"])
def test_fused_mlp_matches_hf(name):
    """With fuse_mlp=True and a CTA for every 16 intermediate rows, each layer's MLP is one op whose tiles add
    their down projection's partial sums into the residual stream with atomics: tokens and logits still match
    HF; by default the graph has the two GEMV phases."""
    model = tiny(name)
    tiles = -(-model.config.intermediate_size // 16)
    runner = megagen.build(model, max_seq_len=MAX_SEQ_LEN, num_ctas=tiles, attention_split_keys=8, fuse_mlp=True)
    nodes = set(runner.graph.nodes)
    assert "L0.mlp" in nodes and "L0.gate_proj" not in nodes, sorted(nodes)
    check_against_hf(runner, model, prompt(1, 5), FAMILY_NEW_TOKENS)
    two = megagen.build(model, max_seq_len=MAX_SEQ_LEN, num_ctas=tiles)
    assert "L0.mlp" not in set(two.graph.nodes) and "L0.down_proj" in set(two.graph.nodes)


def test_fused_mlp_logits_do_not_depend_on_the_order_tiles_finish():
    """A fused MLP's tiles add their partial sums as fixed-point integers (into the stream part its readers, the
    *_fixed GEMVs, take): schedules that finish them in other orders give the same logits to the bit, where fp32
    atomics made zigzag's differ from round_robin's (by 7e-8 here)."""
    model = tiny("tiny-qwen3")
    tiles = -(-model.config.intermediate_size // 16)
    ids = prompt(1, 5)
    logits = {}
    for scheduler in ("round_robin", "zigzag", "work_queue"):
        runner = megagen.build(model, max_seq_len=MAX_SEQ_LEN, num_ctas=tiles, attention_split_keys=8, fuse_mlp=True,
                               scheduler=scheduler)
        ops = {op.name: op.task.name for op in runner.task_graph.ops}
        assert ops["L0.mlp"] == "rmsnorm_mlp" and ops["L1.q_proj"] == "rmsnorm_gemv_fixed"
        assert ops["L1.o_proj"] == "gemv_residual_zero_fixed" and ops["lm_head"] == "rmsnorm_gemv_fixed"
        assert ops["L0.q_proj"] == "rmsnorm_gemv", "the first layer's stream has no fixed-point part yet"
        runner.prefill(ids)
        runner.kernel(1).run()
        logits[scheduler] = runner.logits(1).clone()
    assert all(torch.equal(v, logits["round_robin"]) for v in logits.values())


def test_attention_splits_follow_the_cache_length():
    """Splits fill the CTAs at long contexts but leave each split 16 KB of cached keys and values of the longest
    context (attention_split_keys overrides it): 8 KV heads on 264 CTAs split 32 ways for a 4096-slot cache, and
    for a 528-slot one 16 ways with 128-wide bf16 heads (Qwen3-0.6B: 512 bytes a key), 8 with 64-wide ones
    (Llama-3.2-1B: 256)."""
    from megagen.decode import Tiling
    t = Tiling(264)
    assert t.attention_splits(1, 8, 4112, 512) == 32 and t.attention_splits(1, 8, 528, 512) == 16
    assert t.attention_splits(1, 8, 4112, 256) == 32 and t.attention_splits(1, 8, 528, 256) == 8
    assert t.attention_splits(1, 8, 300, 512) == 8 and t.attention_splits(1, 8, 31, 512) == 1
    assert t.attention_splits(8, 8, 4096, 512) == 4  # at batch 8 the CTAs run out first
    assert Tiling(264, attention_split_keys=1).attention_splits(1, 8, 528, 256) == 32
    assert Tiling(264, max_attention_splits=4).attention_splits(1, 8, 4096, 512) == 4
    with pytest.raises(megagen.MegagenError, match="attention_split_keys must be a positive int"):
        Tiling(264, attention_split_keys=0)


def test_attention_splits_bound_by_the_sliding_window(device):
    """A sliding window bounds the keys a step attends to, so it, not the cache, sets the splits."""
    from megagen.decode import DecodeState, Tiling, decode_graph
    from megagen.trace import trace
    decoder = trace(tiny("tiny-mistral"))  # sliding_window 8
    assert decoder.layers[0].attn.window == 8
    graph = decode_graph(decoder, DecodeState.allocate(decoder, 1, 64), 1, Tiling(64, attention_split_keys=2))
    partial = next(op for op in graph.ops if op.name == "L0.attention")
    assert partial.plan.constexprs["SPLITS"] == 4  # 8 // 2; the 64-slot cache alone would allow 16 (64 CTAs // 2 KV)


QWEN3_06B_LAYER = dict(hidden_size=1024, intermediate_size=3072, num_attention_heads=16, num_key_value_heads=8,
                      head_dim=128, num_hidden_layers=1)


@pytest.mark.parametrize("num_ctas, shape, batch, max_top_k", [
    (4, dict(intermediate_size=192), 1, None), (6, dict(intermediate_size=192), 1, None),
    (264, QWEN3_06B_LAYER, 1, None), (264, QWEN3_06B_LAYER, 8, None), (264, QWEN3_06B_LAYER, 8, 64)],
    ids=["4", "6", "264-qwen3-0.6b-layer", "264-qwen3-0.6b-layer-batch8", "264-qwen3-0.6b-layer-batch8-sampling"])
def test_decode_tasks_poll_few_counters(num_ctas, shape, batch, max_top_k):
    """Tile shapes align with their consumers' chunks, so every task's wait is the counter inlined in its
    record plus at most one block of DEP_BLOCK counters polled at once (longer lists are polled block after
    block: 68 tile counters cost a phase 5-8 us on an H100; at batch 8 a next-token tile per row polled every
    reader of its row's position, 58 us)."""
    import numpy as np
    from megagen.compiler import DEFAULT_DEP_BLOCK
    from megagen.decode import DecodeState, Tiling, decode_graph
    from megagen.scoreboard import layout as L
    from megagen.trace import trace
    decoder = trace(tiny("tiny-qwen3", **shape))  # intermediate sizes of 3 x 2^n: K splits in threes
    graph = decode_graph(decoder, DecodeState.allocate(decoder, batch, 16), batch, Tiling(num_ctas),
                         max_top_k=max_top_k)
    layout = L.build_layout(graph.dependencies, np.zeros(len(graph.ops), np.int64),
                            np.zeros(len(graph.ops), np.int64))
    records = layout.records
    waits = (records[:, L.REC_DEP0] >= 0) + records[:, L.REC_DEP_END] - records[:, L.REC_DEP_BEGIN]
    first = np.cumsum([0] + [op.num_tiles for op in graph.ops])
    for op, begin, end in zip(graph.ops, first[:-1], first[1:]):
        assert waits[begin:end].max() <= 1 + DEFAULT_DEP_BLOCK, f"{op.name}: {waits[begin:end].max()} waits"
