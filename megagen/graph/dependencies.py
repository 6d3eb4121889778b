"""Vectorised tile-level dependency derivation from read/write boxes.

Every (op, tensor) access becomes an array of per-tile boxes in a per-buffer
coordinate space: the view's own n-d coordinates when every access to that
buffer goes through one view (exact), otherwise a byte interval of the
storage bounding the box (conservative: may add dependencies, never drops one).

Overlap between a consumer's and a producer's boxes is found with a sweep on the
most discriminating dimension (sort producer starts, binary-search each
consumer's window) followed by an exact box test on the candidates, so the work
usually grows with the number of overlapping pairs rather than with all tile pairs
(one long producer box widens the window of every consumer after it).
"""
from __future__ import annotations

import dataclasses
from collections import defaultdict

import networkx as nx
import numpy as np
import torch

from megagen.errors import GraphError, TaskDefinitionError


@dataclasses.dataclass
class Access:
    op: int
    tensor: str
    write: bool
    starts: np.ndarray  # [tiles, dims] in the buffer's coordinate space
    ends: np.ndarray
    covers_buffer: bool  # the op's boxes together cover every element of the buffer
    view: tuple  # (shape, stride, offset, dtype) of the tensor the op accessed
    view_starts: np.ndarray  # [tiles, dims] in that view's own coordinates (exact, unlike byte bounds)
    view_ends: np.ndarray


@dataclasses.dataclass
class TileDAG:
    """Tasks are numbered op by op, tile by tile; that numbering is a topological order.

    ``dep_ptr``/``dep_idx`` are CSR: the producers of task ``t`` are
    ``dep_idx[dep_ptr[t]:dep_ptr[t+1]]`` (sorted, unique).
    """

    op_names: list[str]
    op_offsets: np.ndarray  # [ops + 1]
    dep_ptr: np.ndarray
    dep_idx: np.ndarray
    op_graph: nx.DiGraph

    @property
    def num_tasks(self) -> int:
        return int(self.op_offsets[-1])

    @property
    def num_ops(self) -> int:
        return len(self.op_names)

    @property
    def num_edges(self) -> int:
        return int(self.dep_idx.size)

    @property
    def task_op(self) -> np.ndarray:
        return np.repeat(np.arange(self.num_ops), np.diff(self.op_offsets))

    @property
    def task_tile(self) -> np.ndarray:
        return np.arange(self.num_tasks) - self.op_offsets[self.task_op]

    def deps(self, task: int) -> np.ndarray:
        return self.dep_idx[self.dep_ptr[task]:self.dep_ptr[task + 1]]

    def describe(self, task: int) -> str:
        op = int(np.searchsorted(self.op_offsets, task, side="right") - 1)
        return f"{self.op_names[op]}[tile {task - int(self.op_offsets[op])}]"

    def tile_graph(self) -> nx.DiGraph:
        """The tile-level DAG as networkx (nodes ``(op_name, tile)``, edge producer -> consumer)."""
        g = nx.DiGraph()
        names = [(self.op_names[o], int(t)) for o, t in zip(self.task_op, self.task_tile)]
        g.add_nodes_from(names)
        consumers = np.repeat(np.arange(self.num_tasks), np.diff(self.dep_ptr))
        g.add_edges_from((names[p], names[c]) for p, c in zip(self.dep_idx.tolist(), consumers.tolist()))
        return g


def _tile_boxes(op, name: str, dims, tensor: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """Per-tile [start, end) in the tensor's own coordinates, clipped to its shape."""
    n = op.num_tiles
    starts = np.empty((n, tensor.dim()), dtype=np.int64)
    ends = np.empty_like(starts)
    for d, entry in enumerate(dims):
        size_d = tensor.shape[d]
        if isinstance(entry, slice):
            if entry != slice(None):
                raise TaskDefinitionError(f"op {op.name}: region of '{name}' dim {d}: only ALL (slice(None)) "
                                          "is accepted as a slice; give (start, size) otherwise")
            s, e = np.zeros(n, np.int64), np.full(n, size_d, np.int64)
        else:
            try:
                start, size = entry
                s = np.broadcast_to(np.asarray(start, dtype=np.int64), (n,))
                e = s + np.broadcast_to(np.asarray(size, dtype=np.int64), (n,))
            except (TypeError, ValueError) as exc:
                raise TaskDefinitionError(
                    f"op {op.name}: region of '{name}' dim {d} must be (start, size) with ints or arrays of "
                    f"{n} values (one per tile), or ALL; got {entry!r}") from exc
        starts[:, d] = np.clip(s, 0, size_d)
        ends[:, d] = np.clip(e, 0, size_d)
    return starts, ends


def _to_bytes(tensor: torch.Tensor, starts: np.ndarray, ends: np.ndarray):
    """Bounding byte interval of each box within the tensor's storage."""
    stride = np.asarray(tensor.stride(), dtype=np.int64)
    item = tensor.element_size()
    off = tensor.storage_offset()
    lo = (off + starts @ stride) * item
    hi = (off + (ends - 1) @ stride + 1) * item
    return lo[:, None], hi[:, None]


def overlapping_pairs(cs, ce, ps, pe):
    """All (consumer, producer) index pairs whose boxes intersect (empty boxes intersect nothing).

    Boxes are [n, dims] arrays of starts and ends.
    """
    nc, npr = cs.shape[0], ps.shape[0]
    if nc == 0 or npr == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    # Sweep on the dimension where producers are most spread out.
    spread = [np.unique(ps[:, d]).size for d in range(ps.shape[1])]
    d = int(np.argmax(spread)) if spread else 0
    order = np.argsort(ps[:, d], kind="stable")
    p_start = ps[order, d]
    p_end_max = np.maximum.accumulate(pe[order, d])
    hi = np.searchsorted(p_start, ce[:, d], side="left")  # producers starting before consumer end
    lo = np.searchsorted(p_end_max, cs[:, d], side="right")  # producers that may end after consumer start
    counts = np.maximum(hi - lo, 0)
    total = int(counts.sum())
    if total == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    ci = np.repeat(np.arange(nc), counts)
    first = np.repeat(lo - np.cumsum(counts) + counts, counts)
    pi = order[first + np.arange(total)]
    hit = np.all((cs[ci] < pe[pi]) & (ps[pi] < ce[ci]) & (cs[ci] < ce[ci]) & (ps[pi] < pe[pi]), axis=1)
    return ci[hit], pi[hit]


def _accesses(graph):
    """Every access of every op, in the coordinate space of its buffer."""
    from megagen.graph.taskgraph import buffer_key
    raw = []  # (op, name, write, tensor, starts, ends)
    views = defaultdict(set)
    for op in graph.ops:
        for write, regions in ((False, op.plan.reads), (True, op.plan.writes)):
            for name, dims in regions.items():
                t = op.tensors[name]
                s, e = _tile_boxes(op, name, dims, t)
                view = (tuple(t.shape), t.stride(), t.storage_offset(), t.dtype)
                raw.append((op, name, write, t, view, s, e))
                views[buffer_key(t)].add(view)
    per_buffer = defaultdict(list)
    for op, name, write, t, view, s, e in raw:
        key = buffer_key(t)
        view_starts, view_ends = s, e
        nonempty = np.all(e > s, axis=1)
        vol = np.prod(e - s, axis=1)[nonempty]
        if len(views[key]) == 1:
            extent = t.numel()
            volume = int(vol.sum())
        else:
            s, e = _to_bytes(t, s, e)
            extent = t.untyped_storage().nbytes()
            volume = int(vol.sum()) * t.element_size()
        s, e = s.copy(), e.copy()
        s[~nonempty], e[~nonempty] = 0, 0  # empty boxes never overlap
        per_buffer[key].append(Access(op.index, name, write, s, e, covers_buffer=write and volume >= extent,
                                      view=view, view_starts=view_starts, view_ends=view_ends))
    return per_buffer


def _check_within_op(graph, accesses: list[Access]):
    """Tiles of one op run concurrently: no tile may touch what another tile of the op writes.

    Accesses through the same view compare exactly in view coordinates (byte bounds of
    column tiles overlap even where the tiles do not).
    """
    by_op = defaultdict(list)
    for a in accesses:
        by_op[a.op].append(a)
    for op_index, accs in by_op.items():
        writes = [a for a in accs if a.write]
        for w in writes:
            for other in accs:
                if other.view == w.view:
                    ci, pi = overlapping_pairs(other.view_starts, other.view_ends, w.view_starts, w.view_ends)
                else:
                    ci, pi = overlapping_pairs(other.starts, other.ends, w.starts, w.ends)
                bad = ci != pi
                if np.any(bad):
                    k = int(np.argmax(bad))
                    op = graph.ops[op_index]
                    verb = "writes" if other.write else "reads"
                    raise GraphError(
                        f"op {op.name}: tile {int(ci[k])} {verb} '{other.tensor}' where tile {int(pi[k])} writes "
                        f"'{w.tensor}' (same buffer); tiles of one op run concurrently, so their plan must keep "
                        "each tile's writes apart from every other tile's reads and writes")


def _check_prefetch_reads(graph):
    """A prefetch runs before its tile waits, so it may read only what no earlier op writes."""
    from megagen.graph.taskgraph import buffer_key
    first_writer = {}
    for op in graph.ops:
        if op.task.prefetch is not None:
            for name in op.task.prefetch.arg_names:
                writer = first_writer.get(buffer_key(op.tensors[name])) if name in op.tensors else None
                if writer is not None:
                    raise GraphError(
                        f"op {op.name}: its prefetch reads '{name}' before waiting for dependencies, but the "
                        f"earlier op {writer} writes that buffer, so the prefetch could read stale data. A prefetch "
                        "may only read data no earlier op writes (weights): give this op a tensor nothing writes")
        for name in op.plan.writes:
            first_writer.setdefault(buffer_key(op.tensors[name]), op.name)


def derive_dependencies(graph) -> TileDAG:
    _check_prefetch_reads(graph)
    ops = graph.ops
    offsets = np.zeros(len(ops) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([op.num_tiles for op in ops])
    edge_parts = []
    op_graph = nx.DiGraph()
    for op in ops:
        op_graph.add_node(op.name, task=op.task.name, tiles=op.num_tiles, index=op.index)

    for key, accesses in _accesses(graph).items():
        _check_within_op(graph, accesses)
        history: list[Access] = []  # accesses of earlier ops, program order
        i = 0
        while i < len(accesses):
            # all accesses of one op are processed against the history before being added to it
            j = i
            while j < len(accesses) and accesses[j].op == accesses[i].op:
                j += 1
            current = accesses[i:j]
            consumer = ops[accesses[i].op]
            for acc in current:
                seen_writer = False
                for prev in reversed(history):
                    if not (prev.write or acc.write):
                        continue
                    seen_writer |= prev.write
                    ci, pi = overlapping_pairs(acc.starts, acc.ends, prev.starts, prev.ends)
                    if ci.size:
                        edge_parts.append(np.stack([offsets[acc.op] + ci, offsets[prev.op] + pi]))
                        kind = "RAW" if prev.write and not acc.write else ("WAW" if prev.write else "WAR")
                        producer = ops[prev.op].name
                        if op_graph.has_edge(producer, consumer.name):
                            op_graph[producer][consumer.name]["kinds"].add(kind)
                        else:
                            op_graph.add_edge(producer, consumer.name, kinds={kind})
                    if prev.write and prev.covers_buffer:
                        break
                if not acc.write and not seen_writer and not graph.is_input(consumer.tensors[acc.tensor]):
                    later = next((ops[a.op].name for a in accesses[j:] if a.write), None)
                    hint = (f"only the later op '{later}' writes it, and ops run in the order they are added: "
                            "add the producer first (if it also depends on this op, the graph has a cycle)"
                            if later else "no op writes it: declare it with graph.input(tensor) if it holds data "
                            "from outside the graph")
                    raise GraphError(f"op {consumer.name} reads '{acc.tensor}', but {hint}")
            history.extend(current)
            i = j

    n = int(offsets[-1])
    if edge_parts:
        edges = np.concatenate(edge_parts, axis=1)
        keys = np.unique(edges[0] * n + edges[1])
        dst, src = keys // n, keys % n
    else:
        dst = src = np.empty(0, np.int64)
    dep_ptr = np.zeros(n + 1, dtype=np.int64)
    np.add.at(dep_ptr, dst + 1, 1)
    dep_ptr = np.cumsum(dep_ptr)
    return TileDAG([op.name for op in ops], offsets, dep_ptr, src.astype(np.int64), op_graph)
