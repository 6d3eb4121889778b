"""The runtime work queue: CTAs fetch tasks from one global topological order."""
from __future__ import annotations

import numpy as np

from megagen.graph.dependencies import TileDAG
from megagen.scheduler.base import DynamicSchedule, Scheduler


class WorkQueue(Scheduler):
    """Each CTA takes the next task with an atomic counter (``fetch_task``); no static placement."""

    name = "work_queue"

    def assign(self, dag: TileDAG, num_ctas: int) -> DynamicSchedule:
        return DynamicSchedule(np.arange(dag.num_tasks, dtype=np.int64), num_ctas, self.name)
