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


class FollowProducers(Scheduler):
    """Round robin, except for the tiles of merging tasks (``register_task(..., merges=True)``: an attention head's
    combine of its splits, the MoE route of the router's tiles): each runs on the CTA of one of its producers,
    right after it.

    A tile waiting on other CTAs' producers wakes a poll's round trip after the last of them ends (Qwen3-0.6B's
    combine waits ended up to 2.2 us after the attention's last split on an H100, BENCHMARKS.md), and a merging
    tile has no weights to stream while it waits. On a producer's CTA it starts as that producer ends, and where
    that producer is the last to finish, its first poll succeeds. Producers are taken from the last (an attention
    head's last split also handles the new token), one CTA for each of the tiles that share a set of producers (a
    head's query heads each merge its splits). A tile whose producers span ops, or whose set of producers more tiles
    share than it has members, is placed as by round robin. Queues stay in task order, so the schedule is as
    deadlock-free as round robin's.
    """

    name = "follow"

    def assign(self, dag: TileDAG, num_ctas: int) -> StaticSchedule:
        cta = np.arange(dag.num_tasks) % num_ctas
        task_op = dag.task_op
        consumers: dict[tuple, list[int]] = {}
        for op in np.flatnonzero(dag.op_merges):
            for t in range(int(dag.op_offsets[op]), int(dag.op_offsets[op + 1])):
                producers = dag.deps(t)
                if producers.size and np.all(task_op[producers] == task_op[producers[0]]):
                    consumers.setdefault(tuple(producers.tolist()), []).append(t)
        for producers, tasks in consumers.items():
            if len(tasks) <= len(producers):
                for j, t in enumerate(tasks):
                    cta[t] = cta[producers[-1 - j]]
        order = np.arange(dag.num_tasks)
        return StaticSchedule([order[cta == c] for c in range(num_ctas)], self.name)
