"""Tensor parallelism in an emulated world: every rank in this process, all ranks' tasks in one launch.

The same generated code runs as under torchrun (each rank's counters, peer tables, system-scope
waits); only the buffers are ordinary tensors instead of NVSHMEM memory. Tokens must equal
``model.generate``'s and logits agree within 1e-4 relative (float32), for every family at tp=2 and
tp=4, with both allreduce forms.
"""
from __future__ import annotations

import pytest
import torch

import megagen
from megagen import models
from megagen.backend import default_device
from megagen.errors import DeadlockError, MegagenError
from megagen.graph import TaskGraph
from megagen.scoreboard.layout import REC_DEP0
from megagen.tasks.comm import allreduce_ops, barrier
from megagen.world import EmulatedWorld, NvshmemWorld, make_world
from test_models import INIT, MAX_SEQ_LEN, check_against_hf, prompt

DEVICE = default_device()
NEW_TOKENS = 4  # prefill + 3 MegaKernel steps: the interpreter runs every rank's tasks
# On a GPU an emulated world's ranks share it: all their CTAs must be co-resident
CTAS = {} if DEVICE.type == "cpu" else {"num_ctas": 16}


def tiny(name: str, tp: int, **overrides):
    """A tiny model of ``name`` whose heads, KV heads and intermediate size ``tp`` divides."""
    # the tiny presets have 4 heads and 2 KV heads; beyond tp=2 every head has its own KV head
    heads = dict(num_attention_heads=max(4, tp), num_key_value_heads=tp) if tp > 2 else {}
    return models.random_model(name, dtype=torch.float32, device=DEVICE, **{**INIT, **heads, **overrides})


# family, tp, allreduce form, batch, prompt length (mistral's passes its window of 8)
CASES = [
    ("tiny-qwen3", 2, "two_shot", 1, 5),
    ("tiny-qwen3", 4, "one_shot", 1, 5),
    ("tiny-llama", 2, "one_shot", 1, 5),
    ("tiny-llama", 4, "two_shot", 1, 5),
    ("tiny-qwen2", 2, "one_shot", 1, 6),
    ("tiny-qwen2", 4, "two_shot", 1, 6),
    ("tiny-mistral", 2, "one_shot", 2, 10),
    ("tiny-mistral", 4, "two_shot", 1, 10),
    ("tiny-qwen3", 8, "auto", 1, 5),  # the headline tp=8, emulated (issue 6 runs it on eight GPUs)
]


@pytest.mark.parametrize("name, tp, mode, batch, length", CASES, ids=[f"{c[0]}-tp{c[1]}-{c[2]}" for c in CASES])
def test_emulated_tp_matches_hf(name, tp, mode, batch, length):
    model = tiny(name, tp)
    runner = megagen.build(model, tp=tp, world="emulated", allreduce=mode, max_seq_len=MAX_SEQ_LEN,
                           max_batch_size=batch, **CTAS)
    assert runner.tp == tp and len(runner.states) == tp
    kinds = {op.task.name for op in runner.task_graph.ops}
    assert ({"reduce_scatter", "all_gather"} if mode == "two_shot" else {"allreduce"}) <= kinds
    # every rank holds its own shard: a quarter (or half) of the heads and of the vocabulary
    assert runner.shards[1].layers[0].attn.heads == model.config.num_attention_heads // tp
    assert runner.shards[0].lm_head.shape[0] == -(-model.config.vocab_size // tp)
    check_against_hf(runner, model, prompt(batch, length), NEW_TOKENS)
    # all ranks decoded the same tokens, and their KV caches hold different heads
    assert all(torch.equal(s.tokens, runner.states[0].tokens) for s in runner.states)
    assert not torch.equal(runner.states[0].k_cache[0], runner.states[1].k_cache[0])


@pytest.mark.parametrize("name, tp, kv", [("tiny-llama", 2, 1), ("tiny-qwen3", 4, 1), ("tiny-qwen3", 4, 2)],
                         ids=["mqa-tp2", "mqa-tp4", "kv2-tp4"])
def test_kv_heads_are_replicated_when_ranks_outnumber_them(name, tp, kv):
    """With fewer KV heads than ranks, each rank holds the KV head its query heads use (4 heads here)."""
    model = tiny(name, 1, num_key_value_heads=kv)
    runner = megagen.build(model, tp=tp, world="emulated", max_seq_len=MAX_SEQ_LEN, **CTAS)
    assert [s.layers[0].attn.kv_heads for s in runner.shards] == [1] * tp
    check_against_hf(runner, model, prompt(1, 5), NEW_TOKENS)
    replicas = tp // kv  # ranks r and r + 1 share a KV head when replicas > 1
    caches = [s.k_cache[0] for s in runner.states]
    assert all(torch.equal(caches[r], caches[r - r % replicas]) for r in range(tp))
    assert kv == 1 or not torch.equal(caches[0], caches[replicas])


def test_schedulers_agree_under_tp():
    """Every rank reduces in one fixed order, so the schedule cannot change a bit of the logits."""
    model = tiny("tiny-qwen3", 2)
    ids = prompt(1, 5)
    logits = {}
    for scheduler in ("round_robin", "zigzag", "work_queue"):
        runner = megagen.build(model, tp=2, world="emulated", scheduler=scheduler, max_seq_len=MAX_SEQ_LEN, **CTAS)
        _, logits[scheduler] = runner.generate(ids, 3, return_logits=True)
    assert torch.equal(logits["round_robin"], logits["zigzag"])
    assert torch.equal(logits["round_robin"], logits["work_queue"])


@pytest.mark.parametrize("mode", ["one_shot", "two_shot"])
def test_allreduce_sums_every_rank_in_one_order(mode):
    """Three ranks (chunks of uneven size for two-shot), split-K parts and a residual: every rank gets the
    same bits, equal to the sum in rank order."""
    world, batch, n = EmulatedWorld(3, DEVICE), 2, 1000
    gen = torch.Generator().manual_seed(0)
    residual = torch.randn(1, batch, n, generator=gen).to(DEVICE)
    graphs, parts, outs = [], [], []
    for rank in world.ranks:
        g = TaskGraph(f"allreduce_rank{rank}", world=world, rank=rank)
        part = world.symmetric(rank, (2, batch, n), torch.float32)
        part.copy_(torch.randn(2, batch, n, generator=gen))
        res = residual.clone()
        out = torch.empty(1, batch, n, device=DEVICE)
        g.input(part, res)
        assert allreduce_ops(g, "ar", part, res, out, ranks=world.size, mode=mode) == mode
        graphs.append(g), parts.append(part), outs.append(out)
    megagen.MegaKernel(graphs, world=world, num_ctas=3).run()
    want = residual[0].clone()
    for part in parts:
        want = want + part[0] + part[1]
    for out in outs:
        assert torch.equal(out[0], outs[0][0])
        torch.testing.assert_close(out[0], want, rtol=1e-6, atol=1e-5)


def test_barrier_waits_for_every_rank():
    """A barrier after each rank's write of a symmetric tensor: one tile, waiting on every rank's producers."""
    world = EmulatedWorld(3, DEVICE)
    graphs, dones = [], []
    for rank in world.ranks:
        g = TaskGraph(f"barrier_rank{rank}", world=world, rank=rank)
        x = torch.full((64,), float(rank + 1), device=DEVICE)
        after = world.symmetric(rank, (64,), torch.float32)
        done = torch.zeros(1, dtype=torch.int64, device=DEVICE)
        g.input(x)
        g.add(megagen.tasks.scale, name="write", x=x, out=after, alpha=2.0, BLOCK=16)
        g.add(barrier, name="barrier", after=after, done=done)
        graphs.append(g), dones.append(done)
    kernel = megagen.MegaKernel(graphs, world=world, num_ctas=2)
    kernel.run()
    assert all(int(d) == 1 for d in dones)
    # its one tile waits for all four tiles of "write" (one counter), on every rank
    barrier_task = kernel.dag.num_tasks - 1
    assert len(kernel.dag.deps(barrier_task)) == 4
    assert "if wait_peer_deps(" in kernel.source and "barrier(after: float32" in kernel.source
    assert 'release_tile(counters, task, op_counter, group_counter, "sys", FENCE)' in kernel.source


def test_one_rank_waits_and_releases_at_the_kernels_scope():
    """The same barrier in a world of one rank reads its one copy: it polls its own counters as every task does
    (wait_deps), and "write" releases at the kernel's scope: system scope is for other GPUs."""
    g = TaskGraph("barrier_one_rank")
    x, after = torch.full((64,), 3.0, device=DEVICE), torch.zeros(64, device=DEVICE)
    done = torch.zeros(1, dtype=torch.int64, device=DEVICE)
    g.input(x)
    g.add(megagen.tasks.scale, name="write", x=x, out=after, alpha=2.0, BLOCK=16)
    g.add(barrier, name="barrier", after=after, done=done)
    kernel = megagen.MegaKernel(g, num_ctas=2)
    kernel.run()
    assert int(done) == 1 and torch.equal(after, torch.full((64,), 6.0, device=DEVICE))
    assert "if wait_peer_deps(" not in kernel.source and '"sys", FENCE)' not in kernel.source


def test_a_process_running_one_rank_meets_the_others_before_its_first_launch(monkeypatch):
    """Under torchrun a rank's waits for its peers give up after max_spins polls, and ranks compile for seconds: so
    before a kernel's first launch its process compiles it, lets the GPU finish, and waits at the world's barrier,
    once. (Here one process runs the world, so the kernel is made to act as one rank of several.)"""
    g = TaskGraph("meet_first")
    x, out = torch.full((64,), 3.0, device=DEVICE), torch.zeros(64, device=DEVICE)
    g.input(x)
    g.add(megagen.tasks.scale, name="double", x=x, out=out, alpha=2.0, BLOCK=16)
    kernel = megagen.MegaKernel(g, num_ctas=2)
    assert kernel._ranks_met, "a process that runs every rank of its world has no one to meet"
    kernel._ranks_met = False
    calls = []
    monkeypatch.setattr(kernel.build.module.megakernel, "warmup", lambda *a, **k: calls.append("compile"))
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: calls.append("synchronize"))
    monkeypatch.setattr(kernel.world, "barrier", lambda: calls.append("barrier"))
    kernel.run()
    kernel.run()
    assert calls == ["compile", "synchronize", "barrier"]
    assert torch.equal(out, torch.full((64,), 6.0, device=DEVICE))


def test_a_missing_peer_dependency_names_the_rank():
    """A rank whose producer never runs: the peer's allreduce gives up, naming ranks and task, and the kernel is
    reset and runs again."""
    world = EmulatedWorld(2, DEVICE)
    graphs = []
    for rank in world.ranks:
        g = TaskGraph(f"stall_rank{rank}", world=world, rank=rank)
        part = world.symmetric(rank, (1, 1, 64), torch.float32)
        res, out = torch.zeros(1, 1, 64, device=DEVICE), torch.empty(1, 1, 64, device=DEVICE)
        g.input(res, part)
        allreduce_ops(g, "ar", part, res, out, ranks=2, mode="one_shot")
        graphs.append(g)
    kernel = megagen.MegaKernel(graphs, world=world, num_ctas=2, max_spins=64)
    kernel.run()
    # forge a dependency on a counter nothing increments: rank 1's counters are a peer's for rank 0
    kernel.layout.records[:, REC_DEP0] = (1 << 32) | (kernel.layout.num_counters - 1)
    kernel._buffers["records"].copy_(torch.from_numpy(kernel.layout.records))
    kernel._counters[1][-1] = -(1 << 40)  # never reaches its target
    with pytest.raises(DeadlockError, match=r"rank \d") as err:
        kernel.run()
    assert "ar" in str(err.value)
    assert int(kernel._counters[0].count_nonzero()) == 0  # reset: the scoreboard is zero again


def test_tp_errors_come_before_anything_runs(monkeypatch):
    model = tiny("tiny-qwen3", 1)
    with pytest.raises(MegagenError, match="does not divide the model's attention heads"):
        megagen.build(model, tp=3, world="emulated")
    with pytest.raises(MegagenError, match="neither divides the model's KV heads"):  # 6 heads, 3 KV heads
        megagen.build(tiny("tiny-qwen3", 1, num_attention_heads=6, num_key_value_heads=3), tp=2, world="emulated")
    with pytest.raises(MegagenError, match="intermediate size"):
        megagen.build(tiny("tiny-qwen3", 4, intermediate_size=130), tp=4, world="emulated")
    with pytest.raises(MegagenError, match="allreduce"):
        megagen.build(model, tp=2, world="emulated", allreduce="three_shot")
    with pytest.raises(MegagenError, match="world"):
        megagen.build(model, tp=2, world="everywhere")
    with pytest.raises(MegagenError, match="world given has 3 ranks"):
        megagen.build(model, tp=2, world=EmulatedWorld(3, DEVICE))
    if DEVICE.type == "cpu":
        with pytest.raises(MegagenError, match="world='emulated'"):
            megagen.build(model, tp=2)
    # under torchrun (one process per rank): without it, and without NVSHMEM's bindings, say what to do
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    with pytest.raises(MegagenError, match="torchrun --nproc-per-node 2"):
        NvshmemWorld(2)
    monkeypatch.setenv("WORLD_SIZE", "4")
    with pytest.raises(MegagenError, match="tp=2 but the job has 4 processes"):
        NvshmemWorld(2)
    monkeypatch.setenv("WORLD_SIZE", "2")
    try:
        import nvshmem.core  # noqa: F401
    except ImportError:
        with pytest.raises(MegagenError, match=r"megagen\[tp\]"):
            make_world(2, None, DEVICE)


def test_runner_stays_usable_after_bad_input():
    model = tiny("tiny-llama", 2)
    runner = megagen.build(model, tp=2, world="emulated", max_seq_len=MAX_SEQ_LEN, **CTAS)
    with pytest.raises(MegagenError, match="vocabulary"):
        runner.generate(torch.tensor([[3, 4, 999]]), 2)
    check_against_hf(runner, model, prompt(1, 5), 2)


def test_bench_tp_correctness_measures():
    """megagen.bench_tp's comparisons with a tp=1 run, on an emulated tp=2: exact where the ranks agree."""
    from megagen.bench_tp import compare, teacher_forced
    model = tiny("tiny-qwen3", 2)
    ids = prompt(1, 5)
    tokens, logits = megagen.build(model, max_seq_len=MAX_SEQ_LEN).generate(ids, 4, return_logits=True)
    runner = megagen.build(model, tp=2, world="emulated", max_seq_len=MAX_SEQ_LEN, **CTAS)
    forced = teacher_forced(runner, ids, tokens, logits)
    assert forced["steps"] == 3 and forced["argmax_agreement"] == 1.0
    assert forced["max_relative_error"] < 1e-4 and forced["min_cosine"] > 0.99999
    got_tokens, got_logits = runner.generate(ids, 4, return_logits=True)
    free = compare(got_tokens, got_logits, tokens, logits)
    assert free["tokens_equal_from_start"] == 4 and free["compared_steps"] == 3
    shifted = tokens.clone()
    shifted[0, -2] += 1  # a different third new token: only the steps before it compare
    assert compare(got_tokens, got_logits, shifted, logits)["tokens_equal_from_start"] == 2
    assert compare(got_tokens, got_logits, shifted, logits)["compared_steps"] == 2
