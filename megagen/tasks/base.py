"""Task types: a Triton tile function plus the plan that says how an op splits into tiles.

A task type is registered once (``register_task``) and instantiated as ops in a
``TaskGraph``. For each op its *plan* function receives the op's tensors and
parameters and returns a ``TilePlan``: how many tiles, which runtime scalars and
constexprs the tile function gets, and, per tile, the box of every tensor the
tile reads and writes. Boxes are what megagen derives dependencies from, so a
plan must name every element a tile touches (a superset is safe but serialises).

Tile functions bind their arguments by name: each parameter of the ``@triton.jit``
function must be a tensor name (it receives a typed pointer), a scalar or a
constexpr from the plan, ``tile`` (the tile index), ``rank`` and ``WORLD`` (this
rank and the constexpr number of ranks, for tensor parallelism), ``marks`` (profile marks), ``stage`` (the
CTA's staging area in shared memory, for a plan whose constexpr ``STAGE_BYTES``, the bytes a tile takes there, is
not 0: ``megagen.tasks.staging``; None in the interpreter), ``ticket`` (its op's ticket counters, for a plan with
``tickets``: ``megagen.scoreboard.device.take_ticket``) or, for the main function of a task with a ``prefetch``
part, ``prefetched`` (what ``prefetch`` returned).

Communication tasks name *peer inputs*: tensors the tile reads on every rank. All ranks
run the same graph, so every rank holds its own copy of such a tensor (allocated with
``World.symmetric``); the tile function receives, instead of a pointer, a pointer to an
int64 table of the ``WORLD`` copies' addresses (``megagen.tasks.comm.peer_pointer``), and
the tile waits for its dependencies on every rank, not only on its own.

A task may also give a *reference*: a plain PyTorch function performing one tile's writes
in place, with parameters bound by name the same way (tensors arrive as torch tensors, and
``prefetched`` does not exist). ``megagen.reference`` runs graphs with it to localise a
MegaKernel mismatch to one op and tile.
"""
from __future__ import annotations

import dataclasses
import inspect
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import torch

from megagen.errors import TaskDefinitionError

#: A whole dimension, for use in a region instead of ``(start, size)``.
ALL = slice(None)

# Names the generated dispatch code binds itself (run_task's parameters and locals, and the module's
# globals); a tensor or plan value of the same name would shadow them. tests/test_megakernel.py checks
# this set against the generated source.
_RESERVED = {"tile", "prefetched", "task", "rec", "argrow", "variant", "dep0", "dep_begin", "dep_end",
             "op_counter", "group_counter", "args", "records", "deps", "counters", "control", "epoch", "cta",
             "SCOPE", "DEP_BLOCK", "MAX_SPINS", "ARGS_WIDTH", "FENCE", "RECORD_SIZE", "pick", "load_task",
             "load_record", "load_args", "ready",
             "run_task", "wait_deps", "release_tile", "deps_ready", "fetch_task", "launch_epoch", "finish_launch",
             "record_no_progress", "tl", "triton", "REC_VARIANT", "REC_TILE", "REC_ARGS", "REC_DEP0",
             "REC_DEP_BEGIN", "REC_DEP_END", "REC_OP_COUNTER", "REC_GROUP_COUNTER",
             "profile", "CLOCK", "t_start", "t_wait_done", "profile_clock", "profile_task", "rank", "WORLD",
             "counter_table", "wait_peer_deps", "peer_task", "rank_counters", "PEERS", "marks", "PROFILE_FIELDS",
             "PROFILE_HEADER_ROWS", "PROFILE_MARK_SLOT", "stage", "stage_area", "stage_wait", "shared_end",
             "arg_area", "store_args", "task_arg", "ticket"}
# Names a tile function (or reference) may take besides its tensors and plan values, bound by the driver.
DRIVER_VALUES = ("tile", "rank", "WORLD")
# ... and a tile or prefetch function alone: its profile marks (megagen.profiler_device.mark; None unless profiling),
# the CTA's staging area in shared memory (megagen.tasks.staging; None in the interpreter and where no op of the
# build has a plan constexpr STAGE_BYTES above 0), and its op's ticket counters (TilePlan.tickets).
TILE_DRIVER_VALUES = ("marks", "stage", "ticket")

# Dtypes a tile function can receive pointers to, with their Triton names.
TRITON_DTYPES = {
    torch.float32: "tl.float32",
    torch.float16: "tl.float16",
    torch.bfloat16: "tl.bfloat16",
    torch.float64: "tl.float64",
    torch.int64: "tl.int64",
    torch.int32: "tl.int32",
    torch.int16: "tl.int16",
    torch.int8: "tl.int8",
    torch.uint8: "tl.uint8",
    torch.bool: "tl.int1",
}


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


@dataclasses.dataclass
class TilePlan:
    """How one op splits into tiles.

    ``reads`` / ``writes`` map a tensor name to one entry per tensor dimension:
    ``(start, size)`` where each may be an int or an integer array with one value
    per tile, or ``ALL`` for the whole dimension. Boxes are clipped to the
    tensor's shape, so tail tiles may overhang. ``cost`` is an estimate of one
    tile's time in microseconds (scalar or per tile), used only by the
    schedule simulator.

    ``accumulate`` names outputs whose tiles *add* into their write regions with atomics
    (``tl.atomic_add``) instead of storing: such regions may overlap between tiles of the op,
    which then finish in any order (a split-K reduction without a reduction phase). Every
    other op sees them as writes. The tensor must hold the sum's starting value when the op
    runs: zeros or a partial result written by an earlier op of the same launch.

    ``tickets`` gives each tile a ticket group (ints from 0) for a tile function that takes ``ticket``: a tile
    calls ``take_ticket`` on its group's counter once it has written its share, and the group's last tile to do
    so (the only one it returns true in) may then read what the others wrote and write what they read (the
    attention's last split merges the splits' partial results). So, within the op, the boxes of one group's tiles
    may overlap, and the op may read what it writes itself; the tile function keeps such accesses to the group's
    last tile. Other ops see every declared access as usual. A reference runs an op's tiles in order, so its
    group's last tile in that order does what the last to finish does on the device.

    ``fixed_point`` maps integer outputs that hold fixed-point numbers to their units a 1.0:
    ``megagen.find_mismatch`` compares those as numbers, within its float tolerance, not exactly
    (an integer sum of fp32 partial products rounds them the way the tile summed them).
    """

    num_tiles: int
    reads: Mapping[str, Sequence[Any]]
    writes: Mapping[str, Sequence[Any]]
    scalars: Mapping[str, int | float] = dataclasses.field(default_factory=dict)
    constexprs: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    cost: float | np.ndarray | None = None
    accumulate: tuple[str, ...] = ()
    tickets: np.ndarray | None = None
    fixed_point: Mapping[str, float] = dataclasses.field(default_factory=dict)

    @property
    def ticket_groups(self) -> int:
        """How many ticket counters the op takes: its largest ticket group + 1 (none without tickets)."""
        return 0 if self.tickets is None else int(np.max(self.tickets)) + 1


def _arg_names(fn) -> list[str]:
    names = getattr(fn, "arg_names", None)
    if names is None:
        raise TaskDefinitionError(
            f"{fn!r} is not a @triton.jit function; decorate the tile function with @triton.jit")
    return list(names)


def param_names(fn) -> list[str]:
    """Parameter names of a tile function (Triton) or of a reference (plain Python)."""
    return _arg_names(fn) if hasattr(fn, "arg_names") else list(inspect.signature(fn).parameters)


@dataclasses.dataclass(eq=False)
class TaskType:
    """A registered tile kernel. Create with ``register_task``; add to a graph with ``TaskGraph.add``."""

    name: str
    fn: Any
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    plan: Callable[..., TilePlan]
    prefetch: Any = None
    reference: Callable[..., None] | None = None
    peer_inputs: tuple[str, ...] = ()

    def __post_init__(self):
        stray = [n for n in self.peer_inputs if n not in self.inputs]
        if stray:
            raise TaskDefinitionError(f"task '{self.name}': peer_inputs {stray} are not among its inputs "
                                      f"{self.inputs}")
        tensors = set(self.inputs) | set(self.outputs)
        if len(tensors) != len(self.inputs) + len(self.outputs):
            raise TaskDefinitionError(
                f"task '{self.name}': a tensor name appears twice in inputs {self.inputs} / outputs {self.outputs}; "
                "an in-place task lists its tensor once, as an output, and declares the read in its plan")
        if not self.outputs:
            raise TaskDefinitionError(f"task '{self.name}' has no outputs; every task must write something")
        clash = tensors & _RESERVED
        if clash:
            raise TaskDefinitionError(f"task '{self.name}': {sorted(clash)} is reserved; rename the tensor")
        names = _arg_names(self.fn)
        if self.prefetch is not None:
            _arg_names(self.prefetch)
            if "prefetched" not in names:
                raise TaskDefinitionError(
                    f"task '{self.name}' has a prefetch function, so its tile function needs a 'prefetched' "
                    "parameter to receive what prefetch returns")
        elif "prefetched" in names:
            raise TaskDefinitionError(
                f"task '{self.name}': the tile function takes 'prefetched' but no prefetch function was given")
        if self.reference is not None:
            self._check_reference()

    def _check_reference(self):
        ref = self.reference
        if not callable(ref) or hasattr(ref, "arg_names"):
            raise TaskDefinitionError(f"task '{self.name}': reference must be a plain Python function (torch), "
                                      f"not {ref!r}")
        kinds = {p.kind for p in inspect.signature(ref).parameters.values()}
        if kinds & {inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD,
                    inspect.Parameter.POSITIONAL_ONLY}:
            raise TaskDefinitionError(f"task '{self.name}': reference {ref.__name__} receives its arguments by "
                                      "name; give it named parameters only (no *args, **kwargs or /)")
        if "prefetched" in param_names(ref):
            raise TaskDefinitionError(f"task '{self.name}': reference {ref.__name__} takes 'prefetched'; a "
                                      "reference loads what it needs from the tensors itself")

    def _check_tickets(self, plan: TilePlan) -> None:
        takes = "ticket" in param_names(self.fn)
        if plan.tickets is None:
            if takes:
                raise TaskDefinitionError(f"task '{self.name}': its tile function takes 'ticket' but its plan gives "
                                          "no tickets (a ticket group per tile)")
            return
        if not takes:
            raise TaskDefinitionError(f"task '{self.name}': its plan gives tickets but its tile function takes no "
                                      "'ticket' to take them with")
        groups = np.asarray(plan.tickets)
        if (groups.shape != (int(plan.num_tiles),) or groups.dtype.kind not in "iu"
                or (groups.size and groups.min() < 0)):
            raise TaskDefinitionError(f"task '{self.name}': tickets must hold one ticket group (an int >= 0) per "
                                      f"tile, {int(plan.num_tiles)} in all; got {groups.dtype} of shape {groups.shape}")
        plan.tickets = groups.astype(np.int64)

    @property
    def tensor_names(self) -> tuple[str, ...]:
        return self.inputs + self.outputs

    def make_plan(self, tensors: Mapping[str, torch.Tensor], params: Mapping[str, Any]) -> TilePlan:
        """Run the plan function and check the result against the tile function's signature."""
        missing = [n for n in self.tensor_names if n not in tensors]
        if missing:
            raise TaskDefinitionError(f"task '{self.name}' needs tensors {missing}")
        for n, t in tensors.items():
            if not isinstance(t, torch.Tensor):
                raise TaskDefinitionError(f"task '{self.name}': '{n}' must be a torch.Tensor, got {type(t).__name__}")
            if t.dtype not in TRITON_DTYPES:
                raise TaskDefinitionError(f"task '{self.name}': tensor '{n}' has unsupported dtype {t.dtype}")
        try:
            plan = self.plan(**tensors, **params)
        except TypeError as e:
            raise TaskDefinitionError(f"task '{self.name}': its plan rejected the arguments: {e}") from e
        if not isinstance(plan, TilePlan):
            raise TaskDefinitionError(f"task '{self.name}': plan must return a TilePlan, got {type(plan).__name__}")
        if int(plan.num_tiles) < 1:
            raise TaskDefinitionError(f"task '{self.name}': plan gave {plan.num_tiles} tiles; need at least one")
        for kind, regions in (("reads", plan.reads), ("writes", plan.writes)):
            for n, dims in regions.items():
                if n not in tensors:
                    raise TaskDefinitionError(f"task '{self.name}': plan {kind} unknown tensor '{n}'")
                if len(dims) != tensors[n].dim():
                    raise TaskDefinitionError(
                        f"task '{self.name}': plan {kind} region of '{n}' has {len(dims)} dims, "
                        f"tensor has {tensors[n].dim()}")
        for n in self.inputs:
            if n not in plan.reads:
                raise TaskDefinitionError(f"task '{self.name}': plan gives no read region for input '{n}'")
        for n in self.outputs:
            if n not in plan.writes:
                raise TaskDefinitionError(f"task '{self.name}': plan gives no write region for output '{n}'")
        for what, names in (("accumulates into", plan.accumulate), ("gives fixed-point units for", plan.fixed_point)):
            stray = [n for n in names if n not in self.outputs]
            if stray:
                raise TaskDefinitionError(f"task '{self.name}': plan {what} {stray}, which are not among its outputs "
                                          f"{self.outputs}")
        self._check_tickets(plan)
        clash = (set(plan.scalars) | set(plan.constexprs)) & _RESERVED
        if clash:
            raise TaskDefinitionError(f"task '{self.name}': plan value names {sorted(clash)} are reserved; rename them")
        known = set(self.tensor_names) | set(plan.scalars) | set(plan.constexprs) | set(DRIVER_VALUES)
        for fn in (self.fn, self.prefetch, self.reference):
            if fn is None:
                continue
            device = fn is not self.reference  # a reference gets no 'prefetched' and no 'marks'
            extra = {"prefetched", *TILE_DRIVER_VALUES} if device else set()
            unknown = [a for a in param_names(fn) if a not in known and a not in extra]
            if unknown:
                allowed = ("plan constexprs, 'tile', 'rank', 'WORLD', 'marks', 'stage', 'ticket' nor 'prefetched'"
                           if device else "plan constexprs, 'tile', 'rank' nor 'WORLD'")
                raise TaskDefinitionError(
                    f"task '{self.name}': {fn.__name__} takes {unknown}, which are neither tensors, plan scalars, "
                    f"{allowed}")
        for n, v in plan.scalars.items():
            if not isinstance(v, (int, float, np.integer, np.floating)) or isinstance(v, (bool, np.bool_)):
                raise TaskDefinitionError(f"task '{self.name}': scalar '{n}' must be int or float, got {v!r}")
        # numpy scalars become Python ones, so int/float decides the dispatch variant everywhere
        plan.scalars = {n: float(v) if isinstance(v, (float, np.floating)) else int(v) for n, v in plan.scalars.items()}
        return plan


_REGISTRY: dict[str, TaskType] = {}


def register_task(name: str, fn, *, inputs: Sequence[str], outputs: Sequence[str],
                  plan: Callable[..., TilePlan], prefetch=None, reference=None,
                  peer_inputs: Sequence[str] = ()) -> TaskType:
    """Turn a ``@triton.jit`` tile function into a task type.

    ``plan(**tensors, **params) -> TilePlan`` describes one op of this type.
    ``prefetch``, if given, is a ``@triton.jit`` function run *before* the tile
    waits on its dependencies; it may only load data no other task writes
    (weights), and its return value reaches the tile function as ``prefetched``.
    ``reference``, if given, is a plain PyTorch function doing one tile's writes in
    place (arguments bound by name like the tile function's), for ``megagen.reference``;
    it receives a peer input as the list of every rank's copy.
    ``peer_inputs``: inputs the tile reads on every rank (communication tasks, see above).
    """
    if not name or not name.isidentifier():
        raise TaskDefinitionError(f"task name {name!r} must be a Python identifier")
    task = TaskType(name, fn, tuple(inputs), tuple(outputs), plan, prefetch, reference, tuple(peer_inputs))
    old = _REGISTRY.get(name)
    if old is not None and (old.fn.fn is not fn.fn or old.plan is not plan or old.reference is not reference
                            or old.peer_inputs != task.peer_inputs):
        raise TaskDefinitionError(f"a different task named '{name}' is already registered; choose another name")
    _REGISTRY[name] = task
    return task


def registered_tasks() -> dict[str, TaskType]:
    return dict(_REGISTRY)


def tile_arange(num_tiles: int) -> np.ndarray:
    """Tile indices as an int64 array, for writing vectorised plans."""
    return np.arange(num_tiles, dtype=np.int64)
