"""The Scheduler interface and the two kinds of schedule a MegaKernel can run.

A static schedule fixes, before launch, the ordered queue of tasks each CTA runs.
A dynamic schedule fixes one global order; at run time each CTA fetches the next
task from it with an atomic counter. Either is checked for deadlock before launch
(``megagen.scheduler.simulate``).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from megagen.graph.dependencies import TileDAG


@dataclasses.dataclass
class StaticSchedule:
    """``queues[sm]`` is the ordered array of task ids CTA ``sm`` runs."""

    queues: list[np.ndarray]
    scheduler: str = "static"
    dynamic = False

    @property
    def num_ctas(self) -> int:
        return len(self.queues)

    def flat(self) -> tuple[np.ndarray, np.ndarray]:
        """(concatenated queues, offsets[num_ctas + 1]) as stored on the device."""
        offsets = np.zeros(self.num_ctas + 1, dtype=np.int64)
        offsets[1:] = np.cumsum([q.size for q in self.queues])
        flat = np.concatenate(self.queues) if self.queues else np.empty(0, np.int64)
        return flat.astype(np.int64), offsets


@dataclasses.dataclass
class DynamicSchedule:
    """``order`` is the global queue CTAs fetch from; it must be a topological order."""

    order: np.ndarray
    num_ctas: int
    scheduler: str = "dynamic"
    dynamic = True


class Scheduler:
    """Subclass and implement ``assign`` to place tasks on CTAs your own way."""

    name = "custom"

    def assign(self, dag: TileDAG, num_ctas: int) -> StaticSchedule | DynamicSchedule:
        raise NotImplementedError
