"""TaskGraph: ops (task instances on tensors) in program order, and the graphs derived from them.

Ops behave as if they ran one after another in the order they were added, like
eager PyTorch. From that order and each tile's read/write boxes megagen derives
tile-level dependencies (read-after-write, write-after-read, write-after-write);
the MegaKernel then runs tiles as soon as those dependencies allow.
"""
from __future__ import annotations

import dataclasses
import hashlib
from functools import cached_property
from typing import Any

import networkx as nx
import numpy as np
import torch

from megagen.errors import GraphError, TaskDefinitionError, check_options
from megagen.tasks.base import TaskType, TilePlan


@dataclasses.dataclass(eq=False)
class Op:
    """One task instance: a task type applied to tensors, split into ``plan.num_tiles`` tiles."""

    index: int
    name: str
    task: TaskType
    tensors: dict[str, torch.Tensor]
    params: dict[str, Any]
    plan: TilePlan

    @property
    def num_tiles(self) -> int:
        return int(self.plan.num_tiles)

    @property
    def variant_key(self) -> tuple:
        """Ops with the same key share one dispatch branch in the MegaKernel."""
        dtypes = tuple(str(self.tensors[n].dtype) for n in self.task.tensor_names)
        scalar_kinds = tuple((n, isinstance(v, float)) for n, v in sorted(self.plan.scalars.items()))
        return (self.task.name, dtypes, scalar_kinds, tuple(sorted(self.plan.constexprs.items())))

    def __repr__(self):
        return f"Op({self.name}, {self.num_tiles} tiles)"


class TaskGraph:
    """A program of ops over tensors; ``compile()`` turns it into one persistent MegaKernel.

    Under tensor parallelism every rank builds the same graph on its own tensors: ``world``
    (a ``megagen.world.World``) and ``rank`` say whose graph this is.
    """

    def __init__(self, name: str = "graph", inputs=(), world=None, rank: int = 0):
        self.name = name
        self.world = world
        self.rank = rank
        self.ops: list[Op] = []
        self._inputs: dict[tuple, torch.Tensor] = {}
        self._names: set[str] = set()
        self.input(*inputs)

    # -- building ---------------------------------------------------------------------------
    def input(self, *tensors: torch.Tensor) -> "TaskGraph":
        """Declare tensors whose contents come from outside the graph (activations in, weights)."""
        for t in tensors:
            if not isinstance(t, torch.Tensor):
                raise GraphError(f"graph inputs must be tensors, got {type(t).__name__}")
            self._inputs[buffer_key(t)] = t
        self._invalidate()
        return self

    def add(self, task: TaskType, *, name: str | None = None, **kwargs) -> Op:
        """Append an op of ``task``; tensors and parameters are passed by name."""
        if not isinstance(task, TaskType):
            raise TaskDefinitionError(f"add() needs a registered TaskType, got {type(task).__name__}")
        tensors = {k: v for k, v in kwargs.items() if k in task.tensor_names}
        params = {k: v for k, v in kwargs.items() if k not in task.tensor_names}
        plan = task.make_plan(tensors, params)
        devices = {t.device for t in tensors.values()}
        if self.ops:
            devices.add(next(iter(self.ops[0].tensors.values())).device)
        if len(devices) > 1:
            raise GraphError(f"op {task.name}: tensors on several devices {sorted(map(str, devices))}; "
                             "put every tensor of a graph on one device")
        name = name or f"{task.name}_{len(self.ops)}"
        if name in self._names:
            raise GraphError(f"an op named '{name}' already exists; op names must be unique")
        self._names.add(name)
        op = Op(len(self.ops), name, task, tensors, params, plan)
        self.ops.append(op)
        self._invalidate()
        return op

    def _invalidate(self):
        self.__dict__.pop("dependencies", None)

    # -- derived views ----------------------------------------------------------------------
    @property
    def inputs(self) -> list[torch.Tensor]:
        return list(self._inputs.values())

    def is_input(self, t: torch.Tensor) -> bool:
        return buffer_key(t) in self._inputs

    @property
    def device(self) -> torch.device:
        if not self.ops:
            raise GraphError("the graph has no ops")
        return next(iter(self.ops[0].tensors.values())).device

    @cached_property
    def dependencies(self):
        """Tile-level dependencies (a ``TileDAG``), derived once and cached until the graph changes."""
        from megagen.graph.dependencies import derive_dependencies
        if not self.ops:
            raise GraphError("the graph has no ops; add() some before compiling")
        return derive_dependencies(self)

    @property
    def op_graph(self) -> nx.DiGraph:
        """Op-level networkx DiGraph; edge attribute ``kinds`` holds the hazards (RAW/WAR/WAW) behind it."""
        return self.dependencies.op_graph

    @property
    def world_size(self) -> int:
        return 1 if self.world is None else self.world.size

    def signature(self) -> str:
        """A digest of the program without its data: ops, tile counts, variants, shapes, regions and which
        tensors share a buffer. Ranks of one tensor-parallel program have equal signatures."""
        h = hashlib.sha256()
        buffers: dict[tuple, int] = {}
        for op in self.ops:
            h.update(repr((op.name, op.num_tiles, op.variant_key)).encode())
            for n, t in op.tensors.items():
                index = buffers.setdefault(buffer_key(t), len(buffers))
                h.update(repr((n, tuple(t.shape), t.stride(), index, self.is_input(t))).encode())
            for regions in (op.plan.reads, op.plan.writes):
                for n, dims in sorted(regions.items()):
                    h.update(n.encode())
                    for d in dims:
                        for part in ((d.start, d.stop) if isinstance(d, slice) else d):
                            h.update(np.asarray(part, dtype=np.int64).tobytes() if part is not None else b"-")
        return h.hexdigest()

    def compile(self, scheduler="round_robin", **options):
        """Schedule, generate and load the MegaKernel; see ``megagen.runtime.MegaKernel`` for options."""
        from megagen.runtime import MegaKernel, kernel_option_names
        check_options("graph.compile", options, kernel_option_names())
        return MegaKernel(self, scheduler=scheduler, **options)

    def __repr__(self):
        return f"TaskGraph({self.name!r}, {len(self.ops)} ops)"


def buffer_key(t: torch.Tensor) -> tuple:
    """Views and slices of one storage are one buffer."""
    return (str(t.device), t.untyped_storage().data_ptr())
