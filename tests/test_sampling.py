"""Sampling inside the MegaKernel (megagen.tasks.multinomial): the distribution is HuggingFace's, the draws are
exactly the torch sampler's (``draw``) for any split of the vocabulary, and generate(do_sample=True) is seeded
by torch's generator, reproducible and the same at tp=1 and tp=2.

The statistical tests draw thousands of tokens in one launch (one batch row per draw, many rows a tile) from
fixed logits and compare the counts with HuggingFace's processed probabilities; the exactness tests compare the
kernel's tokens with the torch sampler's, which uses the same noise, so every draw must agree.
"""
from __future__ import annotations

import copy
import math

import pytest
import torch

import megagen
from megagen import models
from megagen.backend import default_device
from megagen.errors import MegagenError, UnsupportedModelError
from megagen.generation import Sampling
from megagen.tasks import multinomial as M
from megagen.tasks.noise import gumbel, gumbel_torch
from megagen.world import EmulatedWorld
from test_models import INIT, MAX_SEQ_LEN, hf_generate, prompt

DEVICE = default_device()
SEED = 20240611


def sampling_graph(logits, *, top_k, temperature=1.0, top_p=1.0, candidates=16, block=4096, rows=1, seed=SEED):
    """One rank's sample_partial and sample_pick over ``logits`` [B, V] (every row one draw): (graph, tokens, pos)."""
    batch, vocab = logits.shape
    blocks = -(-vocab // block)
    logits = logits[None].contiguous().to(DEVICE)
    settings = dict(seed=torch.tensor([seed]), temperature=torch.tensor([temperature], dtype=torch.float32),
                    top_k=torch.tensor([top_k]), top_p=torch.tensor([top_p], dtype=torch.float32))
    settings = {name: t.to(DEVICE) for name, t in settings.items()}
    pos = torch.arange(batch, device=DEVICE) + 7
    buffers = dict(cand=torch.zeros(batch, blocks, candidates, dtype=torch.int64, device=DEVICE),
                   value=torch.zeros(batch, blocks, device=DEVICE),
                   index=torch.zeros(batch, blocks, dtype=torch.int64, device=DEVICE))
    tokens = torch.zeros(batch, dtype=torch.int64, device=DEVICE)
    g = megagen.TaskGraph("sampling", inputs=[logits, pos, *settings.values()])
    g.add(M.sample_partial, logits=logits, pos=pos, BLOCK=block, ROWS=rows, **buffers,
          **{n: settings[n] for n in ("seed", "temperature", "top_k")})
    g.add(M.sample_pick, logits=logits, tokens=tokens, pos=pos, ROWS=rows, **buffers, **settings)
    return g, tokens, pos


def hf_probabilities(logits, **settings):
    """HuggingFace's distribution of the next token: its own resolution of the settings, its own warpers in its
    own order (model._get_logits_processor), then the softmax generate draws from."""
    model = models.random_model("tiny-qwen3", dtype=torch.float32)
    config, _ = model._prepare_generation_config(None, do_sample=True, **settings)
    warpers = model._get_logits_processor(generation_config=config, device="cpu")
    return warpers(torch.zeros(1, 1, dtype=torch.int64), logits[None].clone()).softmax(-1)[0]


def bernstein_bound(draws: int, p: float, failure: float) -> float:
    """t with P(|Binomial(draws, p) - draws p| >= t) <= failure (Bernstein's inequality)."""
    log_term = math.log(2 / failure)
    return log_term / 3 + math.sqrt(log_term ** 2 / 9 + 2 * draws * p * (1 - p) * log_term)


# ---------------------------------------------------------------------------------------------------------
# 1. the distribution: HuggingFace's processed probabilities
# ---------------------------------------------------------------------------------------------------------

VOCAB, DRAWS = 16, 8192
# 16 distinct logits in [-3, 3], shuffled over the ids
LOGITS = torch.linspace(-3, 3, VOCAB)[torch.randperm(VOCAB, generator=torch.Generator().manual_seed(0))]
SETTINGS = {  # HuggingFace's settings; top_p alone: top_k None, which megagen runs as top_k = the vocabulary
    "temperature": (dict(temperature=0.7, top_k=None), 0),
    "top_k": (dict(top_k=5), 5),
    "top_p": (dict(temperature=1.3, top_k=None, top_p=0.7), VOCAB),
    "top_k_and_top_p": (dict(temperature=0.8, top_k=8, top_p=0.8), 8),
}
FAILURE = 1e-6  # bound on the probability that the test fails for a correct sampler, over all its cases


@pytest.mark.parametrize("case", list(SETTINGS))
def test_draws_follow_huggingface_distribution(case):
    """8192 draws in one launch (1024 rows a tile) from fixed logits: tokens HuggingFace's warpers remove are never
    drawn, and every token's count is within Bernstein's bound of 8192 p. With independent draws (Philox streams,
    one per row) a correct sampler fails this with probability below 1e-6 over all four cases (a union bound
    over cases and tokens); the seed is fixed, so the outcome is reproducible. Dropping top-p, or keeping one
    token too many or too few, fails it."""
    hf_settings, top_k = SETTINGS[case]
    p = hf_probabilities(LOGITS, **hf_settings)
    temperature, top_p = hf_settings.get("temperature", 1.0), hf_settings.get("top_p", 1.0)
    assert 1 < int((p > 0).sum()) < VOCAB or case == "temperature", "test setup: the warpers should cut"
    g, tokens, _ = sampling_graph(LOGITS.expand(DRAWS, VOCAB), top_k=top_k, temperature=temperature, top_p=top_p,
                                  rows=1024)
    g.compile().run()
    counts = torch.bincount(tokens.cpu(), minlength=VOCAB).double()
    assert int(counts.sum()) == DRAWS
    assert not counts[p == 0].any(), f"{case}: drew tokens HuggingFace removes: {counts[p == 0].tolist()}"
    per_token = FAILURE / (len(SETTINGS) * VOCAB)
    for token in torch.nonzero(p).flatten().tolist():
        expected, bound = DRAWS * float(p[token]), bernstein_bound(DRAWS, float(p[token]), per_token)
        assert abs(counts[token] - expected) < bound, (
            f"{case}: token {token} drawn {int(counts[token])} times, expected {expected:.0f} +- {bound:.0f}")


# ---------------------------------------------------------------------------------------------------------
# 2. exactness: the kernel draws the torch sampler's tokens, the references agree, any split of the vocabulary
# ---------------------------------------------------------------------------------------------------------

def _random_logits(kind: str, batch: int = 12, vocab: int = 290) -> torch.Tensor:
    gen = torch.Generator().manual_seed(5)
    logits = torch.randn(batch, vocab, generator=gen) * 2
    if kind == "tie_overflow":  # 40 tokens tie at the 5th value: more than a block's list and the candidates
        logits = logits - 6
        logits[:, 10], logits[:, 200] = 3.0, 2.5
        logits[:, 50:90] = 1.0
    elif kind == "quantised":  # values on a grid of 0.5, as bf16 logits tie: ties everywhere, across blocks
        logits = (logits * 2).round() / 2
    return logits


EXACT_CASES = [  # kind, top_k, temperature, top_p
    ("plain", 0, 0.7, 1.0), ("plain", 5, 1.0, 1.0), ("plain", 10, 1.3, 0.8), ("plain", 16, 1.0, 0.5),
    ("tie_overflow", 5, 1.0, 1.0), ("tie_overflow", 5, 1.0, 0.4),
    ("quantised", 8, 0.8, 0.9), ("quantised", 1, 1.0, 1.0),
]


def _assert_kernel_draws_as_torch(logits, top_k, temperature, top_p) -> list[int]:
    """Five blocks of 64 tokens a row (the last one partly padding), four rows a tile: every row's token is
    ``draw``'s for the same noise, the positions advance, and the references agree with the tile functions
    (find_mismatch). Returns the tokens."""
    g, tokens, pos = sampling_graph(logits, top_k=top_k, temperature=temperature, top_p=top_p, block=64, rows=4)
    start = pos.clone()
    want = M.draw(logits, SEED, start.cpu(), torch.arange(len(logits)), temperature, top_k, top_p)
    assert megagen.find_mismatch(g) is None
    pos.copy_(start)
    g.compile().run()
    assert tokens.tolist() == want.tolist()
    assert torch.equal(pos, start + 1)
    return want.tolist()


@pytest.mark.parametrize("kind, top_k, temperature, top_p", EXACT_CASES,
                         ids=[f"{c[0]}-k{c[1]}-t{c[2]}-p{c[3]}" for c in EXACT_CASES])
def test_kernel_draws_the_torch_samplers_tokens(kind, top_k, temperature, top_p):
    """Float32 logits: every row's token is ``draw``'s (``_assert_kernel_draws_as_torch``)."""
    want = _assert_kernel_draws_as_torch(_random_logits(kind), top_k, temperature, top_p)
    if kind == "tie_overflow":  # the tied tokens really are drawn: some rows pick one of them
        assert any(50 <= t < 90 for t in want) or top_p < 1


SIXTEEN_BIT_CASES = [("plain", 10, 0.7, 0.8), ("quantised", 8, 1.0, 0.9), ("underflow", 16, None, 1.0)]
UNDERFLOW = {torch.bfloat16: (1e-36, 1e8), torch.float16: (1e-4, 3e38)}  # logits' scale, temperature


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("kind, top_k, temperature, top_p", SIXTEEN_BIT_CASES,
                         ids=[f"{c[0]}-k{c[1]}-t{c[2]}-p{c[3]}" for c in SIXTEEN_BIT_CASES])
def test_16_bit_logits_draw_the_torch_samplers_tokens(dtype, kind, top_k, temperature, top_p):
    """Logits in bfloat16 or float16, as a decode step's are: every row's token is ``draw``'s over the same logits
    in float32, also where the scaled logits underflow, so that distinct logits tie (ties go by token id)."""
    logits = _random_logits("plain" if kind == "underflow" else kind)
    if kind == "underflow":
        scale, temperature = UNDERFLOW[dtype]
        logits = logits * scale
    logits = logits.to(dtype)
    scaled = logits.float() / torch.tensor([temperature])
    ties = (scaled[:, None, :] == scaled[:, :, None]) & (logits[:, None, :] != logits[:, :, None])
    assert bool(ties.any()) == (kind == "underflow")  # that case really ties distinct logits
    _assert_kernel_draws_as_torch(logits, top_k, temperature, top_p)


@pytest.mark.parametrize("kind, top_k, top_p", [("plain", 10, 0.8), ("tie_overflow", 5, 0.4), ("quantised", 8, 0.9),
                                                ("concentrated", 12, 1.0)])
def test_pick_reads_deeper_entries_in_rounds(kind, top_k, top_p, monkeypatch):
    """Blocks of 8 tokens (37 lists a row) and a pick reading one entry of each list a round, as a batch-1 decode
    step's pick does (a list per lm_head tile): the lists whose last entry read still ranks are read further, and
    every row's token is ``draw``'s. "concentrated" puts a row's 12 best tokens in one block, so its list is read
    to the end of those 12 entries, round after round."""
    monkeypatch.setattr(M, "PICK_KEYS", 1)  # one entry a list a round
    logits = _random_logits("tie_overflow" if kind == "tie_overflow" else "plain")
    if kind == "quantised":
        logits = (logits * 2).round() / 2
    elif kind == "concentrated":
        logits[:, 40:48] += 20.0
        logits[:, 48:52] += 19.0
    g, tokens, pos = sampling_graph(logits, top_k=top_k, temperature=0.9, top_p=top_p, block=8, rows=4)
    assert g.ops[-1].plan.constexprs["DEPTH"] == 1 and g.ops[-1].plan.constexprs["BLOCKS"] == 37
    start = pos.clone()
    want = M.draw(logits, SEED, start.cpu(), torch.arange(len(logits)), 0.9, top_k, top_p)
    g.compile().run()
    assert tokens.tolist() == want.tolist()


@pytest.mark.parametrize("kind, top_k, top_p", [("plain", 10, 0.8), ("plain", 0, 1.0), ("tie_overflow", 5, 0.4),
                                                ("quantised", 8, 0.9)])
def test_ranks_draw_the_same_tokens_as_one(kind, top_k, top_p):
    """The vocabulary split over three ranks (the last one padded), every rank's tasks in one launch: each rank
    picks the same tokens, ``draw``'s over the whole row (the ties' fallback reads the other ranks' logits)."""
    logits = _random_logits(kind, batch=6)
    world, (batch, vocab) = EmulatedWorld(3, DEVICE), logits.shape
    width, candidates = -(-vocab // 3), 16
    blocks = -(-width // 64)
    settings = dict(seed=torch.tensor([SEED]), temperature=torch.tensor([1.1]), top_k=torch.tensor([top_k]),
                    top_p=torch.tensor([top_p]))
    graphs, picked = [], []
    for rank in world.ranks:
        part = world.symmetric(rank, (1, batch, width), torch.float32)
        part[0, :, :min(width, vocab - rank * width)] = logits[:, rank * width:(rank + 1) * width]
        buffers = dict(cand=world.symmetric(rank, (batch, blocks, candidates), torch.int64),
                       value=world.symmetric(rank, (batch, blocks), torch.float32),
                       index=world.symmetric(rank, (batch, blocks), torch.int64))
        mine = {n: t.clone().to(DEVICE) for n, t in settings.items()}
        tokens, pos = torch.zeros(batch, dtype=torch.int64, device=DEVICE), torch.arange(batch, device=DEVICE) + 7
        g = megagen.TaskGraph(f"sampling_rank{rank}", world=world, rank=rank, inputs=[part, pos, *mine.values()])
        g.add(M.sample_partial, logits=part, pos=pos, BLOCK=64, offset=rank * width,
              valid=max(0, min(width, vocab - rank * width)), **buffers,
              **{n: mine[n] for n in ("seed", "temperature", "top_k")})
        g.add(M.sample_pick, logits=part, tokens=tokens, pos=pos, vocab=vocab, **buffers, **mine)
        graphs.append(g), picked.append(tokens)
    megagen.MegaKernel(graphs, world=world, num_ctas=2).run()
    want = M.draw(logits, SEED, torch.arange(batch) + 7, torch.arange(batch), 1.1, top_k, top_p)
    for rank, tokens in enumerate(picked):
        assert tokens.tolist() == want.tolist(), f"rank {rank}"


def test_noise_is_the_same_in_triton_and_torch():
    """Philox bit for bit (the logarithms to float32 rounding), keyed by (seed, position, row, token id), and
    standard Gumbel: mean 0.5772, variance pi^2 / 6 (bounds of more than 6 standard errors)."""
    import triton
    import triton.language as tl

    @triton.jit
    def noise_kernel(seed, pos, out, row, N: tl.constexpr):
        tokens = tl.arange(0, N).to(tl.int64) + 1000
        tl.store(out + tl.arange(0, N), gumbel(tl.load(seed), tl.load(pos), row, tokens))

    n = 1 << 16
    out = torch.empty(n, device=DEVICE)
    noise_kernel[(1,)](torch.tensor([SEED], device=DEVICE), torch.tensor([77], device=DEVICE), out, 3, N=n)
    want = gumbel_torch(SEED, torch.tensor(77), torch.tensor(3), torch.arange(n) + 1000)
    torch.testing.assert_close(out.cpu(), want, rtol=1e-6, atol=1e-6)
    assert abs(float(want.mean()) - 0.5772) < 6 * 1.2825 / n ** 0.5
    assert abs(float(want.var()) - math.pi ** 2 / 6) < 6 * 2.9 / n ** 0.5  # the variance's standard error
    other_row = gumbel_torch(SEED, torch.tensor(77), torch.tensor(4), torch.arange(n) + 1000)
    other_seed = gumbel_torch(SEED + 1, torch.tensor(77), torch.tensor(3), torch.arange(n) + 1000)
    assert abs(float(torch.corrcoef(torch.stack([want, other_row]))[0, 1])) < 0.03
    assert abs(float(torch.corrcoef(torch.stack([want, other_seed]))[0, 1])) < 0.03


# ---------------------------------------------------------------------------------------------------------
# 3. generate(do_sample=True)
# ---------------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def runners():
    model = models.random_model("tiny-qwen3", dtype=torch.float32, device=DEVICE, **INIT)
    return model, megagen.build(model, max_seq_len=MAX_SEQ_LEN), megagen.build(model, tp=2, world="emulated",
                                                                              max_seq_len=MAX_SEQ_LEN)


NEW = 3  # prefill + 2 MegaKernel steps


def _sample(runner, seed, ids, **options):
    torch.manual_seed(seed)
    return runner.generate(ids, max_new_tokens=NEW, do_sample=True, **options)


def test_top_k_one_is_greedy(runners):
    model, runner, _ = runners
    ids = prompt(1, 5, seed=3)
    assert torch.equal(_sample(runner, 1, ids, top_k=1, temperature=2.0), hf_generate(model, ids, NEW))


@pytest.mark.parametrize("options", [dict(temperature=1.5, top_k=None), dict(temperature=1.2, top_k=20, top_p=0.9)],
                         ids=["whole_vocabulary", "top_k_top_p"])
def test_same_seed_same_tokens_at_tp1_and_tp2(runners, options):
    """torch.manual_seed(s) before two calls gives the same tokens, at tp=1 and at tp=2 (the noise is keyed by the
    token id, not by where the token is); other seeds give other tokens."""
    model, runner, runner_tp2 = runners
    ids = prompt(1, 5, seed=4)
    first = _sample(runner, 7, ids, **options)
    assert torch.equal(_sample(runner, 7, ids, **options), first)
    assert torch.equal(_sample(runner_tp2, 7, ids, **options), first)
    assert not torch.equal(_sample(runner, 8, ids, **options), first), "another seed drew the same tokens"
    assert not torch.equal(first, hf_generate(model, ids, NEW)), "test setup: sampling should leave the argmax"


def test_sampling_kernel_logits_match_huggingface(runners):
    """The sampling MegaKernel computes the same logits as the greedy one, and HuggingFace's, along the sampled
    sequence; one kernel serves every setting (no rebuild when they change)."""
    model, runner, _ = runners
    ids = prompt(1, 5, seed=6)
    torch.manual_seed(2)
    seq, logits = runner.generate(ids, max_new_tokens=NEW, do_sample=True, temperature=1.7, return_logits=True)
    kernel = runner.kernel(1, sample=True)
    torch.manual_seed(2)
    runner.generate(ids, max_new_tokens=2, do_sample=True, temperature=0.3, top_k=3, top_p=0.5)
    assert runner.kernel(1, sample=True) is kernel and runner.source_path == kernel.source_path
    with torch.no_grad():
        want = model(seq).logits[:, ids.shape[1] - 1:-1]
    torch.testing.assert_close(logits, want, rtol=1e-4, atol=1e-4)


RESOLVE_CASES = [  # the model's generation_config, the call's options
    ({}, dict(do_sample=True)),                                           # HuggingFace's default top_k 50
    ({}, dict(do_sample=True, temperature=None, top_k=None, top_p=None)),  # None turns a warper off
    (dict(do_sample=True, temperature=0.6, top_k=20, top_p=0.95), {}),    # Qwen3's generation_config
    (dict(do_sample=True, temperature=0.6, top_k=20, top_p=0.95), dict(top_k=40, temperature=1.0)),
    (dict(do_sample=True, top_p=0.9), dict(do_sample=False)),
    (dict(temperature=0.3), dict(do_sample=True, top_k=300)),             # a top_k past the vocabulary
]


@pytest.mark.parametrize("config, options", RESOLVE_CASES)
def test_settings_resolve_as_huggingface_resolves_them(config, options):
    """generate's settings are HuggingFace's: from the call, else generation_config, else HF's defaults, with the
    warpers HuggingFace would then apply (its own resolution, _prepare_generation_config, is the reference)."""
    from megagen.generation import resolve
    model = models.random_model("tiny-qwen3", dtype=torch.float32)
    for name, value in config.items():
        setattr(model.generation_config, name, value)
    hf, _ = model._prepare_generation_config(None, **options)
    ours = resolve(model.generation_config, options, vocab_size=256, max_top_k=64)
    assert ours.do_sample == bool(hf.do_sample)
    if ours.do_sample:
        warpers = {type(w).__name__: w for w in model._get_logits_processor(generation_config=hf, device="cpu")}
        assert ours.temperature == getattr(warpers.get("TemperatureLogitsWarper"), "temperature", 1.0)
        top_k = min(warpers["TopKLogitsWarper"].top_k, 256) if "TopKLogitsWarper" in warpers else 256
        assert ours.top_k == (0 if top_k == 256 and "TopPLogitsWarper" not in warpers else top_k)
        assert ours.top_p == getattr(warpers.get("TopPLogitsWarper"), "top_p", 1.0)


def test_generate_takes_its_settings_from_the_generation_config(runners, monkeypatch):
    model, runner, _ = runners
    ids = prompt(1, 5, seed=8)
    config = copy.deepcopy(model.generation_config)
    config.do_sample, config.temperature, config.top_k, config.top_p = True, 1.6, 20, 0.9
    monkeypatch.setattr(model, "generation_config", config)
    torch.manual_seed(3)
    from_config = runner.generate(ids, max_new_tokens=NEW)
    assert torch.equal(from_config, _sample(runner, 3, ids, temperature=1.6, top_k=20, top_p=0.9))


def test_max_top_k_is_checked_when_building(runners):
    model, _, _ = runners
    with pytest.raises(MegagenError, match="max_top_k must be a power of two"):
        megagen.build(model, max_top_k=48)
    with pytest.raises(MegagenError, match=f"max_top_k must be a power of two up to {M.MAX_TOP_K}"):
        megagen.build(model, max_top_k=2 * M.MAX_TOP_K)


def test_bad_settings_from_the_generation_config_are_refused_before_running(runners, monkeypatch):
    """The model's sampling settings are checked when generate samples with them (and ignored when greedy, as
    HuggingFace ignores them), before the model or a kernel runs; warpers megagen has no task for are refused."""
    model, runner, _ = runners
    ids = prompt(1, 5, seed=10)
    kernel = runner.kernel(1, sample=True)
    launches = kernel.launches
    for settings, error, pattern in ((dict(do_sample=True, temperature=0.0), MegagenError,
                                      r"temperature .*generation_config"),
                                     (dict(do_sample=True, top_p=2.0), MegagenError, r"top_p .*generation_config"),
                                     (dict(do_sample=True, min_p=0.1), UnsupportedModelError, r"min_p=0.1")):
        config = copy.deepcopy(model.generation_config)
        for name, value in settings.items():
            setattr(config, name, value)
        monkeypatch.setattr(model, "generation_config", config)
        monkeypatch.setattr(model, "forward", lambda *a, **k: pytest.fail("the model ran before the error"))
        with pytest.raises(error, match=pattern):
            runner.generate(ids, max_new_tokens=2)
        monkeypatch.undo()
    assert kernel.launches == launches
    config = copy.deepcopy(model.generation_config)
    config.temperature, config.top_k = 0.0, -3  # unused when greedy
    monkeypatch.setattr(model, "generation_config", config)
    assert torch.equal(runner.generate(ids, max_new_tokens=2), hf_generate(model, ids, 2))
    with pytest.raises(MegagenError, match="max_top_k must be a power of two"):
        megagen.build(model, max_top_k=48)


def test_reference_executor_agrees_on_a_sampling_decode_step(runners):
    """Every op of a sampling decode step, tile by tile: the tile functions and their references agree."""
    _, runner, _ = runners
    runner.prefill(prompt(1, 5, seed=11))
    runner.state.set_sampling(Sampling(True, temperature=1.3, top_k=20, top_p=0.9, seed=5))
    runner.kernel(1, sample=True)
    assert {"sample_partial", "sample_pick"} <= {op.task.name for op in runner.task_graph.ops}
    assert megagen.find_mismatch(runner.task_graph) is None
