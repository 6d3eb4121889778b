"""Schedulers: place tasks on CTAs (static queues) or order them for a runtime work queue."""
from megagen.errors import MegagenError
from megagen.scheduler.base import DynamicSchedule, Scheduler, StaticSchedule
from megagen.scheduler.simulate import SimResult, simulate, task_costs
from megagen.scheduler.static import RoundRobin, ZigZag
from megagen.scheduler.work_queue import WorkQueue

SCHEDULERS = {s.name: s for s in (RoundRobin, ZigZag, WorkQueue)}


def get_scheduler(scheduler) -> Scheduler:
    """A Scheduler from a name ("round_robin", "zigzag", "work_queue") or an instance."""
    if isinstance(scheduler, Scheduler):
        return scheduler
    if isinstance(scheduler, type) and issubclass(scheduler, Scheduler):
        return scheduler()
    if scheduler in SCHEDULERS:
        return SCHEDULERS[scheduler]()
    raise MegagenError(f"unknown scheduler {scheduler!r}; use one of {sorted(SCHEDULERS)} or a Scheduler instance")


__all__ = ["DynamicSchedule", "RoundRobin", "SCHEDULERS", "Scheduler", "SimResult", "StaticSchedule",
           "WorkQueue", "ZigZag", "get_scheduler", "simulate", "task_costs"]
