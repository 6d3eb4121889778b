"""megagen: trace tile-wise tasks into a DAG, schedule them on SMs, and run them as one persistent Triton MegaKernel.

Import megagen before decorating your own ``@triton.jit`` tile functions: without
a CUDA GPU megagen switches Triton to its CPU interpreter (TRITON_INTERPRET=1).
"""
from megagen.backend import use_interpreter_without_gpu

use_interpreter_without_gpu()

__version__ = "0.1.0"

from megagen.errors import (DeadlockError, GraphError, MegagenError, TaskDefinitionError,  # noqa: E402
                            UnsupportedModelError)
from megagen.graph import Op, TaskGraph, TileDAG  # noqa: E402
from megagen.runtime import MegaKernel, OpLaunches  # noqa: E402
from megagen.scoreboard.device import take_ticket  # noqa: E402
from megagen.scheduler import (DynamicSchedule, RoundRobin, Scheduler, StaticSchedule, WorkQueue,  # noqa: E402
                               ZigZag, simulate)
from megagen.tasks import ALL, TilePlan, TaskType, cdiv, register_task, registered_tasks, tile_arange  # noqa: E402
from megagen import tasks  # noqa: E402,F401  (registers the built-in tasks)
from megagen.runner import Runner, build  # noqa: E402
from megagen.reference import Mismatch, find_mismatch, run_reference  # noqa: E402
from megagen.world import EmulatedWorld, NvshmemWorld, World  # noqa: E402

__all__ = [
    "ALL", "DeadlockError", "DynamicSchedule", "EmulatedWorld", "GraphError", "MegaKernel", "MegagenError",
    "Mismatch", "NvshmemWorld", "Op", "OpLaunches", "RoundRobin", "Runner", "Scheduler", "StaticSchedule", "TaskDefinitionError", "TaskGraph",
    "TaskType", "TileDAG", "TilePlan", "UnsupportedModelError", "WorkQueue", "ZigZag", "build", "cdiv",
    "find_mismatch", "register_task", "registered_tasks", "run_reference", "simulate", "take_ticket", "tile_arange", "World",
]
