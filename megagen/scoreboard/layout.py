"""Host side of the scoreboard: counters, encoded dependency lists and task records.

Counters: one per task (its tile) and one per op (all its tiles), int64, zero
at creation and only ever incremented. A task that depends on *every* tile of
a producer op waits on that op's counter for ``tiles * epoch`` (one poll instead
of one per tile); other dependencies wait on tile counters for ``epoch``.

Overflow bound: a counter reaches ``count * launches``; the largest count is the
largest op's tile count, so int64 counters are exact for 2**63 / max_tiles
launches (over 10**12 even with a million tiles in one op).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from megagen.graph.dependencies import TileDAG

# Fields of a task record (int64 each).
REC_VARIANT, REC_TILE, REC_ARGS, REC_DEP_BEGIN, REC_DEP_END, REC_OP_COUNTER = range(6)
RECORD_SIZE = 6


@dataclasses.dataclass
class ScoreboardLayout:
    records: np.ndarray  # [tasks, RECORD_SIZE]
    deps: np.ndarray  # [entries, 2]: (counter index, count per epoch)
    num_counters: int
    num_tasks: int

    @property
    def waits_per_task(self) -> float:
        return self.deps.shape[0] / max(self.num_tasks, 1)


def encode_dependencies(dag: TileDAG) -> tuple[np.ndarray, np.ndarray]:
    """Compress each task's producer list: whole producer ops become one op-counter entry.

    Returns (entries [k, 2], ptr [tasks + 1]) with entries grouped by consumer task.
    """
    n, num_ops = dag.num_tasks, dag.num_ops
    tiles = np.diff(dag.op_offsets)
    consumer = np.repeat(np.arange(n), np.diff(dag.dep_ptr))
    producer = dag.dep_idx
    producer_op = dag.task_op[producer]
    key = consumer * num_ops + producer_op
    groups, inverse, counts = np.unique(key, return_inverse=True, return_counts=True)
    whole = counts == tiles[groups % num_ops]
    single = ~whole[inverse]
    cons = np.concatenate([consumer[single], groups[whole] // num_ops])
    counter = np.concatenate([producer[single], n + groups[whole] % num_ops])
    count = np.concatenate([np.ones(int(single.sum()), np.int64), tiles[groups[whole] % num_ops]])
    order = np.lexsort((counter, cons))
    entries = np.stack([counter[order], count[order]], axis=1).astype(np.int64)
    ptr = np.zeros(n + 1, np.int64)
    ptr[1:] = np.cumsum(np.bincount(cons, minlength=n))
    return entries, ptr


def build_layout(dag: TileDAG, op_variant: np.ndarray, op_args: np.ndarray) -> ScoreboardLayout:
    """Task records for every task: dispatch variant, tile, argument-table offset, dependency range, op counter."""
    n = dag.num_tasks
    entries, ptr = encode_dependencies(dag)
    op = dag.task_op
    records = np.empty((n, RECORD_SIZE), np.int64)
    records[:, REC_VARIANT] = op_variant[op]
    records[:, REC_TILE] = dag.task_tile
    records[:, REC_ARGS] = op_args[op]
    records[:, REC_DEP_BEGIN] = ptr[:-1]
    records[:, REC_DEP_END] = ptr[1:]
    records[:, REC_OP_COUNTER] = n + op
    if entries.size == 0:
        entries = np.zeros((1, 2), np.int64)  # keep the device buffer non-empty
    return ScoreboardLayout(records, entries, n + dag.num_ops, n)
