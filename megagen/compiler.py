"""From a TaskGraph to a loaded MegaKernel module, without touching a device.

``build_kernel`` schedules the tile DAG, checks the schedule in simulation,
encodes the scoreboard and the argument table, renders the source and loads it.
``MegaKernel`` puts the result on a device; ``compile_ptx`` compiles it for a
CUDA target on any machine (Triton ships ptxas), so CI checks the GPU code path.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import triton

from megagen.codegen import Variant, load_module, render_megakernel, variants_of
from megagen.errors import MegagenError
from megagen.graph.dependencies import TileDAG
from megagen.scheduler import SimResult, get_scheduler, simulate, task_costs
from megagen.scoreboard import ScoreboardLayout, build_layout

# Kernel parameters of every generated megakernel, in order (see codegen/templates/megakernel.py.j2);
# a profiling build adds "profile" after them (KernelBuild.pointer_params).
POINTER_PARAMS = ("records", "deps", "args", "counters", "control", "queue", "queue_offsets", "vstate")

# A spin is one poll of a counter (about a microsecond on a GPU under load), so by default a wait gives
# up after seconds, far beyond any real dependency latency. DEP_BLOCK counters are polled per load.
DEFAULT_MAX_SPINS = 1 << 22
DEFAULT_DEP_BLOCK = 16


@dataclasses.dataclass
class KernelBuild:
    """Everything a MegaKernel is made of before it is put on a device."""

    dag: TileDAG
    schedule: object
    simulation: SimResult | None
    variants: list[Variant]
    layout: ScoreboardLayout
    args: np.ndarray  # the argument table, padded by args_width
    args_width: int
    interleaved: bool
    profile: bool  # run_task records each task's timeline (megagen/profiler_device.py)
    source: str
    module: object
    source_path: object

    @property
    def num_ctas(self) -> int:
        return self.schedule.num_ctas

    @property
    def grid(self) -> int:
        return 1 if self.interleaved else self.num_ctas

    @property
    def pointer_params(self) -> tuple[str, ...]:
        """The megakernel's pointer parameters, in order."""
        return POINTER_PARAMS + (("profile",) if self.profile else ())

    def constexprs(self, *, scope: str, dep_block: int, max_spins: int, gpu: bool) -> dict:
        """The megakernel's constexpr arguments; ``gpu`` is False under the interpreter (no inline PTX)."""
        constexprs = dict(GRID=self.num_ctas, SCOPE=scope, DEP_BLOCK=dep_block, MAX_SPINS=max_spins,
                          ARGS_WIDTH=self.args_width, FENCE=gpu)
        if self.profile:
            constexprs["CLOCK"] = "globaltimer" if gpu else "logical"
        return constexprs

    def queue_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """(queue, offsets) as the driver reads them."""
        if self.schedule.dynamic:
            return self.schedule.order, np.zeros(2, np.int64)
        return self.schedule.flat()


def build_kernel(graph, scheduler, *, num_ctas: int, interleaved: bool, validate: bool = True,
                 profile: bool = False) -> KernelBuild:
    dag = graph.dependencies
    sched = get_scheduler(scheduler)
    schedule = sched.assign(dag, num_ctas)
    if schedule.num_ctas != num_ctas:
        raise MegagenError(f"scheduler {sched.name} built a schedule for {schedule.num_ctas} CTAs, "
                           f"asked for {num_ctas}")
    simulation = simulate(schedule, dag, task_costs(graph)) if validate else None

    variants, op_variant = variants_of(graph)
    rows = [variants[op_variant[op.index]].arg_row(op) for op in graph.ops]
    op_args = np.zeros(len(rows), np.int64)
    op_args[1:] = np.cumsum([len(r) for r in rows])[:-1]
    # Drivers read a fixed-width row per task; pad so the last row's read stays inside the table.
    args_width = triton.next_power_of_2(max(len(r) for r in rows))
    args = np.array([x for r in rows for x in r] + [0] * args_width, dtype=np.int64)
    layout = build_layout(dag, op_variant, op_args)

    source = render_megakernel(graph, variants, op_variant, layout, schedule, interleaved=interleaved,
                               profile=profile)
    module, path = load_module(source, variants, "megakernel")
    return KernelBuild(dag, schedule, simulation, variants, layout, args, args_width, interleaved, profile, source,
                       module, path)


def compile_ptx(build: KernelBuild, *, num_warps: int = 4, arch: int = 90, scope: str = "gpu",
                dep_block: int = DEFAULT_DEP_BLOCK, max_spins: int = DEFAULT_MAX_SPINS) -> str:
    """Compile a non-interleaved build for CUDA compute capability ``arch``; returns the PTX.

    Needs Triton's JIT (not the interpreter): run it where TRITON_INTERPRET is unset or 0.
    """
    from triton.backends.compiler import GPUTarget
    if build.interleaved:
        raise MegagenError("compile_ptx checks the GPU drivers; build with interleaved=False")
    constexprs = build.constexprs(scope=scope, dep_block=dep_block, max_spins=max_spins, gpu=True)
    signature = {name: "*i64" for name in build.pointer_params}
    signature["num_tasks"] = "i64"
    signature.update({name: "constexpr" for name in constexprs})
    src = triton.compiler.ASTSource(fn=build.module.megakernel, signature=signature, constexprs=constexprs)
    kernel = triton.compile(src, target=GPUTarget("cuda", arch, 32), options=dict(num_warps=num_warps))
    return kernel.asm["ptx"]
