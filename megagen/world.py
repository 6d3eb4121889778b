"""Worlds: the ranks a MegaKernel runs on, and the buffers they share.

Tensor parallelism runs the same graph on every rank, each rank on its own shard of the
weights. A buffer that other ranks read (an allreduce's partial sums, the scoreboard's
counters) is *symmetric*: every rank allocates its copy in the same order, so the k-th
symmetric buffer of one rank corresponds to the k-th of every other, and a communication
task reads the copies through a table of their addresses.

- ``EmulatedWorld(n)``: all n ranks in this process, each rank's buffers separate tensors,
  every rank's tasks in one launch (CPU tests, debugging). ``EmulatedWorld(1)`` is the
  world of a single-GPU MegaKernel.
- ``NvshmemWorld``: one rank per process under torchrun; symmetric buffers come from
  NVSHMEM (nvshmem4py), peers' copies are mapped over NVLink. No multicast is used.
"""
from __future__ import annotations

import atexit
import os
import threading
import warnings

import numpy as np
import torch

from megagen.errors import MegagenError

# Bound on each teardown step (barrier, NVSHMEM finalize, process-group destroy) in seconds.
TEARDOWN_TIMEOUT_S = 30.0


class World:
    """The ranks of one tensor-parallel program. ``ranks``: those this process runs."""

    size: int
    ranks: tuple[int, ...]
    device: torch.device

    def __init__(self):
        self._symmetric: dict[int, list[torch.Tensor]] = {r: [] for r in self.ranks}

    def symmetric(self, rank: int, shape, dtype: torch.dtype) -> torch.Tensor:
        """Rank ``rank``'s copy of a buffer every rank allocates, in the same order; zero-filled."""
        t = self._allocate(tuple(shape), dtype)
        t.zero_()
        self._symmetric[rank].append(t)
        return t

    def peer_addresses(self, rank: int, t: torch.Tensor) -> list[int]:
        """The address of ``t`` (a view of one of ``rank``'s symmetric buffers) on every rank."""
        if self.size == 1:  # no peers: any tensor is its own every copy
            return [t.data_ptr()]
        found = self._find(rank, t)
        if found is None:
            raise MegagenError(f"a tensor of shape {tuple(t.shape)} is read by other ranks but was not allocated "
                               "with World.symmetric(); allocate buffers that communication tasks read there")
        index, offset = found
        return [address + offset for address in self._peer_bases(rank, index)]

    def _find(self, rank: int, t: torch.Tensor):
        storage = t.untyped_storage().data_ptr()
        for index, base in enumerate(self._symmetric[rank]):
            if base.untyped_storage().data_ptr() == storage:
                return index, t.data_ptr() - base.data_ptr()
        return None

    # -- what each kind of world provides ---------------------------------------------------------
    def _allocate(self, shape, dtype) -> torch.Tensor:
        raise NotImplementedError

    def _peer_bases(self, rank: int, index: int) -> list[int]:
        raise NotImplementedError

    def any(self, flag: bool) -> bool:
        """True if ``flag`` is true on any rank (host-side; every rank must call it)."""
        return flag

    def gather(self, tensors: list[torch.Tensor]) -> list[torch.Tensor]:
        """Every rank's tensor, in rank order, from this process's ranks' (``tensors``, alike in shape)."""
        return list(tensors)

    def same_everywhere(self, value: int) -> bool:
        """True if every rank passes the same ``value`` (host-side; every rank must call it)."""
        return True

    def barrier(self) -> None:
        """Return once every rank has called it (host-side; every rank must call it)."""

    def close(self) -> None:
        """Release what the world holds; bounded in time."""


class EmulatedWorld(World):
    """All ``size`` ranks in this process on one device; a rank's buffers are ordinary tensors."""

    def __init__(self, size: int, device):
        if not isinstance(size, int) or size < 1:
            raise MegagenError(f"a world needs a positive int size, got {size!r}")
        self.size = size
        self.ranks = tuple(range(size))
        self.device = torch.device(device)
        super().__init__()

    def _allocate(self, shape, dtype):
        return torch.empty(shape, dtype=dtype, device=self.device)

    def _peer_bases(self, rank, index):
        return [self._symmetric[p][index].data_ptr() for p in range(self.size)]


def _bounded(step, what: str, timeout: float = TEARDOWN_TIMEOUT_S) -> bool:
    """Run ``step`` in a daemon thread and give up after ``timeout`` seconds (with a warning)."""
    errors = []

    def target():
        try:
            step()
        except Exception as e:  # reported below, teardown goes on
            errors.append(e)
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        warnings.warn(f"megagen: {what} did not finish within {timeout:.0f} s; going on without it")
        return False
    if errors:
        warnings.warn(f"megagen: {what} failed: {errors[0]}")
        return False
    return True


class NvshmemWorld(World):
    """One rank of a torchrun job; symmetric buffers in NVSHMEM memory (nvshmem4py), peers over NVLink.

    Uses the default torch.distributed process group (creating one if there is none) to share
    NVSHMEM's unique id. ``close()`` (also run at exit) tears NVSHMEM down, and the process group if
    megagen created it, each step bounded by ``TEARDOWN_TIMEOUT_S``: a shutdown never hangs. NVSHMEM's
    teardown needs the rank's GPU current in the thread that runs it (without, it aborts the process).
    """

    def __init__(self, size: int):
        import torch.distributed as dist
        env_size = os.environ.get("WORLD_SIZE")
        if env_size is None and not dist.is_initialized():
            raise MegagenError(f"tp={size} runs one process per GPU: start the script with "
                               f"`torchrun --nproc-per-node {size} script.py`, or pass world='emulated' to run "
                               "every rank in this process (CPU tests, debugging)")
        job_size = dist.get_world_size() if dist.is_initialized() else int(env_size)
        if job_size != size:
            raise MegagenError(f"tp={size} but the job has {job_size} processes; start it with "
                               f"`torchrun --nproc-per-node {size}`")
        try:
            import nvshmem.core as nvshmem
            from cuda.core import Device
        except ImportError as e:
            raise MegagenError(f"tp={size} needs NVSHMEM's Python bindings ({e}); install them with "
                               "`pip install 'megagen[tp]'` (nvshmem4py-cu13)") from e
        local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        torch.cuda.set_device(local_rank)
        self._owns_group = not dist.is_initialized()
        if self._owns_group:
            dist.init_process_group("nccl", device_id=torch.device("cuda", local_rank))
        self.size = size
        self.rank = dist.get_rank()
        self.ranks = (self.rank,)
        self.device = torch.device("cuda", local_rank)
        self._dist, self._nvshmem = dist, nvshmem
        # megagen uses no multicast objects; keep NVSHMEM from creating any (NVLink SHARP stays off)
        os.environ["NVSHMEM_DISABLE_NVLS"] = "1"
        device = Device(local_rank)
        device.set_current()
        uid = nvshmem.get_unique_id(empty=self.rank != 0)
        shared = [bytes(uid._data.view(np.int8)) if self.rank == 0 else None]  # rank 0's id, as plain bytes
        dist.broadcast_object_list(shared, src=0)
        if self.rank != 0:
            uid._data.view(np.int8)[:] = np.frombuffer(shared[0], np.int8)
        try:
            nvshmem.init(device=device, uid=uid, rank=self.rank, nranks=size, initializer_method="uid")
        except Exception as e:
            if self._owns_group:  # leave nothing half-started behind
                _bounded(dist.destroy_process_group, "destroying the process group")
            raise MegagenError(f"NVSHMEM failed to start on rank {self.rank} ({e}); check that "
                               "nvidia-nvshmem-cu13 matches nvshmem4py-cu13") from e
        self._closed = False
        super().__init__()
        atexit.register(self.close)

    def _allocate(self, shape, dtype):
        from nvshmem.core.interop.torch import tensor
        return tensor(shape, dtype=dtype)

    def _peer_bases(self, rank, index):
        from nvshmem.core.interop.torch import get_peer_tensor
        base = self._symmetric[rank][index]
        return [base.data_ptr() if p == rank else get_peer_tensor(base, p).data_ptr() for p in range(self.size)]

    def _reduce_max(self, value: int) -> int:
        t = torch.tensor([value], dtype=torch.int64, device=self.device)
        self._dist.all_reduce(t, op=self._dist.ReduceOp.MAX)
        return int(t.item())

    def any(self, flag: bool) -> bool:
        return self._reduce_max(int(flag)) > 0

    def gather(self, tensors):
        out = [torch.empty_like(tensors[0]) for _ in range(self.size)]
        self._dist.all_gather(out, tensors[0].contiguous())
        return out

    def same_everywhere(self, value: int) -> bool:
        value &= (1 << 62) - 1
        return self._reduce_max(value) == value and -self._reduce_max(-value) == value

    def barrier(self) -> None:
        self._dist.barrier()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        nvshmem, dist = self._nvshmem, self._dist
        torch.cuda.synchronize(self.device)
        _bounded(dist.barrier, "the barrier before NVSHMEM teardown")

        def release():  # in another thread: make this rank's GPU current there first
            from nvshmem.core.interop.torch import free_tensor
            torch.cuda.set_device(self.device)
            for tensors in self._symmetric.values():
                for t in tensors:
                    free_tensor(t)
            self._symmetric = {r: [] for r in self.ranks}
            nvshmem.finalize()
        _bounded(release, "NVSHMEM teardown")
        if self._owns_group:
            _bounded(dist.destroy_process_group, "destroying the process group")


def make_world(tp: int, world, device) -> World:
    """The world ``build(model, tp, world=...)`` asks for: None (one rank per process) or "emulated"."""
    if world == "emulated":
        return EmulatedWorld(tp, device)
    if isinstance(world, World):
        if world.size != tp:
            raise MegagenError(f"tp={tp} but the world given has {world.size} ranks")
        return world
    if world is not None:
        raise MegagenError(f"world must be None (one process per rank, under torchrun), 'emulated' or a World; "
                           f"got {world!r}")
    if tp == 1:
        return EmulatedWorld(1, device)
    return NvshmemWorld(tp)
