"""Render the MegaKernel module from Jinja templates, cache it by content hash, and load it.

The generated source is plain Python a person can read: a header listing ops
and dispatch variants, ``run_task`` with one branch per variant, and the
driver loop for the chosen schedule kind. User tile functions are not copied
into it; they are bound into the loaded module's namespace by name.
"""
from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import os
import sys
from pathlib import Path

import jinja2
import numpy as np

from megagen.scoreboard import layout as L
from megagen.tasks.base import TRITON_DTYPES

_ENV = jinja2.Environment(loader=jinja2.PackageLoader("megagen.codegen", "templates"),
                          trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
                          undefined=jinja2.StrictUndefined)


def _origin(fn) -> str:
    f = fn.fn
    return f"{f.__module__}.{f.__qualname__}"


@dataclasses.dataclass
class Variant:
    """One dispatch branch: a task type with fixed tensor dtypes, scalar kinds and constexprs."""

    id: int
    task: object
    tensor_dtypes: dict  # name -> torch dtype
    scalars: list  # [(name, is_float)]
    constexprs: dict
    aligned: dict  # name -> bool (16-byte aligned data pointer)
    publishes: bool = False  # other ranks read what its tiles write: release at system scope
    across_ranks: bool = False  # peer inputs in a world of several ranks: wait on every rank, at system scope

    @property
    def key(self) -> tuple:
        """What makes two variants one dispatch branch."""
        return (self.task.name, tuple(self.tensor_dtypes.items()), tuple(self.scalars),
                tuple(self.constexprs.items()), tuple(self.aligned.items()), self.publishes, self.across_ranks)

    @property
    def stage_bytes(self) -> int:
        """The CTA's staging area its tiles take to stage their weights (the plan constexpr STAGE_BYTES; 0: none)."""
        return int(self.constexprs.get("STAGE_BYTES", 0))

    @property
    def staged(self) -> bool:
        """Its tiles stage their weights."""
        return self.stage_bytes > 0

    @property
    def peers(self) -> tuple[str, ...]:
        """Peer inputs: the tile gets a table of every rank's address and waits on every rank."""
        return self.task.peer_inputs

    @property
    def release_scope(self) -> str:
        """The scope argument of this variant's release_tile call, as source."""
        return '"sys"' if self.publishes else "SCOPE"

    @property
    def fn_symbol(self) -> str:
        return f"{self.task.name}__{self.task.fn.fn.__name__}"

    @property
    def prefetch_symbol(self) -> str | None:
        p = self.task.prefetch
        return None if p is None else f"{self.task.name}__{p.fn.__name__}"

    @property
    def fn_origin(self) -> str:
        return _origin(self.task.fn)

    @property
    def prefetch_origin(self) -> str:
        return _origin(self.task.prefetch)

    @property
    def takes_ticket(self) -> bool:
        """Its tile function takes ``ticket``: the op's ticket counters (TilePlan.tickets)."""
        return "ticket" in self.task.fn.arg_names

    @property
    def slots(self) -> list[str]:
        """Argument-table layout of one op of this variant: tensor pointers, scalars, then, for a task that takes
        tickets, the index of the op's first ticket counter."""
        return list(self.tensor_dtypes) + [n for n, _ in self.scalars] + (["ticket"] if self.takes_ticket else [])

    @property
    def summary(self) -> str:
        dts = ", ".join(f"{n}: {str(d).replace('torch.', '')}" for n, d in self.tensor_dtypes.items())
        cx = ", ".join(f"{k}={v!r}" for k, v in self.constexprs.items())
        notes = "".join(f"; {n} on every rank" for n in self.peers if self.across_ranks)
        notes += "; read by other ranks" if self.publishes else ""
        notes += "; staged" if self.staged else ""
        return f"{self.task.name}({dts}{'; ' + cx if cx else ''}{notes})"

    def loads(self, shared: bool) -> list[str]:
        """Source lines that unpack this op's pointers and scalars from its argument-table row: ``shared``, one
        shared-memory load each from the row ``store_args`` put there (the GPU drivers); else taken out of
        ``argrow`` in registers (the interpreter's drivers)."""
        def slot(i):
            return f"task_arg(arg_area, {i})" if shared else f"pick(argrow, {i}, ARGS_WIDTH)"
        lines = []
        for i, name in enumerate(self.tensor_dtypes):
            if name in self.peers:  # a table of WORLD addresses, one per rank
                lines.append(f"{name} = {slot(i)}.to(tl.pointer_type(tl.int64))")
                continue
            ptr = f"{slot(i)}.to(tl.pointer_type({TRITON_DTYPES[self.tensor_dtypes[name]]}))"
            lines.append(f"{name} = " + (f"tl.multiple_of({ptr}, 16)" if self.aligned[name] else ptr))
        for k, (name, is_float) in enumerate(self.scalars):
            value = slot(len(self.tensor_dtypes) + k)
            lines.append(f"{name} = {value}" + (".to(tl.float64, bitcast=True).to(tl.float32)" if is_float else ""))
        if self.takes_ticket:
            lines.append(f"ticket = counters + {slot(len(self.slots) - 1)}  # the op's ticket counters")
        return lines

    def _call(self, fn) -> str:
        args = []
        for name in fn.arg_names:
            if name in self.constexprs:
                args.append(f"{name}={self.constexprs[name]!r}")
            else:
                args.append(f"{name}={name}")
        symbol = self.fn_symbol if fn is self.task.fn else self.prefetch_symbol
        return f"{symbol}({', '.join(args)})"

    @property
    def fn_call(self) -> str:
        return self._call(self.task.fn)

    @property
    def prefetch_call(self) -> str:
        return self._call(self.task.prefetch)

    @property
    def kernel_params(self) -> str:
        """Parameters of the standalone kernel: tensors, scalars (and ticket counters) as ordinary kernel arguments."""
        return ", ".join(self.slots)

    def arg_row(self, op, peer_table, ticket_base: int) -> list[int]:
        """The op's argument-table row: data pointers (``peer_table(tensor)``, the address of a table of every
        rank's address, for peer inputs), ints, floats as float64 bit patterns, and where it takes tickets, its
        first ticket counter ``ticket_base``."""
        row = [peer_table(op.tensors[n]) if n in self.peers else op.tensors[n].data_ptr() for n in self.tensor_dtypes]
        for name, is_float in self.scalars:
            v = op.plan.scalars[name]
            row.append(int(np.array(float(v), np.float64).view(np.int64)) if is_float else int(v))
        return row + ([int(ticket_base)] if self.takes_ticket else [])


def variants_of(graph, world_size: int | None = None) -> tuple[list[Variant], np.ndarray]:
    """Group ops into dispatch variants; returns the variants and each op's variant id. In a world of one rank
    (``world_size``, by default the graph's) peer inputs are read from that rank alone: their tasks wait on its
    counters and their producers release at the kernel's scope, as every other task does (system scope is for
    other GPUs, and slower: BENCHMARKS.md, 2026-11-26, thirteenth session)."""
    from megagen.graph.taskgraph import buffer_key
    several = (graph.world_size if world_size is None else world_size) > 1
    peer_read = {buffer_key(op.tensors[n]) for op in graph.ops for n in op.task.peer_inputs} if several else set()
    variants: dict[tuple, Variant] = {}
    op_variant = np.empty(len(graph.ops), np.int64)
    for op in graph.ops:
        aligned = {n: op.tensors[n].data_ptr() % 16 == 0 for n in op.task.tensor_names}
        publishes = any(buffer_key(op.tensors[n]) in peer_read for n in op.task.outputs)
        key = op.variant_key + (tuple(aligned.values()), publishes)
        if key not in variants:
            _, _, scalar_kinds, constexprs = op.variant_key
            variants[key] = Variant(len(variants), op.task,
                                    {n: op.tensors[n].dtype for n in op.task.tensor_names},
                                    list(scalar_kinds), dict(constexprs), aligned, publishes,
                                    several and bool(op.task.peer_inputs))
        op_variant[op.index] = variants[key].id
    return list(variants.values()), op_variant


def stage_bytes(variants, interleaved: bool) -> int:
    """The staging area the MegaKernel gives each CTA: the largest its variants take, under a GPU driver (0: none)."""
    return 0 if interleaved else max((v.stage_bytes for v in variants), default=0)


def render_megakernel(graph, variants, op_variant, layout, schedule, *, interleaved: bool,
                      profile: bool = False) -> str:
    from megagen import __version__
    record = dict(size=L.RECORD_SIZE, variant=L.REC_VARIANT, tile=L.REC_TILE, args=L.REC_ARGS, dep0=L.REC_DEP0,
                  dep_begin=L.REC_DEP_BEGIN, dep_end=L.REC_DEP_END, op_counter=L.REC_OP_COUNTER,
                  group_counter=L.REC_GROUP_COUNTER)
    ops = [dict(name=op.name, variant=int(op_variant[op.index]), tiles=op.num_tiles) for op in graph.ops]
    peer_ids = [v.id for v in variants if v.across_ranks]
    peer_test = " | ".join(f"(variant == {i})" for i in peer_ids) if peer_ids else "0"
    staging = stage_bytes(variants, interleaved)
    return _ENV.get_template("megakernel.py.j2").render(
        version=__version__, graph_name=graph.name, num_ops=len(graph.ops), num_tasks=layout.num_tasks,
        num_deps=int(layout.deps.shape[0]), waits_per_task=layout.waits_per_task, scheduler=schedule.scheduler,
        dynamic=schedule.dynamic, interleaved=interleaved, num_ctas=schedule.num_ctas,
        variants=variants, ops=ops, record=record, profile=profile, peer_test=peer_test, staging=staging)


def render_standalone(variant: Variant) -> str:
    from megagen import __version__
    return _ENV.get_template("standalone.py.j2").render(version=__version__, v=variant)


def cache_dir() -> Path:
    d = Path(os.environ.get("MEGAGEN_CACHE_DIR", Path.home() / ".cache" / "megagen"))
    d.mkdir(parents=True, exist_ok=True)
    return d


def load_module(source: str, variants: list[Variant], prefix: str):
    """Write ``source`` to the cache (by content hash), import it, and bind the tile functions into it."""
    digest = hashlib.sha256(source.encode()).hexdigest()[:20]
    path = cache_dir() / f"{prefix}_{digest}.py"
    if not path.exists() or path.read_text() != source:
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(source)
        tmp.replace(path)
    name = f"megagen_generated.{prefix}_{digest}"
    module = sys.modules.get(name)
    if module is None:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules[name] = module
    for v in variants:
        setattr(module, v.fn_symbol, _for_backend(v.task.fn))
        if v.prefetch_symbol:
            setattr(module, v.prefetch_symbol, _for_backend(v.task.prefetch))
    return module, path


def _for_backend(fn):
    """Under the interpreter every device function must be an InterpretedFunction, whenever it was decorated."""
    from megagen.backend import interpreting
    if interpreting():
        from triton.runtime.interpreter import InterpretedFunction
        if not isinstance(fn, InterpretedFunction):
            return InterpretedFunction(fn.fn)
    return fn


__all__ = ["Variant", "variants_of", "stage_bytes", "render_megakernel", "render_standalone", "load_module"]
