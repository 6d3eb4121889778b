"""Helpers shared by the megagen tests: random inputs, NaN poisoning, comparison, extra schedulers."""
from __future__ import annotations

import heapq

import numpy as np
import torch

import megagen

#: The built-in schedulers every graph must run correctly under.
SCHEDULERS = ["round_robin", "zigzag", "work_queue"]


def rand(*shape, device, scale: float = 1.0, dtype=torch.float32) -> torch.Tensor:
    """Random values with magnitude in [0.5, 1.5) * scale and random sign: never zero, no cancellation to 0."""
    mag = torch.rand(*shape, dtype=torch.float32) + 0.5
    sign = torch.where(torch.rand(*shape) < 0.5, -1.0, 1.0)
    return (mag * sign * scale).to(device=device, dtype=dtype)


def weights(n: int, k: int, *, device) -> torch.Tensor:
    """A random [n, k] matrix scaled so chained GEMVs keep values of order one."""
    return rand(n, k, device=device, scale=1.0 / k ** 0.5)


def nan_like(t: torch.Tensor) -> torch.Tensor:
    return torch.full_like(t, float("nan"))


def poison(*tensors: torch.Tensor) -> None:
    """Fill outputs with NaN, so elements a run does not write show up in the comparison."""
    for t in tensors:
        t.fill_(float("nan"))


def assert_matches(actual: torch.Tensor, expected: torch.Tensor, *, rtol: float = 1e-5, atol: float = 1e-5,
                   what: str = "result") -> None:
    """``actual`` (a MegaKernel output) equals the PyTorch reference ``expected``; NaNs mean unwritten elements."""
    actual = actual.detach().cpu()
    expected = expected.detach().cpu().to(actual.dtype)
    assert actual.shape == expected.shape, f"{what}: shape {tuple(actual.shape)} != {tuple(expected.shape)}"
    assert not torch.isnan(expected).any(), f"{what}: the reference itself has NaNs (test bug)"
    unwritten = torch.isnan(actual)
    if unwritten.any():
        idx = torch.nonzero(unwritten.reshape(-1)).reshape(-1)
        raise AssertionError(f"{what}: {idx.numel()} of {actual.numel()} elements still NaN (never written), "
                             f"first flat indices {idx[:10].tolist()}")
    torch.testing.assert_close(actual, expected, rtol=rtol, atol=atol, msg=lambda m: f"{what}: {m}")


# -- extra (valid) schedulers that run tasks far from program order, so a missing dependency shows ---------

def _latest_ready_first(dag: megagen.TileDAG) -> np.ndarray:
    """A topological order that always takes the highest-numbered ready task (depth first, far from 0..n-1)."""
    n = dag.num_tasks
    consumers = [[] for _ in range(n)]
    indeg = np.zeros(n, np.int64)
    for t in range(n):
        for p in dag.deps(t).tolist():
            consumers[p].append(t)
            indeg[t] += 1
    ready = [-t for t in np.flatnonzero(indeg == 0).tolist()]
    heapq.heapify(ready)
    order = []
    while ready:
        t = -heapq.heappop(ready)
        order.append(t)
        for c in consumers[t]:
            indeg[c] -= 1
            if indeg[c] == 0:
                heapq.heappush(ready, -c)
    assert len(order) == n, "TileDAG has a cycle"
    return np.asarray(order, dtype=np.int64)


class ByOp(megagen.Scheduler):
    """Static: every tile of op k goes to CTA k mod num_ctas, so later ops race ahead on their own CTAs."""

    name = "by_op"

    def assign(self, dag, num_ctas):
        cta = dag.task_op % num_ctas
        tasks = np.arange(dag.num_tasks)
        return megagen.StaticSchedule([tasks[cta == c] for c in range(num_ctas)], self.name)


class LatestFirstStatic(megagen.Scheduler):
    """Static: a depth-first topological order dealt round robin."""

    name = "latest_first_static"

    def assign(self, dag, num_ctas):
        order = _latest_ready_first(dag)
        return megagen.StaticSchedule([order[c::num_ctas] for c in range(num_ctas)], self.name)


class LatestFirstQueue(megagen.Scheduler):
    """Dynamic: a depth-first topological order as the work queue."""

    name = "latest_first_queue"

    def assign(self, dag, num_ctas):
        return megagen.DynamicSchedule(_latest_ready_first(dag), num_ctas, self.name)


class Backwards(megagen.Scheduler):
    """Invalid static schedule: the reverse of program order dealt round robin (consumers before producers)."""

    name = "backwards"

    def assign(self, dag, num_ctas):
        order = np.arange(dag.num_tasks)[::-1].copy()
        return megagen.StaticSchedule([order[c::num_ctas] for c in range(num_ctas)], self.name)


class StuckAfterFirstOp(megagen.Scheduler):
    """Invalid static schedule that gets somewhere first: every tile of op 0, then the other tasks in reverse
    program order, dealt round robin. The first op finishes; then every CTA waits on a task queued behind it."""

    name = "stuck_after_first_op"

    def assign(self, dag, num_ctas):
        first = int(dag.op_offsets[1])
        order = np.concatenate([np.arange(first), np.arange(first, dag.num_tasks)[::-1]])
        return megagen.StaticSchedule([order[c::num_ctas] for c in range(num_ctas)], self.name)


class BackwardsQueue(megagen.Scheduler):
    """Invalid dynamic schedule: a work queue in reverse program order."""

    name = "backwards_queue"

    def assign(self, dag, num_ctas):
        return megagen.DynamicSchedule(np.arange(dag.num_tasks)[::-1].copy(), num_ctas, self.name)


EXTRA_SCHEDULERS = {s.name: s for s in (ByOp, LatestFirstStatic, LatestFirstQueue)}

#: Built-in schedulers plus valid but adversarial ones, for tests of ordering hazards.
HAZARD_SCHEDULERS = SCHEDULERS + list(EXTRA_SCHEDULERS)


def make_scheduler(name: str):
    """A name megagen knows, or an instance of one of the extra schedulers above."""
    return EXTRA_SCHEDULERS[name]() if name in EXTRA_SCHEDULERS else name
