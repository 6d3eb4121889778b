"""Property tests: random programs of elementwise ops over a small pool of reused buffers.

Each program is a list of add/mul/scale ops, each with its own BLOCK (so tiles of
consecutive ops do not line up), reading buffers that hold data (graph inputs or
buffers written earlier) and writing any buffer of the pool, inputs included, so
read-after-write, write-after-read and write-after-write hazards all occur. The
MegaKernel must give what evaluating the ops one after another in torch gives.
"""
from __future__ import annotations

import dataclasses

import networkx as nx
import numpy as np
import torch
from hypothesis import given, settings, strategies as st

import megagen
from megagen.scheduler import simulate
from megagen.tasks import add, mul, scale
from mgutil import SCHEDULERS, assert_matches, poison, rand

TASKS = {"add": add, "mul": mul, "scale": scale}
BLOCKS = [8, 16, 32, 64, 128]
ALPHAS = [0.5, -1.5, 2.0, -0.25]  # exact in float32, so torch and the kernel round identically


@dataclasses.dataclass
class OpSpec:
    kind: str
    x: int
    y: int | None
    out: int
    block: int
    alpha: float


@dataclasses.dataclass
class Program:
    n: int
    pool: int
    inputs: list[int]
    ops: list[OpSpec]
    num_ctas: int
    seed: int

    def accesses(self, op: OpSpec):
        """(buffer, is_write) pairs of one op."""
        reads = [op.x] + ([op.y] if op.y is not None else [])
        return [(b, False) for b in reads] + [(op.out, True)]


@st.composite
def programs(draw):
    n = draw(st.integers(1, 150))
    pool = draw(st.integers(2, 5))
    inputs = sorted(draw(st.sets(st.integers(0, pool - 1), min_size=1, max_size=pool)))
    holds_data = set(inputs)
    ops = []
    for _ in range(draw(st.integers(1, 7))):
        kind = draw(st.sampled_from(sorted(TASKS)))
        sources = sorted(holds_data)
        x = draw(st.sampled_from(sources))
        y = None if kind == "scale" else draw(st.sampled_from(sources))
        out = draw(st.integers(0, pool - 1))
        ops.append(OpSpec(kind, x, y, out, draw(st.sampled_from(BLOCKS)), draw(st.sampled_from(ALPHAS))))
        holds_data.add(out)
    return Program(n, pool, inputs, ops, draw(st.integers(1, 6)), draw(st.integers(0, 2**31 - 1)))


def build(program: Program, device):
    torch.manual_seed(program.seed)  # inputs depend on the example only, so a failure replays exactly
    buffers = [torch.empty(program.n, device=device) for _ in range(program.pool)]
    originals = {i: rand(program.n, device=device) for i in program.inputs}
    g = megagen.TaskGraph("random", inputs=[buffers[i] for i in program.inputs])
    for op in program.ops:
        kwargs = dict(x=buffers[op.x], out=buffers[op.out], BLOCK=op.block)
        if op.kind == "scale":
            kwargs["alpha"] = op.alpha
        else:
            kwargs["y"] = buffers[op.y]
        g.add(TASKS[op.kind], **kwargs)
    return g, buffers, originals


def sequential(program: Program, originals) -> dict[int, torch.Tensor]:
    """Evaluate the ops one after another with torch: the semantics a graph promises."""
    vals = {i: v.clone() for i, v in originals.items()}
    for op in program.ops:
        if op.kind == "add":
            vals[op.out] = vals[op.x] + vals[op.y]
        elif op.kind == "mul":
            vals[op.out] = vals[op.x] * vals[op.y]
        else:
            vals[op.out] = vals[op.x] * op.alpha
    return vals


def tile_ranges(program: Program, op: OpSpec):
    return [(s, min(s + op.block, program.n)) for s in range(0, program.n, op.block)]


@settings(max_examples=25)
@given(programs())
def test_random_elementwise_programs_match_sequential_torch(device, program):
    g, buffers, originals = build(program, device)
    expected = sequential(program, originals)
    for name in SCHEDULERS:
        mk = g.compile(name, num_ctas=program.num_ctas)
        for i, b in enumerate(buffers):
            if i in originals:
                b.copy_(originals[i])
            else:
                poison(b)
        mk.run()
        for i, ref in expected.items():
            assert_matches(buffers[i], ref, rtol=1e-6, atol=1e-6, what=f"{name}: buffer {i}")
        assert mk.launches == 1


@settings(max_examples=60)
@given(programs())
def test_random_programs_schedules_simulate_and_dependencies_are_sound(device, program):
    g, _, _ = build(program, device)
    dag = g.dependencies
    costs = np.random.default_rng(program.seed).uniform(0.1, 5.0, dag.num_tasks)

    for name in SCHEDULERS:
        schedule = megagen.scheduler.get_scheduler(name).assign(dag, program.num_ctas)
        result = simulate(schedule, dag, costs)  # finishes: no DeadlockError
        assert np.all(np.isfinite(result.finish))
        assert np.isclose(result.busy.sum(), costs.sum())
        for t in range(dag.num_tasks):
            d = dag.deps(t)
            assert np.all(result.finish[d] <= result.start[t] + 1e-12), "a task starts after its producers"

    # Soundness: every pair of conflicting tiles (overlapping elements, at least one write) is ordered by a path
    # of the tile DAG. Precision: every edge joins two tiles that really conflict (1-D, one view per buffer).
    tiles = []  # (task, op, buffer, is_write, lo, hi)
    task = 0
    for k, op in enumerate(program.ops):
        for lo, hi in tile_ranges(program, op):
            for b, w in program.accesses(op):
                tiles.append((task, k, b, w, lo, hi))
            task += 1
    assert task == dag.num_tasks
    tg = nx.DiGraph()
    tg.add_nodes_from(range(dag.num_tasks))
    for t in range(dag.num_tasks):
        tg.add_edges_from((int(p), t) for p in dag.deps(t))
    conflicts = set()
    for (t1, k1, b1, w1, lo1, hi1) in tiles:
        for (t2, k2, b2, w2, lo2, hi2) in tiles:
            if k1 < k2 and b1 == b2 and (w1 or w2) and max(lo1, lo2) < min(hi1, hi2):
                conflicts.add((t1, t2))
    reach = {t: nx.descendants(tg, t) for t in range(dag.num_tasks)}
    for p, c in conflicts:
        assert c in reach[p], f"{dag.describe(c)} is not ordered after {dag.describe(p)}"
    for c in range(dag.num_tasks):
        for p in dag.deps(c).tolist():
            assert (p, c) in conflicts, f"spurious edge {dag.describe(p)} -> {dag.describe(c)}"
