"""Scoreboard device functions called by every generated MegaKernel.

Counters only grow. Each launch has an epoch (1, 2, 3, ...) that the kernel
derives on the device from the number of CTAs that finished earlier launches,
so nothing is reset between launches and a launch can be replayed from a CUDA
graph. A dependency entry ``(counter, count)`` is satisfied in epoch ``e`` once
``counters[counter] >= count * e``.

Memory ordering: ``release_tile`` runs a CTA barrier (all the CTA's writes are
done), then one ``fence.acq_rel`` and relaxed increments of each counter (a PTX
release pattern for every one of them); ``wait_deps`` reads with acquire
semantics and ends with a CTA barrier, so every thread's later loads see the
producers' writes. ``SCOPE`` is "gpu" within one GPU and "sys" across ranks.
``FENCE`` is off only in the interpreter, which runs programs one after another
and cannot run inline PTX; there the increments are plain release atomics.

Tickets (``take_ticket``): counters of the same kind that a ticket group's tiles increment once each when they
have written their share; the one that finds the group complete does what needs all of them.

Ranks: every rank runs the same graph with its own counters (``counter_table[rank]``, in
symmetric memory), so a task has the same id everywhere. A communication task waits for
its dependencies on every rank (``wait_peer_deps``, system scope), and tiles whose output
other ranks read release at system scope.

Every value that decides a loop exit is uniform across the CTA (scalar atomics are
executed once and broadcast; reductions are uniform), so all warps leave a poll loop
together and the barriers inside it stay paired.
"""
import triton
import triton.language as tl

# Slots of the int64 control block (one per MegaKernel).
CONTROL_DONE = tl.constexpr(0)  # CTAs that finished a launch, over all launches: gives the epoch
CONTROL_ABORT = tl.constexpr(1)  # set by the first wait that gives up; every later wait returns at once
CONTROL_ERR_TASK = tl.constexpr(3)  # the task whose wait gave up
CONTROL_ERR_COUNTER = tl.constexpr(4)  # the counter it waited on
CONTROL_ERR_SEEN = tl.constexpr(5)  # the counter's value when it gave up
CONTROL_ERR_NEED = tl.constexpr(6)  # the value it needed
CONTROL_ERR_CTA = tl.constexpr(7)  # the CTA (or virtual CTA) that gave up
CONTROL_ERR_EPOCH = tl.constexpr(8)  # the launch (epoch) it happened in
CONTROL_ERR_RANK = tl.constexpr(9)  # the rank whose task gave up
CONTROL_ERR_PEER = tl.constexpr(10)  # the rank whose counter it waited on
CONTROL_QUEUE_HEADS = tl.constexpr(11)  # work-queue fetch counters, one per rank of the launch, from here
CONTROL_SIZE = 11  # slots before the queue heads


@triton.jit
def rank_counters(counter_table, rank):
    """Rank ``rank``'s scoreboard counters (its own, or a peer's mapped into this address space)."""
    return tl.load(counter_table + rank).to(tl.pointer_type(tl.int64))


@triton.jit
def launch_epoch(control, GRID: tl.constexpr):
    """This launch's epoch: CTAs of this launch have not finished, so done // GRID counts earlier launches."""
    done = tl.atomic_add(control + CONTROL_DONE, 0, sem="acquire", scope="gpu")
    return done // GRID + 1


@triton.jit
def finish_launch(control):
    """Count this CTA as finished; the next launch reads its epoch from this count."""
    tl.debug_barrier()
    tl.atomic_add(control + CONTROL_DONE, 1, sem="release", scope="gpu")


@triton.jit
def fetch_task(control, local, base):
    """Work-queue fetch: the next position in the global order of the launch's rank ``local`` (may be past the
    end); the counter grows by tasks + CTAs per launch."""
    return tl.atomic_add(control + CONTROL_QUEUE_HEADS + local, 1, sem="relaxed", scope="gpu") - base


@triton.jit
def _missing(deps, counters, offs, dep_end, epoch, SCOPE: tl.constexpr):
    """Per lane: 1 where a dependency in this block is not yet satisfied; also the counters and targets.

    Polls read with acquire semantics (an atomic add of 0), so the poll that sees the
    target value also orders the tile's later loads after the producers' writes. (Volatile
    polls plus one final acquire measured 0.2 us slower per dependency hop on an H200.) An
    atomic runs once and its result is broadcast to every warp; ``ld.acquire`` polls, which
    every warp runs for itself, stalled a decode step (BENCHMARKS.md, 2026-11-23).
    """
    m = offs < dep_end
    idx = tl.load(deps + 2 * offs, mask=m, other=0)
    need = tl.load(deps + 2 * offs + 1, mask=m, other=0) * epoch
    seen = tl.atomic_add(counters + idx, 0, mask=m, sem="acquire", scope=SCOPE)
    return tl.where(m & (seen < need), 1, 0), idx, seen, need


@triton.jit
def deps_ready(deps, counters, dep0, dep_begin, dep_end, epoch, SCOPE: tl.constexpr, DEP_BLOCK: tl.constexpr):
    """Non-blocking: 1 if every dependency of the task is satisfied (used by the interleaved driver)."""
    missing = 0
    if dep0 >= 0:
        seen = tl.atomic_add(counters + (dep0 & 0xFFFFFFFF), 0, sem="acquire", scope=SCOPE)
        missing += tl.where(seen < (dep0 >> 32) * epoch, 1, 0)
    for b in range(dep_begin, dep_end, DEP_BLOCK):
        lanes, idx, seen, need = _missing(deps, counters, b + tl.arange(0, DEP_BLOCK), dep_end, epoch, SCOPE)
        missing += tl.sum(lanes, axis=0)
    return missing == 0


@triton.jit
def aborted_flag(control):
    """The abort flag, read once per CTA and broadcast (a per-thread load could differ between warps)."""
    return tl.atomic_add(control + CONTROL_ABORT, 0, sem="relaxed", scope="gpu")


# A spinning wait reads the abort flag once every ABORT_EVERY polls: every spinning CTA of the launch reads that one
# flag, with an atomic (one a CTA, broadcast), so each read queues behind the others' at the flag's L2 slice.
ABORT_EVERY = tl.constexpr(32)


@triton.jit
def _abort_seen(control, aborted, spins):
    """``aborted``, refreshed from the flag on every ABORT_EVERY-th spin."""
    if spins % ABORT_EVERY == ABORT_EVERY - 1:
        aborted = aborted_flag(control)
    return aborted


@triton.jit
def _record_stall(control, task, counter, seen, need, cta, epoch, rank, peer):
    """The first CTA to give up writes what it was waiting for, then raises the abort flag."""
    none = tl.full((), -1, tl.int64)
    first = tl.atomic_cas(control + CONTROL_ERR_TASK, none, task.to(tl.int64), sem="relaxed", scope="gpu") == none
    if first:
        tl.store(control + CONTROL_ERR_COUNTER, counter)
        tl.store(control + CONTROL_ERR_SEEN, seen)
        tl.store(control + CONTROL_ERR_NEED, need)
        tl.store(control + CONTROL_ERR_CTA, cta)
        tl.store(control + CONTROL_ERR_EPOCH, epoch)
        tl.store(control + CONTROL_ERR_RANK, rank)
        tl.store(control + CONTROL_ERR_PEER, peer)
    tl.atomic_xchg(control + CONTROL_ABORT, 1, sem="release", scope="gpu")


@triton.jit
def _poll_block(counters, control, lanes_idx, need, valid, aborted, task, cta, epoch, rank, peer,
                SCOPE: tl.constexpr, MAX_SPINS: tl.constexpr):
    """Spin until counters ``lanes_idx`` reach ``need`` where ``valid`` holds (one acquire read of them all a
    poll); returns (ok, aborted). A poll that never succeeds records the stall."""
    seen = tl.atomic_add(counters + lanes_idx, 0, mask=valid, sem="acquire", scope=SCOPE)
    lanes = tl.where(valid & (seen < need), 1, 0)
    missing = tl.sum(lanes, axis=0)
    spins = 0
    while (missing > 0) & (aborted == 0) & (spins < MAX_SPINS):
        seen = tl.atomic_add(counters + lanes_idx, 0, mask=valid, sem="acquire", scope=SCOPE)
        lanes = tl.where(valid & (seen < need), 1, 0)
        missing = tl.sum(lanes, axis=0)
        aborted = _abort_seen(control, aborted, spins)
        spins += 1
    ok = 1
    if missing > 0:
        if aborted == 0:
            k = tl.argmax(lanes, axis=0)
            pick = tl.arange(0, lanes.shape[0]) == k
            _record_stall(control, task, tl.sum(tl.where(pick, lanes_idx, 0), axis=0),
                          tl.sum(tl.where(pick, seen, 0), axis=0), tl.sum(tl.where(pick, need, 0), axis=0),
                          cta, epoch, rank, peer)
        ok = 0
    return ok, aborted


@triton.jit
def wait_deps(deps, counters, control, dep0, dep_begin, dep_end, epoch, task, cta, rank, peer,
              SCOPE: tl.constexpr, DEP_BLOCK: tl.constexpr, MAX_SPINS: tl.constexpr):
    """Spin until the task's dependencies are satisfied in ``counters`` (rank ``peer``'s); 0 if it gave up
    (stall recorded) or the run aborted.

    A task with one dependency (most: the entry inlined in the record, dep0) polls that counter alone. One
    with a list polls dep0 and the list's first DEP_BLOCK - 1 entries together, then any further blocks of
    DEP_BLOCK: each of its waits costs no round trip of its own (an attention tile waits for q, k and v, a down
    tile for gate and up). Each poll loop runs at most MAX_SPINS times, so a dependency that never arrives ends
    the launch instead of hanging it.
    """
    # The abort flag is read only while spinning (a task whose producers are done may still run while
    # the launch winds down); reading it on every entry measured 0.4 us per task.
    aborted = tl.full((), 0, tl.int64)
    ok = 1
    if dep_end == dep_begin:
        if dep0 >= 0:
            counter = dep0 & 0xFFFFFFFF
            need = (dep0 >> 32) * epoch
            seen = tl.atomic_add(counters + counter, 0, sem="acquire", scope=SCOPE)
            spins = 0
            while (seen < need) & (aborted == 0) & (spins < MAX_SPINS):
                seen = tl.atomic_add(counters + counter, 0, sem="acquire", scope=SCOPE)
                aborted = _abort_seen(control, aborted, spins)
                spins += 1
            if seen < need:
                if aborted == 0:
                    _record_stall(control, task, counter, seen, need, cta, epoch, rank, peer)
                ok = 0
    else:
        lane = tl.arange(0, DEP_BLOCK)
        for b in range(-1, tl.cdiv(dep_end - dep_begin + 1, DEP_BLOCK) - 1):
            offs = dep_begin - 1 + (b + 1) * DEP_BLOCK + lane  # block -1: dep0 in lane 0, then the list's first
            inline = (b < 0) & (lane == 0) & (dep0 >= 0)
            listed = (offs >= dep_begin) & (offs < dep_end)
            idx = tl.where(inline, dep0 & 0xFFFFFFFF, tl.load(deps + 2 * offs, mask=listed, other=0))
            need = tl.where(inline, dep0 >> 32, tl.load(deps + 2 * offs + 1, mask=listed, other=0)) * epoch
            block_ok, aborted = _poll_block(counters, control, idx, need, inline | listed, aborted, task, cta, epoch,
                                            rank, peer, SCOPE, MAX_SPINS)
            ok = ok & block_ok
    tl.debug_barrier()
    return ok


@triton.jit
def _peer_missing(bases, idx, need, valid, WORLD: tl.constexpr, PEERS: tl.constexpr):
    """[PEERS, n] lanes: 1 where rank p's counter idx[k] (``bases[p]`` + 8 idx[k]) is below need[k]; also the
    values seen. All of it is one atomic read at system scope with acquire semantics."""
    p = tl.arange(0, PEERS)
    m = (p[:, None] < WORLD) & valid[None, :]
    ptrs = (bases[:, None] + idx[None, :] * 8).to(tl.pointer_type(tl.int64))
    seen = tl.atomic_add(ptrs, 0, mask=m, sem="acquire", scope="sys")
    return tl.where(m & (seen < need[None, :]), 1, 0), seen


@triton.jit
def wait_peer_deps(deps, counter_table, control, dep0, dep_begin, dep_end, epoch, task, cta, rank,
                   DEP_BLOCK: tl.constexpr, MAX_SPINS: tl.constexpr, WORLD: tl.constexpr, PEERS: tl.constexpr):
    """A communication task's wait: its dependencies on every rank, polled at system scope.

    Every rank's counters are read at once (one [PEERS, DEP_BLOCK] poll), so a wait costs one
    round trip over NVLink, not one per rank. Block -1 holds the inlined entry (dep0) in lane 0,
    the blocks after it the list. Bounded by MAX_SPINS polls per block, as ``wait_deps``.
    """
    p = tl.arange(0, PEERS)
    bases = tl.load(counter_table + p, mask=p < WORLD, other=0)
    lane = tl.arange(0, DEP_BLOCK)
    aborted = tl.full((), 0, tl.int64)
    ok = 1
    for b in range(-1, tl.cdiv(dep_end - dep_begin, DEP_BLOCK)):
        offs = dep_begin + b * DEP_BLOCK + lane
        listed = (b >= 0) & (offs < dep_end)
        inline = (b < 0) & (lane == 0) & (dep0 >= 0)
        idx = tl.where(inline, dep0 & 0xFFFFFFFF, tl.load(deps + 2 * offs, mask=listed, other=0))
        need = tl.where(inline, dep0 >> 32, tl.load(deps + 2 * offs + 1, mask=listed, other=0)) * epoch
        valid = inline | listed
        lanes, seen = _peer_missing(bases, idx, need, valid, WORLD, PEERS)
        missing = tl.sum(tl.sum(lanes, axis=1), axis=0)
        spins = 0
        while (missing > 0) & (aborted == 0) & (spins < MAX_SPINS):
            lanes, seen = _peer_missing(bases, idx, need, valid, WORLD, PEERS)
            missing = tl.sum(tl.sum(lanes, axis=1), axis=0)
            aborted = _abort_seen(control, aborted, spins)
            spins += 1
        if missing > 0:
            if aborted == 0:
                k = tl.argmax(tl.max(lanes, axis=0), axis=0)  # an entry some rank has not reached
                column = lane[None, :] == k
                peer = tl.argmax(tl.sum(tl.where(column, lanes, 0), axis=1), axis=0)
                at = column & (p[:, None] == peer)
                _record_stall(control, task, tl.sum(tl.where(lane == k, idx, 0), axis=0),
                              tl.sum(tl.sum(tl.where(at, seen, 0), axis=1), axis=0),
                              tl.sum(tl.where(lane == k, need, 0), axis=0), cta, epoch, rank, peer)
            ok = 0
    tl.debug_barrier()
    return ok


@triton.jit
def _fence_acq_rel(SCOPE: tl.constexpr):
    if SCOPE == "sys":
        tl.inline_asm_elementwise("fence.acq_rel.sys;\n\tmov.u32 $0, 0;", "=r", [], dtype=tl.int32, is_pure=False,
                                  pack=1)
    else:
        tl.inline_asm_elementwise("fence.acq_rel.gpu;\n\tmov.u32 $0, 0;", "=r", [], dtype=tl.int32, is_pure=False,
                                  pack=1)


@triton.jit
def release_tile(counters, task, op_counter, group_counter, SCOPE: tl.constexpr, FENCE: tl.constexpr):
    """Publish a finished tile: its op's counter, its own and its group's (if any), after all the CTA's writes.

    Consumers may poll any of the three, so each increment must be a release: one fence
    followed by relaxed increments is one (measured cheaper than three release atomics).
    """
    tl.debug_barrier()
    if FENCE:
        _fence_acq_rel(SCOPE)
        tl.atomic_add(counters + op_counter, 1, sem="relaxed", scope=SCOPE)
        tl.atomic_add(counters + task, 1, sem="relaxed", scope=SCOPE)
        if group_counter >= 0:
            tl.atomic_add(counters + group_counter, 1, sem="relaxed", scope=SCOPE)
    else:
        tl.atomic_add(counters + op_counter, 1, sem="release", scope=SCOPE)
        tl.atomic_add(counters + task, 1, sem="release", scope=SCOPE)
        if group_counter >= 0:
            tl.atomic_add(counters + group_counter, 1, sem="release", scope=SCOPE)


@triton.jit
def take_ticket(ticket, group, size):
    """1 in the last of a ticket group's ``size`` tiles to call it (TilePlan.tickets), after a tile has written
    its share: there the others' writes are visible and they have done all they read.

    A CTA barrier (every thread's writes are done), then one atomic increment with acquire and release
    semantics of the group's counter ``ticket + group``, whose old value is broadcast, then a barrier, so every
    thread's later loads are ordered after the others' writes (as in ``wait_deps``). Every launch adds ``size``
    to the counter, so the last of a launch finds it one short of a multiple of ``size``; a reset zeroes it
    with the rest of the scoreboard.
    """
    tl.debug_barrier()
    old = tl.atomic_add(ticket + group, 1, sem="acq_rel", scope="gpu")
    tl.debug_barrier()
    return (old + 1) % size == 0


@triton.jit
def record_no_progress(control, task, cta, rank, epoch):
    """Interleaved driver: a full sweep over the virtual CTAs ran nothing, so the schedule is stuck."""
    _record_stall(control, task, -1, 0, 0, cta, epoch, rank, rank)
