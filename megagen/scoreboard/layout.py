"""Host side of the scoreboard: counters, encoded dependency lists and task records.

Counters: one per task (its tile), one per op (all its tiles), the ops' ticket counters
(``TilePlan.tickets``: one per ticket group, taken by ``take_ticket``) and one per *group*,
int64, zero at creation and only ever incremented. A task that depends on every
tile of a producer op waits on that op's counter for ``tiles * epoch`` (one poll
instead of one per tile). When consumers depend on sets of a producer's tiles that
are disjoint from each other (e.g. split-K chunks), each set becomes a group whose
tiles also release the group counter, and a consumer waits on it for
``len(set) * epoch``. Other dependencies wait on tile counters for ``epoch``.

Overflow bound: a counter reaches ``count * launches``; the largest count is the
largest op's tile count, so int64 counters are exact for 2**63 / max_tiles
launches (over 10**12 even with a million tiles in one op).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from megagen.errors import MegagenError
from megagen.graph.dependencies import TileDAG

# Fields of a task record (int64 each). A task's first dependency entry is inlined in the record
# (REC_DEP0 = count << 32 | counter, or -1), so most waits need no load of the dependency list;
# the list range [REC_DEP_BEGIN, REC_DEP_END) holds the rest.
REC_VARIANT, REC_TILE, REC_ARGS, REC_DEP0, REC_DEP_BEGIN, REC_DEP_END, REC_OP_COUNTER, REC_GROUP_COUNTER = range(8)
RECORD_SIZE = 8


@dataclasses.dataclass
class ScoreboardLayout:
    records: np.ndarray  # [tasks, RECORD_SIZE]
    deps: np.ndarray  # [entries, 2]: (counter index, count per epoch), every entry but each task's first
    num_counters: int
    num_tasks: int
    groups: list  # tuples of task ids, one per group counter
    waits: int  # dependency entries in all (inlined ones included)
    ticket_bases: np.ndarray  # [ops + 1]: op k's ticket counters are ticket_bases[k]:ticket_bases[k + 1]

    def describe_counter(self, dag: TileDAG, counter: int) -> str:
        """What a counter counts, for error messages."""
        if counter < self.num_tasks:
            return dag.describe(counter)
        if counter < self.num_tasks + dag.num_ops:
            return f"all tiles of op {dag.op_names[counter - self.num_tasks]}"
        if counter < self.ticket_bases[-1]:
            op = int(np.searchsorted(self.ticket_bases, counter, side="right") - 1)
            return f"ticket group {counter - int(self.ticket_bases[op])} of op {dag.op_names[op]}"
        tasks = self.groups[counter - int(self.ticket_bases[-1])]
        return f"a group of {len(tasks)} tiles from {dag.describe(tasks[0])} to {dag.describe(tasks[-1])}"

    @property
    def waits_per_task(self) -> float:
        return self.waits / max(self.num_tasks, 1)


def encode_dependencies(dag: TileDAG, first_group: int | None = None):
    """Compress each task's producers into counter waits.

    Every producer set a task needs - a set of the DAG, or two or more single producers of one op -
    becomes one wait: on the op counter when it is the whole op, on a group counter when the set
    is disjoint from every other such set (each task can release one group), and otherwise on
    each member's tile counter. Returns (entries [k, 2] of (counter, count per epoch) grouped by
    consumer, ptr [tasks + 1], group_of_task [tasks] (group index or -1), the groups' task tuples).
    Counter indices: tasks first, then ops, then (from ``first_group``, by default right after the ops) groups.
    """
    n, num_ops = dag.num_tasks, dag.num_ops
    first_group = n + num_ops if first_group is None else first_group
    tiles = np.diff(dag.op_offsets)
    task_op = dag.task_op
    consumer = np.repeat(np.arange(n), np.diff(dag.dep_ptr))
    producer = dag.dep_idx
    key = consumer * num_ops + task_op[producer]
    _, inverse, counts = np.unique(key, return_inverse=True, return_counts=True)
    in_set = counts[inverse] > 1
    parts = [(consumer[~in_set], producer[~in_set], np.ones(int((~in_set).sum()), np.int64))]

    # distinct member tuples -> the consumers that need them
    needers: dict[tuple, list] = {}
    need_order = np.argsort(dag.need_idx, kind="stable")
    need_consumer = np.repeat(np.arange(n), np.diff(dag.need_ptr))[need_order]
    need_bounds = np.searchsorted(dag.need_idx[need_order], np.arange(dag.num_sets + 1))
    for s_ in range(dag.num_sets):
        needers.setdefault(tuple(dag.set_tasks(s_).tolist()), []).extend(
            need_consumer[need_bounds[s_]:need_bounds[s_ + 1]].tolist())
    order = np.argsort(key[in_set], kind="stable")
    cons_sorted, prod_sorted = consumer[in_set][order], producer[in_set][order]
    bounds = np.flatnonzero(np.diff(key[in_set][order])) + 1
    for c_, members in zip(np.split(cons_sorted, bounds), np.split(prod_sorted, bounds)):
        if c_.size:
            needers.setdefault(tuple(members.tolist()), []).append(int(c_[0]))

    def whole_op(members):
        op = task_op[members[0]]
        return op if len(members) == tiles[op] else -1
    partial = [m for m in needers if whole_op(m) < 0]
    membership = np.zeros(n, np.int64)
    for m in partial:
        membership[list(m)] += 1
    groups, group_of_task = [], np.full(n, -1, np.int64)
    for members, cons in needers.items():
        cons = np.asarray(cons, np.int64)
        op = whole_op(members)
        if op >= 0:
            parts.append((cons, np.full(cons.size, n + op), np.full(cons.size, tiles[op])))
        elif np.all(membership[list(members)] == 1):
            group_of_task[list(members)] = len(groups)
            parts.append((cons, np.full(cons.size, first_group + len(groups)), np.full(cons.size, len(members))))
            groups.append(members)
        else:
            parts.append((np.repeat(cons, len(members)), np.tile(np.asarray(members, np.int64), cons.size),
                          np.ones(cons.size * len(members), np.int64)))
    cons = np.concatenate([p[0] for p in parts]).astype(np.int64)
    counter = np.concatenate([p[1] for p in parts]).astype(np.int64)
    count = np.concatenate([p[2] for p in parts]).astype(np.int64)
    keys = np.unique(np.stack([cons, counter, count], axis=1), axis=0)  # sorted by consumer, then counter
    entries = keys[:, 1:]
    ptr = np.zeros(n + 1, np.int64)
    ptr[1:] = np.cumsum(np.bincount(keys[:, 0], minlength=n))
    return entries, ptr, group_of_task, groups


def ticket_bases(dag: TileDAG, op_tickets) -> np.ndarray:
    """[ops + 1]: where each op's ticket counters begin (``op_tickets[k]``: op k's ticket groups), after the task
    and op counters; the last entry is where the group counters begin."""
    return dag.num_tasks + dag.num_ops + np.concatenate([[0], np.cumsum(op_tickets)]).astype(np.int64)


def build_layout(dag: TileDAG, op_variant: np.ndarray, op_args: np.ndarray, op_tickets=None) -> ScoreboardLayout:
    """Task records (dispatch variant, tile, argument-table offset, first dependency inlined, range of the
    other dependencies, op and group counters) and the list of the dependencies not inlined. ``op_tickets``: each
    op's ticket groups (none if not given)."""
    n = dag.num_tasks
    bases = ticket_bases(dag, np.zeros(dag.num_ops, np.int64) if op_tickets is None else op_tickets)
    entries, ptr, group_of_task, groups = encode_dependencies(dag, int(bases[-1]))
    if len(entries) and (entries[:, 0].max() >= 2 ** 31 or entries[:, 1].max() >= 2 ** 31):
        raise MegagenError("a counter index or dependency count does not fit in 31 bits; split the graph")
    op = dag.task_op
    has_deps = ptr[1:] > ptr[:-1]
    first = entries[ptr[:-1][has_deps]]
    rest = np.ones(len(entries), bool)
    rest[ptr[:-1][has_deps]] = False
    rest_ptr = ptr - np.concatenate([[0], np.cumsum(has_deps)])
    records = np.empty((n, RECORD_SIZE), np.int64)
    records[:, REC_VARIANT] = op_variant[op]
    records[:, REC_TILE] = dag.task_tile
    records[:, REC_ARGS] = op_args[op]
    records[:, REC_DEP0] = -1
    records[has_deps, REC_DEP0] = (first[:, 1] << 32) | first[:, 0]
    records[:, REC_DEP_BEGIN] = rest_ptr[:-1]
    records[:, REC_DEP_END] = rest_ptr[1:]
    records[:, REC_OP_COUNTER] = n + op
    records[:, REC_GROUP_COUNTER] = np.where(group_of_task >= 0, bases[-1] + group_of_task, -1)
    listed = entries[rest] if rest.any() else np.zeros((1, 2), np.int64)  # keep the device buffer non-empty
    return ScoreboardLayout(records, listed, int(bases[-1]) + len(groups), n, groups, waits=len(entries),
                            ticket_bases=bases)
