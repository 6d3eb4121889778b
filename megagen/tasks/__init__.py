"""Task types: the public registration mechanism (``base``) and the built-in tasks, registered through it."""
from megagen.tasks.base import ALL, TaskType, TilePlan, cdiv, register_task, registered_tasks, tile_arange
from megagen.tasks.elementwise import add, mul, scale
from megagen.tasks.gemv import gemv

__all__ = ["ALL", "TaskType", "TilePlan", "add", "cdiv", "gemv", "mul", "register_task", "registered_tasks",
           "scale", "tile_arange"]
