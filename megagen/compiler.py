"""From a TaskGraph to a loaded MegaKernel module, without touching a device.

``build_kernel`` schedules the tile DAG, checks the schedule in simulation,
encodes the scoreboard and the argument table, renders the source and loads it.
``MegaKernel`` puts the result on a device; ``compile_ptx`` compiles it for a
CUDA target on any machine (Triton ships ptxas), so CI checks the GPU code path;
``compile_op_ptx`` does the same for one op's own kernel (the op-by-op baseline's),
``ptxas_usage`` reads registers and spills from PTX with Triton's ptxas, and ``sass`` the machine code.
"""
from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import tempfile

import numpy as np
import torch
import triton

from megagen.codegen import Variant, load_module, render_megakernel, render_standalone, stage_bytes, variants_of
from megagen.errors import MegagenError
from megagen.graph import TaskGraph
from megagen.graph.dependencies import TileDAG
from megagen.scheduler import SimResult, get_scheduler, simulate, task_costs
from megagen.scoreboard import ScoreboardLayout, build_layout, ticket_bases

# Kernel parameters of every generated megakernel, in order (see codegen/templates/megakernel.py.j2);
# a profiling build adds "profile" after them (KernelBuild.pointer_params).
POINTER_PARAMS = ("records", "deps", "args", "counter_table", "control", "queue", "queue_offsets", "vstate")
# Its scalar parameters after them: tasks per rank, the first rank of the launch, argument-table stride per rank.
SCALAR_PARAMS = ("num_tasks", "rank0", "args_stride")

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
    args: np.ndarray  # [ranks, entries]: each rank's argument table, padded by args_width
    args_width: int
    world_size: int
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
    def ranks(self) -> int:
        """Ranks one launch runs: all of an emulated world, one under torchrun."""
        return self.args.shape[0]

    @property
    def staging(self) -> int:
        """The bytes of each CTA's staging area in shared memory (megagen.tasks.staging; 0: none): the launch needs
        that much more."""
        return stage_bytes(self.variants, self.interleaved)

    @property
    def pointer_params(self) -> tuple[str, ...]:
        """The megakernel's pointer parameters, in order."""
        return POINTER_PARAMS + (("profile",) if self.profile else ())

    def constexprs(self, *, scope: str, dep_block: int, max_spins: int, gpu: bool) -> dict:
        """The megakernel's constexpr arguments; ``gpu`` is False under the interpreter (no inline PTX)."""
        constexprs = dict(GRID=self.num_ctas, RANKS=self.ranks, WORLD=self.world_size,
                          PEERS=max(2, triton.next_power_of_2(self.world_size)), SCOPE=scope,
                          DEP_BLOCK=dep_block, MAX_SPINS=max_spins, ARGS_WIDTH=self.args_width, FENCE=gpu)
        if self.profile:
            constexprs["CLOCK"] = "globaltimer" if gpu else "logical"
        return constexprs

    def queue_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """(queue, offsets) as the driver reads them."""
        if self.schedule.dynamic:
            return self.schedule.order, np.zeros(2, np.int64)
        return self.schedule.flat()


def _no_peer_table(rank: int, tensor) -> int:
    """Peer tables of a build that is only compiled, never launched (compile_ptx)."""
    return 0


def build_kernel(graphs, scheduler, *, num_ctas: int, interleaved: bool, validate: bool = True,
                 profile: bool = False, world_size: int = 1, peer_table=_no_peer_table) -> KernelBuild:
    """Build the MegaKernel of ``graphs``: one TaskGraph, or one per rank the launch runs (all alike).

    ``peer_table(i, tensor)`` gives the device address of the table of every rank's copy of a peer
    input of ``graphs[i]``; ``world_size`` is the number of ranks in the world.
    """
    graphs = [graphs] if isinstance(graphs, TaskGraph) else list(graphs)
    graph = graphs[0]
    signature = graph.signature() if len(graphs) > 1 else None
    for i, other in enumerate(graphs[1:], 1):
        if other.signature() != signature:
            raise MegagenError(f"rank graph {i} ({other.name}) differs from rank graph 0 ({graph.name}) in its ops, "
                               "shapes or regions; every rank must run the same graph on its own tensors")
    dag = graph.dependencies
    sched = get_scheduler(scheduler)
    schedule = sched.assign(dag, num_ctas)
    if schedule.num_ctas != num_ctas:
        raise MegagenError(f"scheduler {sched.name} built a schedule for {schedule.num_ctas} CTAs, "
                           f"asked for {num_ctas}")
    simulation = simulate(schedule, dag, task_costs(graph)) if validate else None

    variants, op_variant = variants_of(graph, world_size)
    op_tickets = [op.plan.ticket_groups for op in graph.ops]
    tickets = ticket_bases(dag, op_tickets)
    tables = []
    for i, g in enumerate(graphs):
        g_variants, g_op_variant = variants_of(g, world_size) if i else (variants, op_variant)
        if [v.key for v in g_variants] != [v.key for v in variants] or not np.array_equal(g_op_variant, op_variant):
            raise MegagenError(f"rank graph {i}'s tensors differ from rank graph 0's in dtype or 16-byte alignment; "
                               "allocate every rank's buffers alike")
        rows = [variants[op_variant[op.index]].arg_row(op, lambda t, i=i: peer_table(i, t), tickets[op.index])
                for op in g.ops]
        tables.append([x for r in rows for x in r])
    op_args = np.zeros(len(rows), np.int64)
    op_args[1:] = np.cumsum([len(r) for r in rows])[:-1]
    # Drivers read a fixed-width row per task; pad so the last row's read stays inside the table.
    args_width = max(2, triton.next_power_of_2(max(len(r) for r in rows)))  # a row of 16-byte multiples
    args = np.array([t + [0] * args_width for t in tables], dtype=np.int64)
    layout = build_layout(dag, op_variant, op_args, op_tickets)

    source = render_megakernel(graph, variants, op_variant, layout, schedule, interleaved=interleaved,
                               profile=profile)
    module, path = load_module(source, variants, "megakernel")
    return KernelBuild(dag, schedule, simulation, variants, layout, args, args_width, world_size, interleaved,
                       profile, source, module, path)


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
    signature.update({name: "i64" for name in SCALAR_PARAMS})
    signature.update({name: "constexpr" for name in constexprs})
    src = triton.compiler.ASTSource(fn=build.module.megakernel, signature=signature, constexprs=constexprs)
    kernel = triton.compile(src, target=GPUTarget("cuda", arch, 32), options=dict(num_warps=num_warps))
    return kernel.asm["ptx"]


def compile_op_ptx(variant: Variant, *, num_warps: int = 4, arch: int = 90, pdl: bool = True) -> str:
    """Compile one variant's standalone kernel (one tile a program, as ``runtime.OpLaunches`` launches an op) for
    CUDA compute capability ``arch``, with programmatic dependent launch; returns the PTX. Needs Triton's JIT.

    Pointers the variant was built with 16-byte aligned (and peer tables, torch tensors) are marked so, as Triton
    specialises them when it launches the kernel: without that its loads would be compiled element by element."""
    from triton.backends.compiler import GPUTarget
    module, _ = load_module(render_standalone(variant), [variant], f"standalone_{variant.task.name}")
    pointer = {torch.bfloat16: "*bf16", torch.float16: "*fp16", torch.float32: "*fp32", torch.int64: "*i64",
               torch.int32: "*i32"}
    signature = {n: "*i64" if n in variant.peers else pointer[d] for n, d in variant.tensor_dtypes.items()}
    aligned = {(i,): [["tt.divisibility", 16]] for i, n in enumerate(signature)
               if n in variant.peers or variant.aligned[n]}
    signature.update({n: "fp32" if is_float else "i32" for n, is_float in variant.scalars})
    if variant.takes_ticket:
        signature["ticket"] = "*i64"
    signature["PDL"] = "constexpr"
    src = triton.compiler.ASTSource(fn=module.standalone, signature=signature, constexprs={"PDL": pdl}, attrs=aligned)
    return triton.compile(src, target=GPUTarget("cuda", arch, 32), options=dict(num_warps=num_warps)).asm["ptx"]


def _nvidia_tool(name: str) -> str:
    """A CUDA binary utility Triton ships (ptxas, nvdisasm)."""
    return os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", name)


def _ptxas(ptx: str, gpu: str, out: str, tmp: str) -> subprocess.CompletedProcess:
    path = os.path.join(tmp, "kernel.ptx")
    with open(path, "w") as f:
        f.write(ptx)
    r = subprocess.run([_nvidia_tool("ptxas"), "-v", "--gpu-name", gpu, path, "-o", out], capture_output=True,
                       text=True)
    if r.returncode != 0:
        raise MegagenError(f"ptxas failed on the kernel's PTX:\n{r.stderr[-2000:]}")
    return r


def cubin(ptx: str, gpu: str = "sm_90a") -> bytes:
    """The PTX's kernel assembled by Triton's bundled ptxas (line information kept, as Triton keeps it)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "kernel.cubin")
        _ptxas(ptx, gpu, path, tmp)
        with open(path, "rb") as f:
            return f.read()


def sass(ptx: str, gpu: str = "sm_90a") -> str:
    """The machine code ptxas makes of the PTX's kernel, as ``nvdisasm`` prints it: where to read what a loop
    step costs (its loads, barriers, shared-memory round trips). Each instruction ends with its scoreboards
    (``_scoreboards``): which a load sets, which an instruction waits for."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "kernel.cubin")
        with open(path, "wb") as f:
            f.write(cubin(ptx, gpu))
        code = subprocess.run([_nvidia_tool("nvdisasm"), "-hex", "-c", path], capture_output=True, text=True,
                              check=True).stdout
    return _scoreboards(code)


_ENCODING = re.compile(r"\s*/\* (0x[0-9a-f]{16}) \*/\s*$")


def _scoreboards(code: str) -> str:
    """nvdisasm ``-hex`` output with each instruction's control bits in words: ``sets sbN`` (the scoreboard a
    variable-latency instruction, e.g. a global load, releases when its result is ready), ``waits sbN,..``.

    a warp has six scoreboards, and a wait is for everything on a scoreboard: a load that shares one
    with a slower load (an L2 hit with an HBM block) is ready only when both are (BENCHMARKS.md, 2026-11-26,
    ninth session). Hopper keeps the control bits in bits 105-127 of each 128-bit instruction: stall (4 bits),
    yield (1), write scoreboard (3; 7 none), read scoreboard (3), wait mask (6), reuse (4); nvdisasm prints the
    low and then the high 64 bits, the high on the next line."""
    lines = code.splitlines()
    out = []
    for i, line in enumerate(lines):
        low = _ENCODING.search(line)
        high = _ENCODING.fullmatch(lines[i + 1]) if low and i + 1 < len(lines) else None
        if not high:
            if not _ENCODING.fullmatch(line):
                out.append(line)
            continue
        control = int(high.group(1), 16) >> 41
        write, wait = (control >> 5) & 7, (control >> 11) & 0x3F
        words = ([f"sets sb{write}"] if write != 7 else []) + (
            ["waits sb" + ",".join(str(b) for b in range(6) if wait >> b & 1)] if wait else [])
        out.append(line[:low.start()].rstrip() + (f"  // {' '.join(words)}" if words else ""))
    return "\n".join(out) + "\n"


def ptxas_usage(ptx: str, gpu: str = "sm_90a") -> dict:
    """Registers a thread, and bytes of spill stores and loads a thread, that Triton's bundled ptxas reports for
    the PTX's kernel. Every task of a MegaKernel shares its registers: 255 a thread leave room for two CTAs of
    four warps an SM, and a task that needs more makes the whole kernel spill."""
    with tempfile.TemporaryDirectory() as tmp:
        r = _ptxas(ptx, gpu, os.devnull, tmp)
    regs = re.search(r"Used ([0-9]+) registers", r.stderr)
    spills = re.search(r"([0-9]+) bytes spill stores, ([0-9]+) bytes spill loads", r.stderr)
    return {"registers": int(regs.group(1)), "spill_stores": int(spills.group(1)), "spill_loads": int(spills.group(2))}
