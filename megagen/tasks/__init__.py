"""Task types: the public registration mechanism (``base``) and the built-in tasks, registered through it."""
from megagen.tasks.base import ALL, TaskType, TilePlan, cdiv, register_task, registered_tasks, tile_arange
from megagen.tasks.elementwise import add, mul, scale
from megagen.tasks import attention, comm, moe, norm, sampling  # noqa: F401  (registers the decode tasks)
from megagen.tasks.linear import gemv, gemv_residual, rmsnorm_gemv, rmsnorm_gemv_bias, silu_mul_gemv_residual

__all__ = ["ALL", "TaskType", "TilePlan", "add", "cdiv", "gemv", "gemv_residual", "mul", "register_task", "registered_tasks",
           "rmsnorm_gemv", "rmsnorm_gemv_bias", "scale", "silu_mul_gemv_residual", "tile_arange"]
