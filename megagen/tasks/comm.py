"""Communication tasks: the allreduce of a row-parallel projection's output across tensor-parallel ranks.

A row-parallel projection (o_proj, down_proj) leaves on every rank fp32 split-K partial sums
``part`` [P, B, N] in a symmetric buffer; the allreduce adds every rank's parts to the residual
stream ``residual`` [R, B, N] and writes the new stream ``out`` [1, B, N] on every rank. Both
forms add in one fixed order (residual, then rank 0, 1, ... and each rank's parts in order), so
every rank holds bit-identical copies of the stream.

- ``allreduce``, one-shot: tile j pulls columns j of every rank's parts and reduces them itself.
  Each rank reads (tp - 1) remote copies of the message; the fewest steps, best for small messages
  (a decode step's hidden vector).
- ``reduce_scatter`` + ``all_gather``, two-shot: tile (c, j) of reduce_scatter reduces columns j of
  chunk c, on rank c only (other ranks' tiles of that chunk do nothing), into the symmetric ``scatter``;
  tile (c, j) of all_gather copies them from rank c. Each rank reads about 2 (tp - 1) / tp copies:
  less traffic for large messages, one more dependency hop.

Every tile names exactly the columns it reads, so it waits only for the producer tiles that write
them (on every rank): the reduction of the first rows starts while later rows are still computed.
Tiles are ``BLOCK`` columns by all batch rows.

- ``barrier``: one tile that waits until every rank has written ``after`` (a symmetric tensor), then
  writes ``done``; ops that read ``done`` run after it. A graph whose last op is not already a
  cross-rank read (the decode graph's is: the next-token pick reads every rank's argmax) ends with one,
  so no rank starts its next launch, and overwrites what peers read, before every rank is done.
"""
import triton
import triton.language as tl

from megagen.errors import TaskDefinitionError
from megagen.tasks.base import ALL, TilePlan, cdiv, register_task, tile_arange

# Messages (a rank's partial sums, bytes) up to this size use the one-shot allreduce; larger ones two-shot.
# Measured on H200s (benchmarks/allreduce_probe.py, BENCHMARKS.md): one-shot was faster at every size up to
# 4 MiB at tp=2 and tp=4, so two-shot is left to larger messages (a decode step's are tens of KiB).
ONE_SHOT_MAX_BYTES = 4 * 1024 * 1024


@triton.jit
def peer_pointer(table, peer, DTYPE: tl.constexpr):
    """Rank ``peer``'s copy of a peer input, from the table of addresses a tile function receives."""
    return tl.load(table + peer).to(tl.pointer_type(DTYPE))


@triton.jit
def _stream_offsets(cols, B, N: tl.constexpr, B_PAD: tl.constexpr):
    """Offsets and mask of columns ``cols`` of every batch row of a [B, N] stream: [B_PAD, len(cols)]."""
    b = tl.arange(0, B_PAD)
    return b[:, None] * N + cols[None, :], (b[:, None] < B) & (cols[None, :] < N)


@triton.jit
def _piece_cols(tile, CHUNK: tl.constexpr, BLOCK: tl.constexpr):
    """Two-shot tile ``tile``: its chunk (the rank that reduces it) and its BLOCK columns."""
    chunk = tile // (CHUNK // BLOCK)
    return chunk, chunk * CHUNK + (tile % (CHUNK // BLOCK)) * BLOCK + tl.arange(0, BLOCK)


@triton.jit
def _reduce(part, residual, cols, B, N: tl.constexpr, PARTS: tl.constexpr, RES_PARTS: tl.constexpr,
            B_PAD: tl.constexpr, BLOCK: tl.constexpr, WORLD: tl.constexpr):
    """residual + every rank's parts at ``cols``, in rank order: fp32 [B_PAD, BLOCK]."""
    offs, mask = _stream_offsets(cols, B, N, B_PAD)
    acc = tl.zeros((B_PAD, BLOCK), dtype=tl.float32)
    for r in tl.static_range(RES_PARTS):
        acc += tl.load(residual + r * B * N + offs, mask=mask, other=0.0)
    for peer in tl.static_range(WORLD):
        src = peer_pointer(part, peer, tl.float32)
        for p in tl.static_range(PARTS):
            acc += tl.load(src + p * B * N + offs, mask=mask, other=0.0)
    return acc, offs, mask


@triton.jit
def allreduce_tile(part, residual, out, tile, B, N: tl.constexpr, PARTS: tl.constexpr, RES_PARTS: tl.constexpr,
                   B_PAD: tl.constexpr, BLOCK: tl.constexpr, WORLD: tl.constexpr):
    cols = tile * BLOCK + tl.arange(0, BLOCK)
    acc, offs, mask = _reduce(part, residual, cols, B, N, PARTS, RES_PARTS, B_PAD, BLOCK, WORLD)
    tl.store(out + offs, acc, mask=mask)


@triton.jit
def reduce_scatter_tile(part, residual, scatter, tile, rank, B, N: tl.constexpr, PARTS: tl.constexpr,
                        RES_PARTS: tl.constexpr, B_PAD: tl.constexpr, BLOCK: tl.constexpr, CHUNK: tl.constexpr,
                        WORLD: tl.constexpr):
    chunk, cols = _piece_cols(tile, CHUNK, BLOCK)
    if chunk == rank:  # this rank owns the chunk; the other ranks' tiles of it only keep the graph alike
        acc, offs, mask = _reduce(part, residual, cols, B, N, PARTS, RES_PARTS, B_PAD, BLOCK, WORLD)
        tl.store(scatter + offs, acc, mask=mask)


@triton.jit
def all_gather_tile(scatter, out, tile, B, N: tl.constexpr, B_PAD: tl.constexpr, BLOCK: tl.constexpr,
                    CHUNK: tl.constexpr):
    chunk, cols = _piece_cols(tile, CHUNK, BLOCK)
    offs, mask = _stream_offsets(cols, B, N, B_PAD)
    tl.store(out + offs, tl.load(peer_pointer(scatter, chunk, tl.float32) + offs, mask=mask), mask=mask)


def _stream(t, name, n, batch=None):
    """(parts, batch) of a contiguous fp32 [P, B, n] tensor."""
    if t.dim() != 3 or t.shape[2] != n or not t.is_contiguous() or (batch is not None and t.shape[1] != batch):
        raise TaskDefinitionError(f"allreduce: {name} must be a contiguous [P, B, {n}] tensor"
                                  f"{'' if batch is None else f' with B = {batch}'}; got {tuple(t.shape)}")
    if str(t.dtype) != "torch.float32":
        raise TaskDefinitionError(f"allreduce: {name} must be float32 (the residual stream), got {t.dtype}")
    return t.shape[0], t.shape[1]


def _common(part, residual, out, BLOCK):
    n = out.shape[-1]
    parts, batch = _stream(part, "part", n)
    res_parts, _ = _stream(residual, "residual", n, batch)
    _stream(out, "out", n, batch)
    if out.shape[0] != 1:
        raise TaskDefinitionError(f"allreduce: out must be [1, B, {n}], got {tuple(out.shape)}")
    block = min(BLOCK, triton.next_power_of_2(n))
    constexprs = {"N": n, "PARTS": parts, "RES_PARTS": res_parts, "B_PAD": triton.next_power_of_2(batch),
                  "BLOCK": block}
    return n, batch, block, constexprs


def _allreduce_plan(part, residual, out, BLOCK=256):
    n, batch, block, constexprs = _common(part, residual, out, BLOCK)
    t = tile_arange(cdiv(n, block))
    cols = (t * block, block)
    return TilePlan(t.size, reads={"part": (ALL, ALL, cols), "residual": (ALL, ALL, cols)},
                    writes={"out": (ALL, ALL, cols)}, scalars={"B": batch}, constexprs=constexprs, cost=2.0)


def _chunks(n: int, ranks: int, block: int) -> tuple[int, int]:
    """(chunk, pieces): each rank's share of the columns, in whole blocks, and the blocks in it."""
    chunk = cdiv(cdiv(n, ranks), block) * block
    return chunk, chunk // block


def _chunk_cols(ranks: int, n: int, block: int):
    chunk, pieces = _chunks(n, ranks, block)
    t = tile_arange(ranks * pieces)
    return t, ((t // pieces) * chunk + (t % pieces) * block, block), chunk


def _reduce_scatter_plan(part, residual, scatter, ranks, BLOCK=256):
    n, batch, block, constexprs = _common(part, residual, scatter, BLOCK)
    t, cols, chunk = _chunk_cols(ranks, n, block)
    return TilePlan(t.size, reads={"part": (ALL, ALL, cols), "residual": (ALL, ALL, cols)},
                    writes={"scatter": (ALL, ALL, cols)}, scalars={"B": batch},
                    constexprs={**constexprs, "CHUNK": chunk}, cost=2.0)


def _all_gather_plan(scatter, out, ranks, BLOCK=256):
    n, batch, block, constexprs = _common(scatter, scatter, out, BLOCK)
    t, cols, chunk = _chunk_cols(ranks, n, block)
    return TilePlan(t.size, reads={"scatter": (ALL, ALL, cols)}, writes={"out": (ALL, ALL, cols)},
                    scalars={"B": batch}, constexprs={"N": n, "B_PAD": constexprs["B_PAD"], "BLOCK": block,
                                                       "CHUNK": chunk}, cost=1.0)


def _reduce_reference(part, residual, cols, WORLD):
    acc = sum(residual[:, :, cols].unbind(0))
    for peer in range(WORLD):
        acc = sum(part[peer][:, :, cols].unbind(0), acc)
    return acc


def allreduce_reference(part, residual, out, tile, BLOCK, WORLD):
    cols = slice(tile * BLOCK, (tile + 1) * BLOCK)
    out[0, :, cols] = _reduce_reference(part, residual, cols, WORLD)


def _chunk_slice(tile, BLOCK, CHUNK):
    chunk, piece = divmod(tile, CHUNK // BLOCK)
    return chunk, slice(chunk * CHUNK + piece * BLOCK, chunk * CHUNK + (piece + 1) * BLOCK)


def reduce_scatter_reference(part, residual, scatter, tile, rank, BLOCK, CHUNK, WORLD):
    chunk, cols = _chunk_slice(tile, BLOCK, CHUNK)
    if chunk == rank:
        scatter[0, :, cols] = _reduce_reference(part, residual, cols, WORLD)


def all_gather_reference(scatter, out, tile, BLOCK, CHUNK):
    chunk, cols = _chunk_slice(tile, BLOCK, CHUNK)
    out[0, :, cols] = scatter[chunk][0, :, cols]


@triton.jit
def barrier_tile(after, done, tile):
    tl.store(done + tile, 1)  # the ordering is in the wait: on every rank's producers of ``after``


def barrier_reference(after, done, tile):
    done[tile] = 1


def _barrier_plan(after, done):
    if done.dim() != 1 or done.numel() != 1:
        raise TaskDefinitionError(f"barrier: done must be a one-element vector, got shape {tuple(done.shape)}")
    return TilePlan(1, reads={"after": (ALL,) * after.dim()}, writes={"done": (ALL,)}, cost=1.0)


barrier = register_task("barrier", barrier_tile, inputs=("after",), outputs=("done",), plan=_barrier_plan,
                        peer_inputs=("after",), reference=barrier_reference)
allreduce = register_task("allreduce", allreduce_tile, inputs=("part", "residual"), outputs=("out",),
                          plan=_allreduce_plan, peer_inputs=("part",), reference=allreduce_reference)
reduce_scatter = register_task("reduce_scatter", reduce_scatter_tile, inputs=("part", "residual"),
                               outputs=("scatter",), plan=_reduce_scatter_plan, peer_inputs=("part",),
                               reference=reduce_scatter_reference)
all_gather = register_task("all_gather", all_gather_tile, inputs=("scatter",), outputs=("out",),
                           plan=_all_gather_plan, peer_inputs=("scatter",), reference=all_gather_reference)


def allreduce_ops(graph, name: str, part, residual, out, *, ranks: int, mode: str = "auto") -> str:
    """Add the allreduce of ``part`` (plus ``residual``) into ``out`` to ``graph``; returns the form used.

    ``mode``: "one_shot", "two_shot", or "auto" (one-shot up to ONE_SHOT_MAX_BYTES of ``part``).
    Two-shot needs a symmetric ``scatter`` buffer like ``out``, allocated from ``graph.world``.
    """
    if mode == "auto":
        mode = "one_shot" if part.numel() * part.element_size() <= ONE_SHOT_MAX_BYTES else "two_shot"
    if mode == "one_shot":
        graph.add(allreduce, name=name, part=part, residual=residual, out=out)
    elif mode == "two_shot":
        scatter = graph.world.symmetric(graph.rank, out.shape, out.dtype)
        graph.add(reduce_scatter, name=f"{name}.reduce_scatter", part=part, residual=residual, scatter=scatter,
                  ranks=ranks)
        graph.add(all_gather, name=f"{name}.all_gather", scatter=scatter, out=out, ranks=ranks)
    else:
        raise TaskDefinitionError(f"allreduce mode must be 'auto', 'one_shot' or 'two_shot', got {mode!r}")
    return mode
