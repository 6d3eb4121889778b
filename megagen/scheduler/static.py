"""Static schedulers: a topological order of tasks dealt to CTAs before launch."""
from __future__ import annotations

import numpy as np

from megagen.graph.dependencies import TileDAG
from megagen.scheduler.base import Scheduler, StaticSchedule


class RoundRobin(Scheduler):
    """Task i of the topological order goes to CTA i mod num_ctas."""

    name = "round_robin"

    def assign(self, dag: TileDAG, num_ctas: int) -> StaticSchedule:
        order = np.arange(dag.num_tasks)
        return StaticSchedule([order[c::num_ctas] for c in range(num_ctas)], self.name)


class ZigZag(Scheduler):
    """Snake order: waves of num_ctas tasks, dealt left to right, then right to left.

    A CTA that got the last task of one wave gets the first of the next, which
    evens out the load when tile costs grow or shrink along the order.
    """

    name = "zigzag"

    def assign(self, dag: TileDAG, num_ctas: int) -> StaticSchedule:
        i = np.arange(dag.num_tasks)
        wave, pos = i // num_ctas, i % num_ctas
        cta = np.where(wave % 2 == 0, pos, num_ctas - 1 - pos)
        return StaticSchedule([i[cta == c] for c in range(num_ctas)], self.name)
