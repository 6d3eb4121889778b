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
    covers_buffer: bool  # the op's boxes together cover every element of the buffer (never for an accumulation)
    view: tuple  # (shape, stride, offset, dtype) of the tensor the op accessed
    view_starts: np.ndarray  # [tiles, dims] in that view's own coordinates (exact, unlike byte bounds)
    view_ends: np.ndarray
    accumulate: bool = False  # a write whose tiles add atomically (TilePlan.accumulate)


@dataclasses.dataclass
class TileDAG:
    """Tasks are numbered op by op, tile by tile; that numbering is a topological order.

    A task's producers come in two forms. ``dep_idx[dep_ptr[t]:dep_ptr[t+1]]`` are single
    producer tasks (sorted, unique). ``need_idx[need_ptr[t]:need_ptr[t+1]]`` are *producer
    sets* it needs entirely; set ``s`` is ``set_idx[set_ptr[s]:set_ptr[s+1]]`` (tasks of one
    op, sorted). Many consumer tiles often need the same large set - all of an op when a
    fused RMSNorm reads a whole row, one K chunk of it under split-K - and a set is stored
    once instead of once per consumer tile. ``deps(t)`` gives both forms as task ids.
    """

    op_names: list[str]
    op_offsets: np.ndarray  # [ops + 1]
    dep_ptr: np.ndarray
    dep_idx: np.ndarray
    op_graph: nx.DiGraph
    set_ptr: np.ndarray | None = None  # None: no producer sets
    set_idx: np.ndarray | None = None
    need_ptr: np.ndarray | None = None
    need_idx: np.ndarray | None = None

    def __post_init__(self):
        if self.set_ptr is None:
            self.set_ptr = np.zeros(1, np.int64)
            self.set_idx = np.zeros(0, np.int64)
            self.need_ptr = np.zeros(self.num_tasks + 1, np.int64)
            self.need_idx = np.zeros(0, np.int64)

    @property
    def num_tasks(self) -> int:
        return int(self.op_offsets[-1])

    @property
    def num_ops(self) -> int:
        return len(self.op_names)

    @property
    def num_sets(self) -> int:
        return int(self.set_ptr.size - 1)

    @property
    def num_edges(self) -> int:
        """Tile-level dependencies, a set counted once per member for each task that needs it (a producer
        that two sets of one consumer share, which no built-in task produces, counts twice)."""
        return int(self.dep_idx.size + np.diff(self.set_ptr)[self.need_idx].sum())

    @property
    def task_op(self) -> np.ndarray:
        return np.repeat(np.arange(self.num_ops), np.diff(self.op_offsets))

    @property
    def task_tile(self) -> np.ndarray:
        return np.arange(self.num_tasks) - self.op_offsets[self.task_op]

    def set_tasks(self, s: int) -> np.ndarray:
        return self.set_idx[self.set_ptr[s]:self.set_ptr[s + 1]]

    def needs(self, task: int) -> np.ndarray:
        """The producer sets ``task`` needs entirely."""
        return self.need_idx[self.need_ptr[task]:self.need_ptr[task + 1]]

    def deps(self, task: int) -> np.ndarray:
        """Every producer task of ``task``, sorted."""
        sets = [self.set_tasks(s) for s in self.needs(task).tolist()]
        return np.unique(np.concatenate([self.dep_idx[self.dep_ptr[task]:self.dep_ptr[task + 1]], *sets]))

    def describe(self, task: int) -> str:
        op = int(np.searchsorted(self.op_offsets, task, side="right") - 1)
        return f"{self.op_names[op]}[tile {task - int(self.op_offsets[op])}]"

    def tile_graph(self) -> nx.DiGraph:
        """The tile-level DAG as networkx (nodes ``(op_name, tile)``, edge producer -> consumer)."""
        g = nx.DiGraph()
        names = [(self.op_names[o], int(t)) for o, t in zip(self.task_op, self.task_tile)]
        g.add_nodes_from(names)
        g.add_edges_from((names[int(p)], names[c]) for c in range(self.num_tasks) for p in self.deps(c))
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
    raw = []  # (op, name, write, tensor, view, starts, ends)
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
        accumulate = write and name in op.plan.accumulate
        # an accumulation adds to what an earlier op wrote, so it never hides earlier writers from later readers;
        # nor do the overlapping boxes of ticket groups (their volume overstates what they cover)
        covers = write and not accumulate and op.plan.tickets is None and volume >= extent
        per_buffer[key].append(Access(op.index, name, write, s, e, covers_buffer=covers, view=view,
                                      view_starts=view_starts, view_ends=view_ends, accumulate=accumulate))
    return per_buffer


def _check_within_op(graph, accesses: list[Access]):
    """Tiles of one op run concurrently: no tile may touch what another tile of the op writes,
    except that tiles may add to the same elements of an accumulated output (atomics commute), and tiles of one
    ticket group may overlap (``TilePlan.tickets``: the group's last tile alone touches the others' share).

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
                if w.accumulate and other.accumulate and w.tensor == other.tensor:
                    continue
                if other.view == w.view:
                    ci, pi = overlapping_pairs(other.view_starts, other.view_ends, w.view_starts, w.view_ends)
                else:
                    ci, pi = overlapping_pairs(other.starts, other.ends, w.starts, w.ends)
                bad = ci != pi
                tickets = graph.ops[op_index].plan.tickets
                if tickets is not None:
                    bad &= tickets[ci] != tickets[pi]
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
    edge_parts, need_parts = [], []
    set_ids: dict[tuple, int] = {}  # (producer op, member tiles) -> set id
    set_members: list[np.ndarray] = []
    set_ops: list[int] = []  # each set's producer op
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
                    sets, ci, pi = _overlaps(acc, prev)
                    for consumers, producers in sets:
                        key = (prev.op, producers.tobytes())
                        sid = set_ids.setdefault(key, len(set_ids))
                        if sid == len(set_members):
                            set_members.append(offsets[prev.op] + producers)
                            set_ops.append(prev.op)
                        need_parts.append(np.stack([offsets[acc.op] + consumers, np.full_like(consumers, sid)]))
                    if ci.size:
                        edge_parts.append(np.stack([offsets[acc.op] + ci, offsets[prev.op] + pi]))
                    if sets or ci.size:
                        kind = "RAW" if prev.write and not acc.write else ("WAW" if prev.write else "WAR")
                        producer = ops[prev.op].name
                        if op_graph.has_edge(producer, consumer.name):
                            op_graph[producer][consumer.name]["kinds"].add(kind)
                        else:
                            op_graph.add_edge(producer, consumer.name, kinds={kind})
                    if prev.write and prev.covers_buffer:
                        break
                # a ticket group's last tile may read what its group wrote (TilePlan.tickets)
                own = consumer.plan.tickets is not None and any(a.write for a in current)
                if not (acc.write or seen_writer or own or graph.is_input(consumer.tensors[acc.tensor])):
                    later = next((ops[a.op].name for a in accesses[j:] if a.write), None)
                    hint = (f"only the later op '{later}' writes it, and ops run in the order they are added: "
                            "add the producer first (if it also depends on this op, the graph has a cycle)"
                            if later else "no op writes it: declare it with graph.input(tensor) if it holds data "
                            "from outside the graph")
                    raise GraphError(f"op {consumer.name} reads '{acc.tensor}', but {hint}")
            history.extend(current)
            i = j

    n = int(offsets[-1])
    num_sets = max(len(set_members), 1)
    needs = _unique_pairs(need_parts, num_sets)
    set_ptr = np.concatenate([[0], np.cumsum([m.size for m in set_members])]).astype(np.int64)
    set_idx = np.concatenate(set_members) if set_members else np.zeros(0, np.int64)
    singles = _unique_pairs(edge_parts, n)
    if needs.size and singles.size:  # drop single producers that a set of the same consumer already holds
        sets_of_task = np.repeat(np.arange(len(set_members)), np.diff(set_ptr))
        order = np.argsort(set_idx, kind="stable")
        lo, hi = np.searchsorted(set_idx[order], singles[1]), np.searchsorted(set_idx[order], singles[1], "right")
        pair = np.repeat(np.arange(singles.shape[1]), hi - lo)
        member_set = sets_of_task[order][_ranges(lo, hi)]
        held = np.isin(singles[0][pair] * num_sets + member_set, needs[0] * num_sets + needs[1])
        covered = np.zeros(singles.shape[1], bool)
        covered[pair[held]] = True
        singles = singles[:, ~covered]
    needs, singles = _drop_implied(needs, singles, np.array(set_ops, np.int64), set_ptr, set_idx, offsets)
    used = np.unique(needs[1]).astype(np.int64)  # sets no consumer needs any more are dropped, and the rest renumbered
    set_members = [set_members[i] for i in used.tolist()]
    needs = np.stack([needs[0], np.searchsorted(used, needs[1])]) if needs.size else needs
    set_ptr = np.concatenate([[0], np.cumsum([m.size for m in set_members])]).astype(np.int64)
    set_idx = np.concatenate(set_members) if set_members else np.zeros(0, np.int64)
    dep_ptr, dep_idx = _csr(singles, n)
    need_ptr, need_idx = _csr(needs, n)
    return TileDAG([op.name for op in ops], offsets, dep_ptr, dep_idx, op_graph, set_ptr, set_idx.astype(np.int64),
                   need_ptr, need_idx)


def _drop_implied(needs: np.ndarray, singles: np.ndarray, set_op: np.ndarray, set_ptr: np.ndarray,
                  set_idx: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(needs, singles) without the dependencies that waiting for other producers already implies.

    Two relations between ops, built in program order (producers come first):
    - seen[X, Y]: every tile of X has seen all of Y finish: X's tiles need all of Y; or they all wait for
      some tile of an op Z with seen[Z, Y]; or they need all of an op Z with union[Z, Y].
    - union[X, Y]: X's tiles between them have seen all of Y: seen[X, Y]; or Y's tiles are all producers of
      X's tiles (each of some tile); or union[Z, Y] for such an op Z; or seen[Z, Y] for an op Z some tile of X
      waits on.
    A task that waits for a tile of op P has seen[P]; one that needs all of P also union[P]; it needs no
    wait on those ops. So the last op of a decode step, which all of the lm_head precedes, waits for no
    earlier layer. (A tile releases its counters after a fence and waiting acquires them, so what a producer
    saw is visible to its consumers.) Each wait dropped is a counter a task no longer polls."""
    num_ops = offsets.size - 1
    if not (needs.size or singles.size):
        return needs, singles
    n = int(offsets[-1])
    tiles = np.diff(offsets)
    task_op = np.repeat(np.arange(num_ops), tiles)
    need_op = set_op[needs[1]]
    whole = np.diff(set_ptr)[needs[1]] == tiles[need_op]
    whole_keys = needs[0][whole] * num_ops + need_op[whole]
    # a task needs all of op Y through a set of it, or through single producers that are all its tiles
    single_keys, single_count = np.unique(singles[0] * num_ops + task_op[singles[1]], return_counts=True)
    all_of = np.unique(np.concatenate([whole_keys, single_keys[single_count == tiles[single_keys % num_ops]]]))
    needs_all = _every_tile(task_op[all_of // num_ops] * num_ops + all_of % num_ops, tiles)
    task = np.concatenate([needs[0], singles[0]])
    op = np.concatenate([need_op, task_op[singles[1]]])
    waits = np.unique(task * num_ops + op)  # (task, an op it waits for some tile of)
    waits_on = task_op[waits // num_ops] * num_ops + waits % num_ops
    touches = _every_tile(waits_on, tiles)
    some = np.zeros((num_ops, num_ops), bool)
    some[waits_on // num_ops, waits_on % num_ops] = True
    # covered[X, Y]: every tile of Y is a producer of some tile of X
    op_sets = np.unique(task_op[needs[0]] * max(set_ptr.size - 1, 1) + needs[1])
    x_of_set, sets = op_sets // max(set_ptr.size - 1, 1), op_sets % max(set_ptr.size - 1, 1)
    members = set_idx[_ranges(set_ptr[sets], set_ptr[sets + 1])]
    produced = np.unique(np.concatenate([np.repeat(x_of_set, np.diff(set_ptr)[sets]) * n + members,
                                         task_op[singles[0]] * n + singles[1]]))
    pairs, count = np.unique(produced // n * num_ops + task_op[produced % n], return_counts=True)
    full = pairs[count == tiles[pairs % num_ops]]
    covered = np.zeros((num_ops, num_ops), bool)
    covered[full // num_ops, full % num_ops] = True
    seen, union = needs_all.copy(), np.zeros_like(needs_all)
    for x in range(num_ops):
        seen[x] |= seen[touches[x]].any(axis=0) | union[needs_all[x]].any(axis=0)
        union[x] = seen[x] | covered[x] | union[covered[x]].any(axis=0) | seen[some[x]].any(axis=0)
    # per task: the ops its producers imply (as bit rows, to stay small for graphs of many ops)
    implied = np.concatenate([seen, seen | union])  # row P: a tile of op P waited for; row ops + P: all of P
    source = op + num_ops * np.isin(task * num_ops + op, all_of)
    order = np.argsort(task, kind="stable")
    tasks, first = np.unique(task[order], return_index=True)
    by_task = np.bitwise_or.reduceat(np.packbits(implied, axis=1)[source[order]], first, axis=0)
    row = np.searchsorted(tasks, task)  # every task here has a row
    hit = (by_task[row, op >> 3] >> (7 - (op & 7))) & 1 == 1
    drop = hit | (np.isin(task * num_ops + op, whole_keys) & ~np.concatenate(
        [whole, np.zeros(singles.shape[1], bool)]))
    k = needs.shape[1]
    return needs[:, ~drop[:k]], singles[:, ~drop[k:]]


def _every_tile(keys: np.ndarray, tiles: np.ndarray) -> np.ndarray:
    """[ops, ops] bool: [X, Y] where every tile of op X holds a pair of ``keys`` (X * ops + Y, one per tile)."""
    num_ops = tiles.size
    pairs, count = np.unique(keys, return_counts=True)
    full = pairs[count == tiles[pairs // num_ops]]
    every = np.zeros((num_ops, num_ops), bool)
    every[full // num_ops, full % num_ops] = True
    return every


# Consumer tiles whose box overlaps at least this many producer tiles get a producer set (shared when equal).
SET_MIN_TILES = 4


def _overlaps(acc: Access, prev: Access):
    """Dependencies of ``acc``'s tiles on ``prev``'s: (sets, ci, pi).

    ``sets`` lists (consumer tiles, producer tiles) pairs where each consumer needs all those
    producers: consumers whose box contains every producer box, and consumers with one box
    overlapping at least SET_MIN_TILES producers. ``ci, pi`` are the remaining pairs.
    """
    nonempty = np.all(prev.ends > prev.starts, axis=1)
    if np.count_nonzero(nonempty) < SET_MIN_TILES:
        ci, pi = overlapping_pairs(acc.starts, acc.ends, prev.starts, prev.ends)
        return [], ci, pi
    sets = []
    lo, hi = prev.starts[nonempty].min(axis=0), prev.ends[nonempty].max(axis=0)
    covers = np.all(acc.starts <= lo, axis=1) & np.all(acc.ends >= hi, axis=1)
    if covers.any():
        sets.append((np.flatnonzero(covers), np.flatnonzero(nonempty)))
    rest = np.flatnonzero(~covers)
    boxes, box_of = np.unique(np.concatenate([acc.starts[rest], acc.ends[rest]], axis=1), axis=0,
                              return_inverse=True)
    box_of = box_of.ravel()
    dims = acc.starts.shape[1]
    ui, pi = overlapping_pairs(boxes[:, :dims], boxes[:, dims:], prev.starts, prev.ends)
    as_set = np.bincount(ui, minlength=len(boxes)) >= SET_MIN_TILES
    if as_set.any():
        by_box = np.argsort(box_of, kind="stable")
        cons_bounds = np.searchsorted(box_of[by_box], np.arange(len(boxes) + 1))
        pair_order = np.argsort(ui, kind="stable")
        pair_bounds = np.searchsorted(ui[pair_order], np.arange(len(boxes) + 1))
        for u in np.flatnonzero(as_set).tolist():
            sets.append((rest[by_box[cons_bounds[u]:cons_bounds[u + 1]]],
                         np.sort(pi[pair_order[pair_bounds[u]:pair_bounds[u + 1]]])))
    single = rest[~as_set[box_of]]
    ci, pi = overlapping_pairs(acc.starts[single], acc.ends[single], prev.starts, prev.ends)
    return sets, single[ci], pi


def _ranges(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Concatenation of arange(lo[i], hi[i]) for all i."""
    lengths = hi - lo
    starts = np.repeat(lo - np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths)
    return (starts + np.arange(int(lengths.sum()))).astype(np.int64)


def _unique_pairs(parts, base: int) -> np.ndarray:
    """Concatenate [2, k] (consumer, producer) arrays; sort by consumer then producer; drop repeats."""
    if not parts:
        return np.empty((2, 0), np.int64)
    edges = np.concatenate(parts, axis=1)
    keys = np.unique(edges[0] * base + edges[1])
    return np.stack([keys // base, keys % base])


def _csr(edges: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.add.at(ptr, edges[0] + 1, 1)
    return np.cumsum(ptr), edges[1].astype(np.int64)
