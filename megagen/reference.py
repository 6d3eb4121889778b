"""Reference executor: a TaskGraph run tile by tile with its tasks' plain-PyTorch references.

When a MegaKernel's result is wrong, ``find_mismatch`` says where: it runs each op through
its Triton tile function and through its reference from the same inputs and names the first
op, tile and tensor whose write box differs. ``run_reference`` runs a whole graph the
reference way, leaving the buffers as a MegaKernel launch would.
"""
from __future__ import annotations

import dataclasses
import math

import torch

from megagen.errors import TaskDefinitionError
from megagen.graph.dependencies import _tile_boxes
from megagen.runtime import OpLaunches
from megagen.tasks.base import param_names


@dataclasses.dataclass
class Mismatch:
    """The first tile whose writes differ between its Triton tile function and its task's reference."""

    op: str  # the op's name
    tile: int
    tensor: str  # the written tensor's name in the op
    max_abs_error: float  # over the tile's box; inf where only one side is NaN
    box: tuple[slice, ...]  # the tile's write box in that tensor
    mismatched: int  # elements of the box outside the tolerance
    size: int  # elements in the box

    def __str__(self) -> str:
        box = ", ".join(f"{s.start}:{s.stop}" for s in self.box)
        return (f"op {self.op}, tile {self.tile}: {self.tensor}[{box}] differs from the reference in "
                f"{self.mismatched} of {self.size} elements (max abs error {self.max_abs_error:.3g})")


def _check_references(graph) -> None:
    if graph.world_size > 1:
        raise TaskDefinitionError(f"graph {graph.name} is one rank of {graph.world_size}: its communication tasks "
                                  "need the other ranks' tensors, so it runs only as a MegaKernel")
    missing = sorted({op.task.name for op in graph.ops if op.task.reference is None})
    if missing:
        raise TaskDefinitionError(f"tasks {missing} have no reference; register them with "
                                  "register_task(..., reference=fn) to run them in PyTorch")


def _run_op(op) -> None:
    """Every tile of ``op`` through its reference, arguments bound by name as for the tile function."""
    ref = op.task.reference
    # a one-rank graph: rank 0 of 1, and a peer input is the list of its one copy
    values = {**op.plan.constexprs, **op.plan.scalars, **op.tensors, "rank": 0, "WORLD": 1}
    values.update({n: [op.tensors[n]] for n in op.task.peer_inputs})
    names = param_names(ref)
    for tile in range(op.num_tiles):
        values["tile"] = tile
        ref(**{n: values[n] for n in names})


@torch.no_grad()
def run_reference(graph) -> None:
    """Run ``graph``'s ops in order, every tile, with their references, in place on the graph's tensors."""
    _check_references(graph)
    for op in graph.ops:
        _run_op(op)


def _differs(got: torch.Tensor, want: torch.Tensor, rtol: float, atol: float) -> torch.Tensor:
    """Elementwise: outside the tolerance (exactly unequal for integers; NaN matches only NaN)."""
    if want.is_floating_point():
        return ~torch.isclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
    return got != want


def _tolerance(op, rtol: float | None, atol: float | None) -> tuple[float, float]:
    """(rtol, atol) for an op, defaulting to two units in the last place of its least precise float dtype.

    Summing in another order can round a low-precision intermediate the other way, which the output shows
    at about that size even when the output itself is fp32 (and Triton's interpreter truncates to bf16)."""
    eps = max((torch.finfo(t.dtype).eps for t in op.tensors.values() if t.is_floating_point()), default=0.0)
    return (max(1e-4, 2 * eps) if rtol is None else rtol), (max(1e-5, 2 * eps) if atol is None else atol)


def _first_mismatch(op, got: dict, want: dict, rtol: float, atol: float) -> Mismatch | None:
    """The first tile (then tensor) whose write box holds an element where ``got`` and ``want`` differ
    (fixed-point outputs, ``TilePlan.fixed_point``, as the numbers they hold)."""
    units = op.plan.fixed_point
    bad = {n: _differs(got[n].double() / units[n], want[n].double() / units[n], rtol, atol) if n in units else
           _differs(got[n], want[n], rtol, atol) for n in want}
    boxes = {n: _tile_boxes(op, n, op.plan.writes[n], want[n]) for n, b in bad.items() if b.any()}
    for tile in range(op.num_tiles):
        for n, (starts, ends) in boxes.items():
            box = tuple(slice(s, e) for s, e in zip(starts[tile].tolist(), ends[tile].tolist()))
            wrong = bad[n][box]
            if wrong.any():
                diff = (got[n][box].double() - want[n][box].double()).abs()
                # NaN in diff: NaN on one side (a mismatch) or on both (equal)
                diff = torch.where(wrong, diff.nan_to_num(nan=math.inf), diff.nan_to_num(nan=0.0))
                return Mismatch(op.name, tile, n, float(diff.max()), box, int(wrong.sum()), wrong.numel())
    return None


@torch.no_grad()
def find_mismatch(graph, rtol: float | None = None, atol: float | None = None) -> Mismatch | None:
    """The first op and tile whose Triton tile function disagrees with its reference, or None.

    Each op runs from one snapshot of the tensors it writes, once as standalone Triton launches
    and once through its reference; the results are compared within each tile's write boxes,
    integer tensors exactly. ``rtol`` / ``atol`` default to two units in the last place of the
    op's least precise float dtype, at least 1e-4 / 1e-5. Later ops go on from the reference's
    results, so a wrong op shows once, at its source; afterwards the buffers hold what
    ``run_reference`` leaves up to there.
    """
    _check_references(graph)
    launches = OpLaunches(graph)
    for op in graph.ops:
        written = {n: op.tensors[n] for n in op.plan.writes}
        before = {n: t.clone() for n, t in written.items()}
        launches.run_op(op.index)
        got = {n: t.clone() for n, t in written.items()}
        for n, t in written.items():
            t.copy_(before[n])
        _run_op(op)
        found = _first_mismatch(op, got, written, *_tolerance(op, rtol, atol))
        if found is not None:
            return found
    return None
