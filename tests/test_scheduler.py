"""Schedulers (placement and order), the schedule simulator, and static/dynamic deadlock detection."""
from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import torch

import megagen
from megagen import DeadlockError, DynamicSchedule, MegagenError, StaticSchedule, simulate
from megagen.scheduler import SCHEDULERS, get_scheduler, task_costs
from megagen.tasks import add, gemv, scale
from mgutil import rand


def make_dag(op_tiles, deps=None, names=None) -> megagen.TileDAG:
    """A TileDAG by hand: ``deps[task]`` lists its producers."""
    deps = deps or {}
    offsets = np.concatenate([[0], np.cumsum(op_tiles)]).astype(np.int64)
    n = int(offsets[-1])
    ptr, idx = [0], []
    for t in range(n):
        idx += sorted(deps.get(t, []))
        ptr.append(len(idx))
    names = names or [f"op{i}" for i in range(len(op_tiles))]
    return megagen.TileDAG(names, offsets, np.asarray(ptr, np.int64), np.asarray(idx, np.int64), nx.DiGraph())


def queues(schedule):
    return [q.tolist() for q in schedule.queues]


# Two ops of two tiles: B tile i reads A tile i (elementwise), or every A tile (all-to-all, like a GEMV).
ELEMENTWISE = {2: [0], 3: [1]}
ALL_TO_ALL = {2: [0, 1], 3: [0, 1]}
COSTS = np.array([1.0, 2.0, 3.0, 4.0])


# ---------------------------------------------------------------------------------------------------------
# Placement
# ---------------------------------------------------------------------------------------------------------

def test_round_robin_placement():
    s = megagen.RoundRobin().assign(make_dag([10]), 3)
    assert isinstance(s, StaticSchedule) and not s.dynamic and s.scheduler == "round_robin"
    assert s.num_ctas == 3
    assert queues(s) == [[0, 3, 6, 9], [1, 4, 7], [2, 5, 8]]
    flat, offsets = s.flat()
    assert flat.tolist() == [0, 3, 6, 9, 1, 4, 7, 2, 5, 8] and offsets.tolist() == [0, 4, 7, 10]


@pytest.mark.parametrize("n, ctas, expected", [
    (10, 3, [[0, 5, 6], [1, 4, 7], [2, 3, 8, 9]]),
    (9, 4, [[0, 7, 8], [1, 6], [2, 5], [3, 4]]),
    (4, 2, [[0, 3], [1, 2]]),
    (3, 5, [[0], [1], [2], [], []]),
    (5, 1, [[0, 1, 2, 3, 4]]),
])
def test_zigzag_snake_order(n, ctas, expected):
    s = megagen.ZigZag().assign(make_dag([n]), ctas)
    assert s.scheduler == "zigzag" and not s.dynamic
    assert queues(s) == expected


@pytest.mark.parametrize("name", ["round_robin", "zigzag"])
@pytest.mark.parametrize("n", [1, 7, 23])
@pytest.mark.parametrize("ctas", [1, 2, 5, 30])
def test_static_schedulers_place_every_task_once_in_order(name, n, ctas):
    s = get_scheduler(name).assign(make_dag([n]), ctas)
    assert s.num_ctas == ctas
    flat = np.concatenate(s.queues)
    assert sorted(flat.tolist()) == list(range(n))
    for q in s.queues:
        assert np.all(np.diff(q) > 0), "each queue follows the (topological) task numbering"
    sizes = [q.size for q in s.queues]
    assert max(sizes) - min(sizes) <= 1 + (name == "zigzag"), "balanced"


def test_work_queue_order_is_topological(device):
    k = 32
    x, w = rand(k, device=device), rand(k, k, device=device)
    a, b, c = torch.empty(k, device=device), torch.empty(k, device=device), torch.empty(k, device=device)
    g = megagen.TaskGraph("wq", inputs=[x, w])
    g.add(gemv, w=w, x=x, y=a, BLOCK_N=8, BLOCK_K=16)
    g.add(scale, x=a, out=b, alpha=2.0, BLOCK=16)
    g.add(add, x=a, y=b, out=c, BLOCK=8)
    g.add(gemv, w=w, x=c, y=a, BLOCK_N=16, BLOCK_K=16)
    dag = g.dependencies
    s = megagen.WorkQueue().assign(dag, 3)
    assert isinstance(s, DynamicSchedule) and s.dynamic and s.num_ctas == 3 and s.scheduler == "work_queue"
    order = np.asarray(s.order)
    assert sorted(order.tolist()) == list(range(dag.num_tasks))
    pos = np.empty(dag.num_tasks, np.int64)
    pos[order] = np.arange(dag.num_tasks)
    for t in range(dag.num_tasks):
        assert np.all(pos[dag.deps(t)] < pos[t])
    simulate(s, dag)  # a topological order never deadlocks


def test_compiled_schedule_is_the_schedulers(device):
    n = 64
    x, a = rand(n, device=device), torch.empty(n, device=device)
    g = megagen.TaskGraph("placement", inputs=[x])
    g.add(scale, x=x, out=a, alpha=2.0, BLOCK=8)  # 8 tasks
    mk = g.compile("zigzag", num_ctas=3)
    assert queues(mk.schedule) == [[0, 5, 6], [1, 4, 7], [2, 3]]
    mk = g.compile(megagen.RoundRobin, num_ctas=3)  # a Scheduler class is accepted too
    assert queues(mk.schedule) == [[0, 3, 6], [1, 4, 7], [2, 5]]


# ---------------------------------------------------------------------------------------------------------
# get_scheduler
# ---------------------------------------------------------------------------------------------------------

def test_get_scheduler():
    assert set(SCHEDULERS) == {"round_robin", "zigzag", "work_queue"}
    assert isinstance(get_scheduler("round_robin"), megagen.RoundRobin)
    assert isinstance(get_scheduler("zigzag"), megagen.ZigZag)
    assert isinstance(get_scheduler("work_queue"), megagen.WorkQueue)
    assert isinstance(get_scheduler(megagen.ZigZag), megagen.ZigZag)
    mine = megagen.WorkQueue()
    assert get_scheduler(mine) is mine


@pytest.mark.parametrize("bad", ["fifo", "RoundRobin", None, 3, int])
def test_get_scheduler_unknown(bad):
    with pytest.raises(MegagenError, match="unknown scheduler"):
        get_scheduler(bad)


def test_compile_with_unknown_scheduler(device):
    x, a = rand(8, device=device), torch.empty(8, device=device)
    g = megagen.TaskGraph("unknown", inputs=[x])
    g.add(scale, x=x, out=a, alpha=2.0)
    with pytest.raises(MegagenError, match="unknown scheduler 'fifo'"):
        g.compile("fifo")


def test_base_scheduler_is_abstract():
    with pytest.raises(NotImplementedError):
        megagen.Scheduler().assign(make_dag([2]), 1)


# ---------------------------------------------------------------------------------------------------------
# simulate
# ---------------------------------------------------------------------------------------------------------

def test_simulate_static_elementwise_by_hand():
    dag = make_dag([2, 2], ELEMENTWISE)
    s = StaticSchedule([np.array([0, 2]), np.array([1, 3])], "hand")
    r = simulate(s, dag, COSTS)
    # CTA 0: A0 [0, 1), B0 [1, 4); CTA 1: A1 [0, 2), B1 [2, 6)
    assert r.start.tolist() == [0, 0, 1, 2] and r.finish.tolist() == [1, 2, 4, 6]
    assert r.makespan == 6 and r.busy.tolist() == [4, 6] and r.cta.tolist() == [0, 1, 0, 1]
    assert r.utilisation == pytest.approx(10 / 12)
    assert r.summary() == "makespan 6.00, CTA busy min/mean/max 4.00/5.00/6.00, utilisation 83.3%"


def test_simulate_static_all_to_all_by_hand():
    dag = make_dag([2, 2], ALL_TO_ALL)
    r = simulate(StaticSchedule([np.array([0, 2]), np.array([1, 3])]), dag, COSTS)
    # B0 waits for A1 (finishes at 2) although its own CTA is free at 1
    assert r.start.tolist() == [0, 0, 2, 2] and r.finish.tolist() == [1, 2, 5, 6] and r.makespan == 6


def test_simulate_static_cross_placement_by_hand():
    dag = make_dag([2, 2], ELEMENTWISE)
    s = megagen.ZigZag().assign(dag, 2)  # CTA 0: A0, B1; CTA 1: A1, B0
    r = simulate(s, dag, COSTS)
    assert r.start.tolist() == [0, 0, 2, 2] and r.finish.tolist() == [1, 2, 5, 6]
    assert r.busy.tolist() == [5, 5] and r.makespan == 6


def test_simulate_one_cta_is_the_sum_and_default_cost_is_one():
    dag = make_dag([2, 2], ALL_TO_ALL)
    s = megagen.RoundRobin().assign(dag, 1)
    assert simulate(s, dag, COSTS).makespan == 10
    r = simulate(s, dag)
    assert r.makespan == 4 and r.finish.tolist() == [1, 2, 3, 4]


def test_simulate_dynamic_by_hand():
    dag = make_dag([2, 2], ELEMENTWISE)
    r = simulate(DynamicSchedule(np.arange(4), 2), dag, COSTS)
    assert r.start.tolist() == [0, 0, 1, 2] and r.finish.tolist() == [1, 2, 4, 6]
    assert r.cta.tolist() == [0, 1, 0, 1] and r.makespan == 6
    # another topological order: A1 is taken first, by CTA 0; each next task goes to the CTA free first
    r = simulate(DynamicSchedule(np.array([1, 0, 3, 2]), 2), dag, COSTS)
    assert r.cta.tolist() == [1, 0, 0, 1]
    assert r.start.tolist() == [0, 0, 2, 2] and r.finish.tolist() == [1, 2, 5, 6] and r.makespan == 6


def test_simulate_independent_tasks_fill_the_ctas():
    dag = make_dag([6])
    r = simulate(DynamicSchedule(np.arange(6), 3), dag, np.full(6, 2.0))
    assert r.makespan == 4 and r.busy.tolist() == [4, 4, 4] and r.utilisation == 1.0


def test_task_costs_and_compiled_simulation(device):
    k = 64
    x, w = rand(k, device=device), rand(k, k, device=device)
    y, z = torch.empty(k, device=device), torch.empty(k, device=device)
    g = megagen.TaskGraph("costs", inputs=[x, w])
    g.add(gemv, w=w, x=x, y=y, BLOCK_N=16, BLOCK_K=32)
    g.add(scale, x=y, out=z, alpha=2.0, BLOCK=32)
    costs = task_costs(g)
    assert costs.shape == (6,)
    assert np.allclose(costs[:4], 0.5 + 16 * k * 4 / 25_000) and np.allclose(costs[4:], 0.5)
    mk = g.compile("round_robin", num_ctas=2)
    again = simulate(mk.schedule, mk.dag, costs)
    assert mk.simulation.makespan == pytest.approx(again.makespan)
    assert mk.simulation.busy.sum() == pytest.approx(costs.sum())


def test_simulate_rejects_non_schedules():
    with pytest.raises(TypeError):
        simulate([np.arange(2)], make_dag([2]))


# ---------------------------------------------------------------------------------------------------------
# Deadlock detection
# ---------------------------------------------------------------------------------------------------------

def test_static_cross_cta_deadlock():
    dag = make_dag([2, 2], ELEMENTWISE, names=["A", "B"])
    s = StaticSchedule([np.array([2, 1]), np.array([3, 0])], "crossed")  # B0 waits for A0 behind B1, and back
    with pytest.raises(DeadlockError, match="schedule 'crossed' deadlocks") as err:
        simulate(s, dag)
    msg = str(err.value)
    assert "CTA 0 is stuck at B[tile 0], which waits for A[tile 0] (CTA 1)" in msg
    assert "CTA 1 is stuck at B[tile 1], which waits for A[tile 1] (CTA 0)" in msg


def test_static_self_deadlock():
    dag = make_dag([2, 2], ALL_TO_ALL, names=["A", "B"])
    s = StaticSchedule([np.array([2, 0]), np.array([1, 3])], "self")  # B0 before its own producer A0
    with pytest.raises(DeadlockError, match=r"CTA 0 is stuck at B\[tile 0\], which waits for A\[tile 0\] \(CTA 0\)"):
        simulate(s, dag)


def test_dynamic_non_topological_order():
    dag = make_dag([2, 2], ELEMENTWISE, names=["A", "B"])
    with pytest.raises(DeadlockError, match=r"not a topological order: B\[tile 0\] comes before its producer "
                                            r"A\[tile 0\]"):
        simulate(DynamicSchedule(np.array([2, 0, 1, 3]), 4), dag)


@pytest.mark.parametrize("schedule, match", [
    (StaticSchedule([np.array([0, 1]), np.array([1, 2, 3])]), r"exactly once; op0\[tile 1\] appears 2 times"),
    (StaticSchedule([np.array([0, 1]), np.array([3])]), r"exactly once; op1\[tile 0\] appears 0 times"),
    (StaticSchedule([np.array([0, 1, 2, 3, 4])]), "outside 0..3"),
    (DynamicSchedule(np.array([0, 1, 2, 2]), 2), "exactly once"),
    (DynamicSchedule(np.array([0, 1, 2]), 2), "exactly once"),
    (DynamicSchedule(np.array([0, 1, 2, 3, 4]), 2), "outside 0..3"),
    # not covered: a negative task id, which megagen reports as numpy's ValueError (from bincount), not DeadlockError
])
def test_schedules_must_hold_every_task_once(schedule, match):
    with pytest.raises(DeadlockError, match=match):
        simulate(schedule, make_dag([2, 2], ELEMENTWISE))


def test_compile_rejects_a_deadlocking_custom_scheduler(device):
    class Crossed(megagen.Scheduler):
        name = "crossed"

        def assign(self, dag, num_ctas):
            return StaticSchedule([np.array([2, 1]), np.array([3, 0])], self.name)

    x, a, b = rand(32, device=device), torch.empty(32, device=device), torch.empty(32, device=device)
    g = megagen.TaskGraph("crossed", inputs=[x])
    g.add(scale, x=x, out=a, alpha=2.0, BLOCK=16)
    g.add(scale, x=a, out=b, alpha=2.0, BLOCK=16)
    with pytest.raises(DeadlockError, match=r"CTA 0 is stuck at scale_1\[tile 0\]"):
        g.compile(Crossed(), num_ctas=2)
