"""Runtime: build, launch and check a MegaKernel; and the op-by-op launcher it is compared against."""
from __future__ import annotations

import inspect

import numpy as np
import torch
from triton.compiler.compiler import make_backend

from megagen.backend import interpreting, num_sms
from megagen.codegen import load_module, render_standalone, variants_of
from megagen.compiler import DEFAULT_DEP_BLOCK, DEFAULT_MAX_SPINS, build_kernel
from megagen.errors import DeadlockError, MegagenError
from megagen.profiler import Profile
from megagen.profiler_device import PROFILE_FIELDS, PROFILE_HEADER_ROWS
from megagen.scoreboard import device as sb
from megagen.tasks.staging import LINE
from megagen.world import EmulatedWorld

INTERPRETER_VIRTUAL_CTAS = 4


def _device_tensor(a: np.ndarray, device) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(a, dtype=np.int64)).to(device)


class MegaKernel:
    """One persistent kernel running every tile of a TaskGraph; ``run()`` re-launches it without rebuilding.

    ``graph``: a TaskGraph, or under tensor parallelism one per rank of ``world`` this process runs
    (every rank of an emulated world: one launch then runs all their tasks).
    Options: ``num_ctas`` (default: one per SM; 4 virtual CTAs in the interpreter),
    ``num_warps`` (4), ``interleaved`` (one program stepping virtual CTAs; forced
    in the interpreter, available on a GPU for debugging), ``scope`` ("gpu" or
    "sys"), ``max_spins`` (polls before a wait gives up), ``dep_block`` (counters
    polled per load), ``validate`` (simulate the schedule before building: on), ``profile`` (record every
    task's timeline on each launch; ``profile()`` returns the latest launch's; off: the kernel has no such code).
    """

    def __init__(self, graph, scheduler="round_robin", *, world=None, num_ctas: int | None = None,
                 num_warps: int = 4, interleaved: bool | None = None, scope: str = "gpu",
                 max_spins: int = DEFAULT_MAX_SPINS, dep_block: int = DEFAULT_DEP_BLOCK, validate: bool = True,
                 profile: bool = False):
        graphs = list(graph) if isinstance(graph, (list, tuple)) else [graph]
        device = graphs[0].device
        world = world or graphs[0].world or EmulatedWorld(1, device)
        if len(graphs) != len(world.ranks):
            raise MegagenError(f"{len(graphs)} graphs for the {len(world.ranks)} ranks this process runs; give one "
                               "graph per rank")
        interp = interpreting()
        if interp and device.type != "cpu":
            raise MegagenError(f"Triton's interpreter is on (TRITON_INTERPRET=1) but the graph's tensors are on "
                               f"{device}; under the interpreter keep tensors on the CPU")
        if not interp and device.type != "cuda":
            raise MegagenError(f"the graph's tensors are on {device}; a MegaKernel runs on a CUDA GPU "
                               "(or on the CPU with TRITON_INTERPRET=1 set before importing megagen)")
        if interleaved is False and interp:
            raise MegagenError("the interpreter runs programs one after another, so CTAs that wait on each other "
                               "need interleaved=True (the default there)")
        if scope not in ("gpu", "sys"):
            raise MegagenError(f"scope must be 'gpu' or 'sys', got {scope!r}")
        if dep_block < 1 or dep_block & (dep_block - 1):
            raise MegagenError(f"dep_block must be a power of two, got {dep_block}")
        if profile and len(graphs) > 1:
            raise MegagenError("profile=True records one rank per launch; profile under torchrun, one rank per process")
        interleaved = interp if interleaved is None else interleaved
        if num_ctas is None:
            num_ctas = INTERPRETER_VIRTUAL_CTAS if interp else num_sms(device)
        if num_ctas < 1:
            raise MegagenError(f"num_ctas must be at least 1, got {num_ctas}")

        self.task_graph = graphs[0]
        self.rank_graphs = graphs
        self.world = world
        self._peer_tables: dict[tuple, torch.Tensor] = {}
        self.build = build_kernel(graphs, scheduler, num_ctas=num_ctas, interleaved=interleaved,
                                  validate=validate, profile=profile, world_size=world.size,
                                  peer_table=self._peer_table)
        # under torchrun each process built its own rank's graph: they must be the same program
        distributed = len(world.ranks) < world.size
        if distributed and not world.same_everywhere(int(self.task_graph.signature()[:15], 16)):
            raise MegagenError("the ranks built different graphs; every rank must build the same model with the "
                               "same options")
        queue, offsets = self.build.queue_arrays()
        # every rank's counters, in symmetric memory: peers poll them
        self._counters = [world.symmetric(rank, (self.layout.num_counters,), torch.int64) for rank in world.ranks]
        self._buffers = dict(
            records=_device_tensor(self.layout.records, device),
            deps=_device_tensor(self.layout.deps, device),
            args=_device_tensor(self.build.args, device),
            counter_table=_device_tensor(np.array(world.peer_addresses(world.ranks[0], self._counters[0])), device),
            control=torch.zeros(sb.CONTROL_SIZE + len(graphs), dtype=torch.int64, device=device),
            queue=_device_tensor(queue if queue.size else np.zeros(1), device),
            queue_offsets=_device_tensor(offsets, device),
            vstate=torch.zeros(len(graphs) * num_ctas, dtype=torch.int64, device=device),
        )
        if profile:
            self._buffers["profile"] = torch.zeros(PROFILE_HEADER_ROWS.value + self.layout.num_tasks,
                                                   PROFILE_FIELDS.value, dtype=torch.int64, device=device)
        self.reset()
        self._constexprs = self.build.constexprs(scope=scope, dep_block=dep_block, max_spins=max_spins,
                                                 gpu=not interp)
        # kernel arguments, built once: the buffers are reset in place, never replaced
        self._args = (*(self._buffers[name] for name in self.build.pointer_params), self.layout.num_tasks,
                      world.ranks[0], self.build.args.shape[1])
        self._launch_grid = (self.grid, 1 if interleaved else len(graphs))
        self._launch_options = dict(num_warps=num_warps)
        self._ranks_met = interp or world.size == len(world.ranks)  # one process runs every rank: none to meet
        if not interp:
            self._launch_options["launch_cooperative_grid"] = True  # all CTAs co-resident, or the launch fails
            self._reserve_shared_memory()

    def _peer_table(self, i: int, tensor: torch.Tensor) -> int:
        """Device address of the table of every rank's copy of ``tensor`` (a peer input of rank graph ``i``)."""
        rank = self.world.ranks[i]
        key = (rank, tensor.data_ptr())
        if key not in self._peer_tables:
            addresses = np.array(self.world.peer_addresses(rank, tensor), dtype=np.int64)
            self._peer_tables[key] = _device_tensor(addresses, tensor.device)
        return self._peer_tables[key].data_ptr()

    # -- properties --------------------------------------------------------------------------
    @property
    def graph(self):
        """The op-level networkx DiGraph (edge attribute ``kinds``: RAW / WAR / WAW); ``dag`` has the tiles."""
        return self.task_graph.op_graph

    @property
    def dag(self):
        """The tile-level DAG (``graph.dependencies``)."""
        return self.build.dag

    @property
    def schedule(self):
        return self.build.schedule

    @property
    def simulation(self):
        """The schedule's simulated run (None when built with validate=False)."""
        return self.build.simulation

    @property
    def layout(self):
        return self.build.layout

    @property
    def source(self) -> str:
        """The generated MegaKernel module's source."""
        return self.build.source

    @property
    def source_path(self):
        return self.build.source_path

    @property
    def grid(self) -> int:
        return self.build.grid

    @property
    def interleaved(self) -> bool:
        """One program stepping virtual CTAs (the interpreter's driver) rather than a persistent grid."""
        return self.build.interleaved

    @property
    def num_ctas(self) -> int:
        return self.build.num_ctas

    @property
    def counters(self) -> torch.Tensor:
        """The scoreboard counters of the first rank this process runs."""
        return self._counters[0]

    @property
    def launches(self) -> int:
        """Completed launches, read from the device (each launch's CTAs count themselves done)."""
        return int(self._buffers["control"][sb.CONTROL_DONE.value].item()) // (self._launch_grid[0] *
                                                                                self._launch_grid[1])

    def _reserve_shared_memory(self) -> None:
        """Compile the kernel and give its launches more dynamic shared memory than Triton's own buffers take,
        which the kernel finds at the end: the CTAs' copy of the running task's argument row, and below it their
        staging areas (megagen.tasks.staging) where ops stage."""
        kernel = self._compiled()
        if getattr(kernel, "megagen_reserved", False):  # a kernel another runner of the same source prepared
            return
        if kernel.module is not None:
            raise MegagenError("the MegaKernel was loaded before its shared memory was reserved; build it anew")
        reserved = self.build.args_width * 8 + self.build.staging
        shared = -(-kernel.metadata.shared // LINE) * LINE + reserved  # the area starts on a 128-byte line
        kernel.metadata = kernel.metadata._replace(shared=shared)
        kernel.packed_metadata = make_backend(kernel.metadata.target).pack_metadata(kernel.metadata)
        kernel.megagen_reserved = True

    def _compiled(self):
        """The compiled kernel of this MegaKernel's launches (compiled now if it was not)."""
        return self.build.module.megakernel.warmup(*self._args, grid=self._launch_grid, **self._constexprs,
                                                   **self._launch_options)

    def _meet_ranks(self) -> None:
        """Before the first launch where each rank has a process of its own: compile, then wait for every rank to
        have compiled. A rank's waits for its peers' tiles give up after max_spins polls (seconds), and ranks take
        different times to compile. Qwen3-8B at tp=2 once stopped in its first launch, most likely so (two H100s,
        BENCHMARKS.md, 2026-11-27)."""
        self._compiled()
        torch.cuda.synchronize(self.world.device)
        self.world.barrier()
        self._ranks_met = True

    # -- running -----------------------------------------------------------------------------
    def run(self, check: bool = True) -> None:
        """Launch once. ``check=False`` skips the host sync (for timing and CUDA-graph capture); call ``check()``."""
        if not self._ranks_met:
            self._meet_ranks()
        try:
            self.build.module.megakernel[self._launch_grid](*self._args, **self._constexprs, **self._launch_options)
        except RuntimeError as e:
            if "cooperative" in str(e).lower() or "too large" in str(e).lower():
                staging = (f", or build with wide_gate_up=False or stage_weights=False (each CTA's staging area "
                           f"takes {self.build.staging} bytes of shared memory)" if self.build.staging else "")
                raise MegagenError(f"the {self.grid} CTAs of the MegaKernel cannot all be resident on the GPU "
                                   f"at once ({e}); lower num_ctas or num_warps{staging}") from e
            raise
        if check:
            self.check()

    def check(self) -> None:
        """Raise ``DeadlockError`` if the last launches stopped on a dependency; the kernel is reset and reusable.

        Under torchrun every rank must call it (the ranks agree whether any of them stopped)."""
        control = self._buffers["control"].cpu().tolist()
        aborted = control[sb.CONTROL_ABORT.value] != 0
        if not self.world.any(aborted):
            return
        message = (self._stall_message(control) if aborted else
                   f"MegaKernel launch stopped on another rank than {self.world.ranks[0]} (its error names the task).")
        self.reset()
        raise DeadlockError(message)

    def reset(self) -> None:
        """Zero the scoreboard (only needed after an aborted launch: counters are epoch-based otherwise).

        The profile is zeroed too, so an aborted launch's partial rows are never read as a timeline."""
        for counters in self._counters:
            counters.zero_()
        control = self._buffers["control"]
        control.zero_()
        control[sb.CONTROL_ERR_TASK.value] = -1
        if "profile" in self._buffers:
            self._buffers["profile"].zero_()

    def profile(self) -> Profile:
        """The latest launch's timeline; needs ``profile=True`` and a finished launch (checked, as by ``check()``)."""
        if "profile" not in self._buffers:
            raise MegagenError("this MegaKernel records no profile: build it with profile=True")
        self.check()
        rows = self._buffers["profile"][PROFILE_HEADER_ROWS.value:].cpu().numpy()
        return Profile.from_buffer(rows, self.task_graph, clock=self._constexprs["CLOCK"])

    def _stall_message(self, control) -> str:
        dag = self.dag
        task, counter = control[sb.CONTROL_ERR_TASK.value], control[sb.CONTROL_ERR_COUNTER.value]
        cta = control[sb.CONTROL_ERR_CTA.value]
        epoch = control[sb.CONTROL_ERR_EPOCH.value]
        rank, peer = control[sb.CONTROL_ERR_RANK.value], control[sb.CONTROL_ERR_PEER.value]
        local = self.world.ranks.index(rank)
        counters = self._counters[local].cpu().numpy()
        finished = int((counters[:dag.num_tasks] >= epoch).sum())
        multi = self.world.size > 1
        who = f"{'rank ' + str(rank) + ' ' if multi else ''}{'virtual ' if self.interleaved else ''}CTA {cta}"
        if counter < 0:
            what = f"{who} could not start {dag.describe(task)}: a full sweep over all CTAs made no progress"
        else:
            target = self.layout.describe_counter(dag, counter) + (f" on rank {peer}" if multi else "")
            what = (f"{who} gave up in {dag.describe(task)} waiting for {target} (counter {counter} was "
                    f"{control[sb.CONTROL_ERR_SEEN.value]}, needed {control[sb.CONTROL_ERR_NEED.value]})")
        return (f"MegaKernel launch {epoch} stopped: {what}; {finished} of {dag.num_tasks} tasks finished"
                f"{' on rank ' + str(rank) if multi else ''}. "
                "The scoreboard was reset; the kernel can run again.")


def kernel_option_names() -> tuple[str, ...]:
    """The keyword options MegaKernel takes, which ``graph.compile`` and ``megagen.build`` pass on to it."""
    params = inspect.signature(MegaKernel.__init__).parameters.values()
    return tuple(p.name for p in params if p.kind is p.KEYWORD_ONLY)


class OpLaunches:
    """Run a graph op by op, one standalone kernel launch per op: the baseline a MegaKernel removes.

    ``pdl``: launch with programmatic dependent launch (a GPU of compute capability 9 or later), so each
    op's programs start, and load their prefetched weights, while the op before is finishing; captured in
    a CUDA graph this is the strongest way to run the same tiles without a MegaKernel.
    """

    def __init__(self, graph, num_warps: int = 4, pdl: bool = False):
        if pdl and (interpreting() or torch.cuda.get_device_capability(graph.device)[0] < 9):
            raise MegagenError("pdl=True needs a GPU of compute capability 9.0 or later (Hopper); leave it off "
                               "here")
        if graph.world_size > 1:
            raise MegagenError(f"graph {graph.name} is one rank of {graph.world_size}: its communication tasks need "
                               "the other ranks, so it runs only as a MegaKernel")
        variants, op_variant = variants_of(graph)
        self._launches = []
        modules = {}
        for op in graph.ops:
            v = variants[op_variant[op.index]]
            if v.id not in modules:
                modules[v.id], _ = load_module(render_standalone(v), [v], f"standalone_{v.task.name}")
            # a peer input of a one-rank graph: a table holding the one copy's address
            args = [torch.tensor([op.tensors[n].data_ptr()], device=op.tensors[n].device) if n in v.peers
                    else op.tensors[n] for n in v.tensor_dtypes] + [op.plan.scalars[n] for n, _ in v.scalars]
            if v.takes_ticket:  # the op's own ticket counters, one a group, taken by every launch
                args.append(torch.zeros(op.plan.ticket_groups, dtype=torch.int64, device=graph.device))
            self._launches.append((modules[v.id].standalone, (op.num_tiles,), args))
        self.num_warps = num_warps
        self.pdl = pdl

    def run_op(self, index: int) -> None:
        """Launch op ``index`` of the graph on its own (every tile, one program each)."""
        kernel, grid, args = self._launches[index]
        kernel[grid](*args, PDL=self.pdl, num_warps=self.num_warps, launch_pdl=self.pdl)

    def run(self) -> None:
        for index in range(len(self._launches)):
            self.run_op(index)
