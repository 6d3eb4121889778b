"""Host-side discrete-event simulation of a schedule: deadlock check, makespan, per-CTA busy time.

The simulation follows the MegaKernel's rules: a CTA runs its tasks in queue
order (static) or takes the next task of the global order when it becomes free
(dynamic), and a task starts once its CTA is free and all its producers finished.
"""
from __future__ import annotations

import dataclasses
import heapq
from collections import deque

import numpy as np

from megagen.errors import DeadlockError
from megagen.graph.dependencies import TileDAG
from megagen.scheduler.base import DynamicSchedule, StaticSchedule


@dataclasses.dataclass
class SimResult:
    makespan: float  # same unit as the costs (microseconds for plan costs)
    busy: np.ndarray  # [num_ctas] time each CTA spends running tasks
    start: np.ndarray  # [num_tasks]
    finish: np.ndarray
    cta: np.ndarray  # [num_tasks] CTA that ran each task

    @property
    def utilisation(self) -> float:
        return float(self.busy.sum() / (self.makespan * self.busy.size)) if self.makespan > 0 else 1.0

    def summary(self) -> str:
        return (f"makespan {self.makespan:.2f}, CTA busy min/mean/max {self.busy.min():.2f}/"
                f"{self.busy.mean():.2f}/{self.busy.max():.2f}, utilisation {100 * self.utilisation:.1f}%")


def task_costs(graph) -> np.ndarray:
    """Per-task cost from each op's plan (``TilePlan.cost``), 1.0 where a plan gives none."""
    parts = []
    for op in graph.ops:
        c = op.plan.cost
        parts.append(np.broadcast_to(np.asarray(1.0 if c is None else c, dtype=np.float64), (op.num_tiles,)))
    return np.concatenate(parts)


def simulate(schedule, dag: TileDAG, cost: np.ndarray | None = None) -> SimResult:
    """Run ``schedule`` in simulation; raise ``DeadlockError`` naming the stuck tasks if it cannot finish."""
    cost = np.ones(dag.num_tasks) if cost is None else np.asarray(cost, dtype=np.float64)
    if isinstance(schedule, StaticSchedule):
        return _simulate_static(schedule, dag, cost)
    if isinstance(schedule, DynamicSchedule):
        return _simulate_dynamic(schedule, dag, cost)
    raise TypeError(f"not a schedule: {schedule!r}")


def _check_covers(dag: TileDAG, tasks: np.ndarray, what: str):
    if tasks.size and (tasks.min() < 0 or tasks.max() >= dag.num_tasks):
        raise DeadlockError(f"{what} holds task ids outside 0..{dag.num_tasks - 1}")
    counts = np.bincount(tasks, minlength=dag.num_tasks) if tasks.size else np.zeros(dag.num_tasks, np.int64)
    if np.any(counts != 1):
        bad = int(np.argmax(counts != 1))
        raise DeadlockError(f"{what} must hold every task exactly once; {dag.describe(bad)} appears "
                            f"{int(counts[bad])} times")


def _simulate_static(schedule: StaticSchedule, dag: TileDAG, cost: np.ndarray) -> SimResult:
    n = dag.num_tasks
    flat, offsets = schedule.flat()
    _check_covers(dag, flat, f"schedule '{schedule.scheduler}'")
    cta = np.empty(n, np.int64)
    prev = np.full(n, -1, np.int64)
    nxt = np.full(n, -1, np.int64)
    for c, q in enumerate(schedule.queues):
        cta[q] = c
        prev[q[1:]] = q[:-1]
        nxt[q[:-1]] = q[1:]
    consumers_order = np.argsort(dag.dep_idx, kind="stable")
    consumer_of_edge = np.repeat(np.arange(n), np.diff(dag.dep_ptr))[consumers_order]
    cons_ptr = np.searchsorted(dag.dep_idx[consumers_order], np.arange(n + 1))
    # producer sets: a consumer is released once, when the last member of the set finishes
    member_order = np.argsort(dag.set_idx, kind="stable")
    set_of_member = np.repeat(np.arange(dag.num_sets), np.diff(dag.set_ptr))[member_order]
    member_ptr = np.searchsorted(dag.set_idx[member_order], np.arange(n + 1))
    need_order = np.argsort(dag.need_idx, kind="stable")
    set_consumer = np.repeat(np.arange(n), np.diff(dag.need_ptr))[need_order]
    set_cons_ptr = np.searchsorted(dag.need_idx[need_order], np.arange(dag.num_sets + 1))
    set_left = np.diff(dag.set_ptr).tolist()
    set_finish = np.zeros(dag.num_sets)
    indeg = np.diff(dag.dep_ptr) + np.diff(dag.need_ptr) + (prev >= 0)
    finish = np.zeros(n)
    start = np.zeros(n)
    ready = deque(np.flatnonzero(indeg == 0).tolist())
    indeg = indeg.tolist()
    dep_ptr, dep_idx, need_ptr, need_idx = dag.dep_ptr, dag.dep_idx, dag.need_ptr, dag.need_idx
    done = 0
    while ready:
        t = ready.popleft()
        s = finish[prev[t]] if prev[t] >= 0 else 0.0
        d = dep_idx[dep_ptr[t]:dep_ptr[t + 1]]
        if d.size:
            s = max(s, finish[d].max())
        w = need_idx[need_ptr[t]:need_ptr[t + 1]]
        if w.size:
            s = max(s, set_finish[w].max())
        start[t] = s
        finish[t] = s + cost[t]
        done += 1
        released = consumer_of_edge[cons_ptr[t]:cons_ptr[t + 1]].tolist() + ([int(nxt[t])] if nxt[t] >= 0 else [])
        for k in set_of_member[member_ptr[t]:member_ptr[t + 1]].tolist():
            set_finish[k] = max(set_finish[k], finish[t])
            set_left[k] -= 1
            if set_left[k] == 0:
                released += set_consumer[set_cons_ptr[k]:set_cons_ptr[k + 1]].tolist()
        for c in released:
            indeg[c] -= 1
            if indeg[c] == 0:
                ready.append(c)
    if done < n:
        raise DeadlockError(_stuck_report(schedule, dag, indeg, cta))
    busy = np.bincount(cta, weights=cost, minlength=schedule.num_ctas)
    return SimResult(float(finish.max(initial=0.0)), busy, start, finish, cta)


def _stuck_report(schedule: StaticSchedule, dag: TileDAG, indeg, cta) -> str:
    lines = []
    for c, q in enumerate(schedule.queues):
        pending = [int(t) for t in q if indeg[int(t)] > 0]
        if not pending:
            continue
        head = pending[0]
        blocked_by = [int(d) for d in dag.deps(head) if indeg[int(d)] > 0]
        waits = ", ".join(f"{dag.describe(d)} (CTA {int(cta[d])})" for d in blocked_by[:3]) or "?"
        lines.append(f"  CTA {c} is stuck at {dag.describe(head)}, which waits for {waits}")
        if len(lines) == 5:
            break
    return (f"schedule '{schedule.scheduler}' deadlocks: a task waits for one queued behind it. "
            "Stuck CTAs:\n" + "\n".join(lines) +
            "\nEach CTA's queue must be ordered so that every task's producers can finish first.")


def _simulate_dynamic(schedule: DynamicSchedule, dag: TileDAG, cost: np.ndarray) -> SimResult:
    n = dag.num_tasks
    order = np.asarray(schedule.order, dtype=np.int64)
    _check_covers(dag, order, f"work queue '{schedule.scheduler}'")
    pos = np.empty(n, np.int64)
    pos[order] = np.arange(n)
    consumer = np.repeat(np.arange(n), np.diff(dag.dep_ptr))
    last_of_set = np.array([dag.set_tasks(k)[pos[dag.set_tasks(k)].argmax()] for k in range(dag.num_sets)],
                           dtype=np.int64)
    need_consumer = np.repeat(np.arange(n), np.diff(dag.need_ptr))
    producers = np.concatenate([dag.dep_idx, last_of_set[dag.need_idx]])
    consumers = np.concatenate([consumer, need_consumer])
    late = pos[producers] > pos[consumers]
    if np.any(late):
        k = int(np.argmax(late))
        raise DeadlockError(
            f"work queue '{schedule.scheduler}' is not a topological order: {dag.describe(int(consumers[k]))} "
            f"comes before its producer {dag.describe(int(producers[k]))}; with every CTA holding a task "
            "that waits on a later one, the kernel could hang")
    set_finish = {}
    free = [(0.0, c) for c in range(schedule.num_ctas)]
    start, finish, cta = np.zeros(n), np.zeros(n), np.zeros(n, np.int64)
    for t in order.tolist():
        f, c = heapq.heappop(free)
        d = dag.dep_idx[dag.dep_ptr[t]:dag.dep_ptr[t + 1]]
        s = max(f, finish[d].max()) if d.size else f
        for k in dag.needs(t).tolist():  # a topological order has finished every member already
            if k not in set_finish:
                set_finish[k] = finish[dag.set_tasks(k)].max()
            s = max(s, set_finish[k])
        start[t], finish[t], cta[t] = s, s + cost[t], c
        heapq.heappush(free, (finish[t], c))
    busy = np.bincount(cta, weights=cost, minlength=schedule.num_ctas)
    return SimResult(float(finish.max(initial=0.0)), busy, start, finish, cta)
