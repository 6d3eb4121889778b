"""Built-in linear layers for decode: y = W[N, K] @ x for a small batch, fp32 accumulation.

One tile function serves every variant; what differs is how ``x`` is formed as it is loaded
(constexpr ``X_MODE``) and what the epilogue adds:

- ``gemv``: x as given.
- ``rmsnorm_gemv`` (and ``rmsnorm_gemv_bias``): RMSNorm of x fused in; each tile computes the
  row's RMS itself (one extra pass over x, from L2), which saves a whole dependency phase.
- ``gemv_residual``: a residual stream is added by the first K chunk.
- ``silu_mul_gemv`` (and ``silu_mul_gemv_residual``): x = silu(x) * x2 (gate and up projections)
  (plus a residual).
- ``gemv_residual_zero``: ``gemv_residual`` whose first K chunk also clears ``zero``, the buffer a
  later accumulating op (``megagen.tasks.mlp``) adds into, in the same launch.
- ``*_fixed``: x (``x_fixed``) or the residual (``residual_fixed``) has one more part, in fixed point: the
  int64 sums ``megagen.tasks.mlp`` accumulates (``FIXED_ONE`` units a 1.0), which come out the same whatever
  order the tiles add them in.

Shapes: ``x`` is ``[K]``, ``[P, K]`` or ``[P, B, K]`` (P partial sums that are added as
they are loaded, B batch rows); ``y`` is ``[N]``, ``[S, N]`` or ``[S, B, N]``. With S > 1
the GEMV is split along K and y holds fp32 partial sums, one per chunk: a consumer takes
them as its P, so the reduction is deterministic, needs no zeroing, and a consumer tile of
chunk c waits only for the producer rows it reads.

Tiles: ``cdiv(N, TILE_ROWS)`` row tiles times S chunks, chunk-major; a tile runs its rows in blocks
of BLOCK_N, one after another (TILE_ROWS need not be a multiple of BLOCK_N: a block's rows past the
tile are masked), so a decode graph can size tiles to fill whole waves of CTAs. Every batch row
is computed from one load of the weight tile, so a batch costs little more than one row: at batch 1
as elementwise products on CUDA cores, for a batch as tensor-core products (``tl.dot``) with the batch
padded to DOT_BATCH rows (see ``block_shape``).
Weights are written by no task (megagen refuses a graph where an earlier op writes a
prefetched tensor), so ``gemv_prefetch`` loads the first weight block before the tile
waits; the main loop loads block j while it multiplies block j - 1 (ptxas waits for block j's
loads at the loop's end, so one block is in flight at a time). Normalised and activated inputs are
rounded to the model dtype where HuggingFace's eager path rounds them; the residual
stream itself stays fp32 (more accurate than HuggingFace's bf16 stream, so bf16 results
agree with it closely rather than bit for bit).
"""
import torch
import triton
import triton.language as tl

from megagen.errors import TaskDefinitionError
from megagen.profiler_device import mark
from megagen.tasks.attention import merged_splits_reference
from megagen.tasks.base import ALL, TilePlan, cdiv, register_task, tile_arange
from megagen.tasks.staging import (STAGE_MAX_BYTES, area_bytes, opaque, stage_after, stage_box, stage_input,
                                    stage_wait, staged_products)

# A rough per-SM share of HBM bandwidth (bytes per microsecond), for the schedule simulator's cost model.
_SM_BYTES_PER_US = 25_000
# The RMSNorm pass reads this many values of x per step (32 fp32 registers a thread at 4 warps).
_RMS_VALUES = 4096
# Fixed-point parts of a residual stream (megagen.tasks.mlp): int64 multiples of 2^-32, exact for sums below 2^31
FIXED_ONE = tl.constexpr(2.0 ** 32)
# A batch runs on tensor cores: tl.dot needs at least 16 rows, so the batch is padded to DOT_BATCH (the padding
# rows are masked, never loaded), and weight blocks are at least DOT_ROWS rows tall (see block_shape).
DOT_BATCH = 16
DOT_ROWS = 64


def block_shape(batch: int, BLOCK_N: int, BLOCK_K: int, dot_rows: int = DOT_ROWS) -> tuple[int, int]:
    """(rows, columns) of the weight blocks a GEMV tile streams: BLOCK_N x BLOCK_K at batch 1. For a batch
    the block is at least ``dot_rows`` rows and proportionally narrower, so it holds as many weights (as many
    bytes in flight) while the x block, [DOT_BATCH, columns], stays small in registers."""
    if batch == 1:
        return BLOCK_N, BLOCK_K
    rows = max(BLOCK_N, dot_rows)
    return rows, max(16, BLOCK_N * BLOCK_K // rows)


def loop_steps(constexprs) -> int:
    """Weight blocks a tile of this GEMV plan (``linear_plan``'s constexprs, or an expert tile's) streams one after
    another: its row blocks times its K chunk's blocks, each a loop step that waits on its loads; 0 for any other plan,
    or one that stages its weights in shared memory (their copies are issued together). A profile's waterfall divides
    a tile's streaming time by it: on an H200 a step took 0.77-0.85 us whatever its bytes (BENCHMARKS.md,
    2026-11-28)."""
    names = ("TILE_ROWS", "BLOCK_N", "BLOCK_K", "CHUNK", "X_MODE")
    if not all(n in constexprs for n in names) or constexprs.get("STAGE_BYTES"):
        return 0
    return cdiv(constexprs["TILE_ROWS"], constexprs["BLOCK_N"]) * cdiv(constexprs["CHUNK"], constexprs["BLOCK_K"])


def batch_pad(batch: int) -> int:
    """The batch as the tiles hold it: 1, or padded for tensor cores."""
    return 1 if batch == 1 else max(DOT_BATCH, triton.next_power_of_2(batch))


@triton.jit
def _weight_block(w, rows, row_end, k0, K: tl.constexpr, BLOCK_K: tl.constexpr, B_PAD: tl.constexpr = 0):
    """Weights [rows, k0:k0+BLOCK_K] (zero past row_end and K), as stored, or ``_packed`` as int32 pairs (the
    default B_PAD 0: as stored)."""
    if _packed(w, K, B_PAD):
        cols = k0 // 2 + tl.arange(0, BLOCK_K // 2)
        mask = (rows[:, None] < row_end) & (cols[None, :] < K // 2)
        return tl.load(w.to(tl.pointer_type(tl.int32)) + rows[:, None] * (K // 2) + cols[None, :], mask=mask,
                       other=0, eviction_policy="evict_first")
    else:
        cols = k0 + tl.arange(0, BLOCK_K)
        mask = (rows[:, None] < row_end) & (cols[None, :] < K)
        return tl.load(w + rows[:, None] * K + cols[None, :], mask=mask, other=0.0, eviction_policy="evict_first")


@triton.constexpr_function
def _packed(w, K, B_PAD):
    """Whether a batch-1 tile holds its 16-bit weights as int32 pairs, one register each, and widens them with
    integer shifts (``_unpacked``). As 16-bit values, ptxas repacks the pairs of the block the loop carries (PRMT).
    With ``_accumulate``'s row sums: Qwen3-0.6B 0.983 -> 0.925 ms a step, Llama-3.2-1B 1.135 -> 1.100 on an H100,
    and no spills (BENCHMARKS.md)."""
    return B_PAD == 1 and w.dtype.element_ty.primitive_bitwidth == 16 and K % 2 == 0


def check_pairs_aligned(w: torch.Tensor, task: str) -> None:
    """Refuse 16-bit weights a batch-1 tile would load as int32 pairs (``_packed``: an even last dim) from an
    address that is not 4-byte aligned (a view 2 bytes into an allocation)."""
    if w.element_size() == 2 and w.shape[-1] % 2 == 0 and w.data_ptr() % 4:
        raise TaskDefinitionError(f"{task}: 16-bit weights must start at a 4-byte aligned address (batch-1 tiles "
                                  "load them in pairs); pass w.clone() to copy them to an aligned allocation")


@triton.jit
def _unpacked(wk, w):
    """A ``_packed`` block [rows, columns / 2] as fp32 [rows, columns] (pointer ``w`` gives the weights' dtype)."""
    if w.dtype.element_ty == tl.bfloat16:
        lo = (wk << 16).to(tl.float32, bitcast=True)
        hi = (wk & -65536).to(tl.float32, bitcast=True)
    else:
        lo = (wk & 65535).to(tl.int16).to(tl.float16, bitcast=True).to(tl.float32)
        hi = (wk >> 16).to(tl.int16).to(tl.float16, bitcast=True).to(tl.float32)
    return tl.reshape(tl.join(lo, hi), (wk.shape[0], wk.shape[1] * 2))


@triton.jit
def _batch_offsets(cols, B, K, B_PAD: tl.constexpr):
    """Offsets and mask of columns ``cols`` of a [B, K] array: [cols] for one row, [B_PAD, cols] for a batch.

    One row keeps every tensor of the tile one dimension smaller (weights [BLOCK_N, BLOCK_K], not
    [1, BLOCK_N, BLOCK_K]): the batched form measured 10% slower at batch 1 on an H200.
    """
    if B_PAD == 1:
        return cols, cols < K
    else:
        b = tl.arange(0, B_PAD)
        return b[:, None] * K + cols[None, :], (b[:, None] < B) & (cols[None, :] < K)


@triton.jit
def _per_row(v, B_PAD: tl.constexpr):
    """A per-batch-row value, shaped to scale [.., BLOCK_K] blocks of x."""
    if B_PAD == 1:
        return v
    else:
        return v[:, None]


@triton.jit
def _accumulate(acc, wk, xk, w, K: tl.constexpr, B_PAD: tl.constexpr, X_IN_W_DTYPE: tl.constexpr):
    """acc plus W block [BLOCK_N, BLOCK_K] times x block: fp32 products at batch 1 (x [BLOCK_K]; the block
    ``_packed`` or as stored, acc [BLOCK_N, BLOCK_K / 8]), a tensor-core product into acc [BLOCK_N, B_PAD] for a
    batch (x [B_PAD, BLOCK_K]). X_IN_W_DTYPE: x holds values the weights' 16-bit dtype represents exactly (rounded
    where HuggingFace rounds), so the product runs in that dtype; otherwise in fp32 at full precision (never
    TF32)."""
    if B_PAD == 1:
        # products summed in groups of 8 columns (a thread loads 16 bytes of a row: the sums stay in the thread),
        # so the tile holds [BLOCK_N, BLOCK_K / 8] sums, not [BLOCK_N, BLOCK_K] products: an eighth of the
        # registers, with no shuffles in the loop (the row sums are finished at the store)
        if _packed(w, K, B_PAD):
            wk = _unpacked(wk, w)
        prod = wk.to(tl.float32) * xk[None, :]
        return acc + tl.sum(tl.reshape(prod, (prod.shape[0], prod.shape[1] // 8, 8)), axis=2)
    elif X_IN_W_DTYPE:
        return tl.dot(wk, tl.trans(xk.to(wk.dtype)), acc)
    else:
        return tl.dot(wk.to(tl.float32), tl.trans(xk.to(tl.float32)), acc, input_precision="ieee")


@triton.jit
def to_fixed(v):
    """fp32 values as fixed-point int64 (``FIXED_ONE`` units a 1.0, rounded toward zero)."""
    return (v * FIXED_ONE).to(tl.int64)


@triton.jit
def _from_fixed(ptr, offs, mask):
    """Fixed-point int64 values at ``ptr + offs`` as fp32 (zero where masked)."""
    return tl.load(ptr + offs, mask=mask, other=0).to(tl.float32) / FIXED_ONE


@triton.jit
def _partial_sum(x, x_fixed, k0, B, K: tl.constexpr, BLOCK_K: tl.constexpr, B_PAD: tl.constexpr,
                 PARTS: tl.constexpr):
    """x[:, :, k0:k0+BLOCK_K] of x[PARTS, B, K], summed over the parts in fp32 ([BLOCK_K] at batch 1), plus
    the same columns of the fixed-point part x_fixed [1, B, K] if there is one. A batch's only part comes in
    its stored dtype."""
    offs, mask = _batch_offsets(k0 + tl.arange(0, BLOCK_K), B, K, B_PAD)
    acc = tl.load(x + offs, mask=mask, other=0.0)
    # a batch's only part stays as stored: a 16-bit block in flight takes half the registers of its fp32 form
    if B_PAD == 1 or PARTS > 1 or x_fixed is not None:
        acc = acc.to(tl.float32)
        for p in tl.static_range(1, PARTS):
            acc += tl.load(x + p * B * K + offs, mask=mask, other=0.0).to(tl.float32)
        if x_fixed is not None:
            acc += _from_fixed(x_fixed, offs, mask)
    return acc


@triton.jit
def _round(v, like):
    """Round fp32 ``v`` to the element type of pointer ``like`` and back (where HuggingFace rounds)."""
    return v.to(like.dtype.element_ty).to(tl.float32)


@triton.jit
def _rms_inverse(x, x_fixed, norm_w, B, EPS: tl.constexpr, K: tl.constexpr, RMS_BLOCK: tl.constexpr,
                 B_PAD: tl.constexpr, PARTS: tl.constexpr):
    """1 / sqrt(mean(x^2) + eps) per batch row, x rounded to the model dtype first.

    x is read RMS_BLOCK columns at a time (all of a row up to 4096 values), so the pass costs one
    L2 round trip, where BLOCK_K-wide steps would each wait for the one before.
    """
    sq = tl.zeros((RMS_BLOCK,), tl.float32) if B_PAD == 1 else tl.zeros((B_PAD, RMS_BLOCK), tl.float32)
    for k0 in tl.static_range(0, K, RMS_BLOCK):
        xk = _round(_partial_sum(x, x_fixed, k0, B, K, RMS_BLOCK, B_PAD, PARTS), norm_w)
        sq += xk * xk
    return tl.rsqrt(tl.sum(sq, axis=-1) / K + EPS)


@triton.jit
def _split_loads(o_part, ml_part, k0, K: tl.constexpr, BLOCK_K: tl.constexpr, SPLITS: tl.constexpr,
                 HEAD_DIM: tl.constexpr):
    """Attention splits behind input columns k0:k0+BLOCK_K (whole heads of HEAD_DIM, batch 1): every split's
    unnormalised output [S_PAD, BLOCK_K] and its heads' maxima and sums [S_PAD, BLOCK_K // HEAD_DIM, 2]
    (``megagen.tasks.attention`` layouts). Loaded as [S_PAD, heads, HEAD_DIM] instead (vector loads), Qwen3-0.6B
    measured 0.8020 ms a step against 0.7613 with the last split merging, on an H100; not yet understood
    (BENCHMARKS.md, 2026-11-27)."""
    S_PAD: tl.constexpr = _pow2(SPLITS)
    s = tl.arange(0, S_PAD)
    cols = k0 + tl.arange(0, BLOCK_K)
    o = tl.load(o_part + (cols // HEAD_DIM * SPLITS)[None, :] * HEAD_DIM + s[:, None] * HEAD_DIM
                + (cols % HEAD_DIM)[None, :], mask=(s[:, None] < SPLITS) & (cols[None, :] < K), other=0.0)
    heads = k0 // HEAD_DIM + tl.arange(0, BLOCK_K // HEAD_DIM)
    row = heads[None, :] * SPLITS + s[:, None]
    valid = (s[:, None] < SPLITS) & (heads[None, :] < K // HEAD_DIM)
    j = tl.arange(0, 2)
    ml = tl.load(ml_part + row[:, :, None] * 2 + j[None, None, :], mask=valid[:, :, None], other=float("-inf"))
    return o, ml


@triton.jit
def _merged(o, ml, w):
    """The attention output behind ``_split_loads``' columns: each head's splits merged by their maxima and sums,
    rounded to the dtype of ``w`` (HuggingFace's attention output is in the model dtype); 0 past the last head."""
    S_PAD: tl.constexpr = o.shape[0]
    HEADS: tl.constexpr = ml.shape[1]
    m, l_s = tl.split(ml)  # [S_PAD, HEADS] each; padding (and an empty split) has max -inf
    weight = tl.where(m > float("-inf"), tl.exp(m - tl.max(m, axis=0)[None, :]), 0.0)
    total = tl.sum(tl.where(m > float("-inf"), l_s, 0.0) * weight, axis=0)  # [HEADS]
    num = tl.sum(tl.reshape(o, (S_PAD, HEADS, o.shape[1] // HEADS)) * weight[:, :, None], axis=0)
    res = tl.where(total[:, None] > 0, num / total[:, None], 0.0)
    return _round(tl.reshape(res, (o.shape[1],)), w)


@triton.jit
def _x_load(x, x_fixed, x2, norm_w, k0, B, K: tl.constexpr, BLOCK_K: tl.constexpr, B_PAD: tl.constexpr,
            PARTS: tl.constexpr, X_MODE: tl.constexpr, HEAD_DIM: tl.constexpr = 1):
    """The loads behind GEMV input columns k0:k0+BLOCK_K: x and, by X_MODE, the norm weights or x2 (in fp32, but
    a batch's only part of x or x2 as stored: ``_x_form`` or the product converts it); in "merge" mode PARTS
    attention splits, x their outputs and x2 their maxima and sums (``_split_loads``).

    Issued one block ahead of their use (``_x_form``), so their L2 round trip overlaps a block's
    products instead of stalling each one.
    """
    if X_MODE == "merge":
        xk, extra = _split_loads(x, x2, k0, K, BLOCK_K, PARTS, HEAD_DIM)
    else:
        xk = _partial_sum(x, x_fixed, k0, B, K, BLOCK_K, B_PAD, PARTS)
        if X_MODE == "rmsnorm":
            cols = k0 + tl.arange(0, BLOCK_K)
            extra = tl.load(norm_w + cols, mask=cols < K, other=0.0).to(tl.float32)
        elif X_MODE == "silu_mul":
            extra = _partial_sum(x2, None, k0, B, K, BLOCK_K, B_PAD, PARTS)
        else:
            extra = xk
    return xk, extra


@triton.jit
def _x_form(xk, extra, x, norm_w, rstd, B_PAD: tl.constexpr, X_MODE: tl.constexpr, w=None):
    """The GEMV input block from its loads ([BLOCK_K] at batch 1), formed according to X_MODE."""
    if X_MODE == "merge":
        xk = _merged(xk, extra, w)
    elif X_MODE == "rmsnorm":
        xk = _round(_round(_round(xk, norm_w) * _per_row(rstd, B_PAD), norm_w) * extra, norm_w)
    elif X_MODE == "silu_mul":
        xk = xk.to(tl.float32)
        xk = _round(_round(xk * tl.sigmoid(xk), x) * extra.to(tl.float32), x)
    return xk


@triton.jit
def gemv_prefetch(w, tile, N, stage, K: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  B_PAD: tl.constexpr, ROW_TILES: tl.constexpr, TILE_ROWS: tl.constexpr, CHUNK: tl.constexpr,
                  STAGE_BYTES: tl.constexpr, COPY_SPREAD: tl.constexpr):
    """Before the tile waits for its input: a staged tile starts copying its whole weight box into shared memory
    (``megagen.tasks.staging``), row tile r of R r / R of COPY_SPREAD SM cycles after it got here; any other loads
    its first weight block into registers."""
    first_row = (tile % ROW_TILES) * TILE_ROWS
    k0 = (tile // ROW_TILES) * CHUNK
    if STAGE_BYTES and stage is not None:
        if COPY_SPREAD > 0:
            stage_after((tile % ROW_TILES) * COPY_SPREAD // ROW_TILES)
        stage_box(stage, w + first_row * K + k0, tl.minimum(TILE_ROWS, N - first_row), CHUNK * 2, K * 2)
        block = 0
    else:
        rows = first_row + tl.arange(0, BLOCK_N)
        block = _weight_block(w, rows, tl.minimum(first_row + TILE_ROWS, N), k0, K, BLOCK_K, B_PAD)
    return block


@triton.jit
def _zero_acc(BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, B_PAD: tl.constexpr):
    if B_PAD == 1:
        return tl.zeros((BLOCK_N, BLOCK_K // 8), dtype=tl.float32)  # sums of 8 products, summed at the store
    else:
        return tl.zeros((BLOCK_N, B_PAD), dtype=tl.float32)  # tensor-core results


@triton.jit
def _store_rows(acc, rows, row_end, chunk, bias, residual, residual_fixed, zero, y, B, N, B_PAD: tl.constexpr,
                RES_PARTS: tl.constexpr):
    """Reduce a row block's products and store its rows below row_end, the bias and residual added by the
    first K chunk, which also clears the same rows of ``zero`` (where a later op accumulates)."""
    if B_PAD == 1:
        out = tl.sum(acc, axis=1)  # [BLOCK_N]
    else:
        out = tl.trans(acc)  # [B_PAD, BLOCK_N]
    offs, mask = _batch_offsets(rows, B, N, B_PAD)
    mask = mask & (rows < row_end)
    if chunk == 0:
        if bias is not None:
            out += tl.load(bias + rows, mask=rows < row_end, other=0.0).to(tl.float32)
        if residual is not None:
            for p in tl.static_range(RES_PARTS):
                out += tl.load(residual + p * B * N + offs, mask=mask, other=0.0).to(tl.float32)
        if residual_fixed is not None:
            out += _from_fixed(residual_fixed, offs, mask)
        if zero is not None:
            tl.store(zero + offs, tl.zeros_like(out).to(zero.dtype.element_ty), mask=mask)
    tl.store(y + chunk * B * N + offs, out.to(y.dtype.element_ty), mask=mask)


@triton.jit
def linear_tile(w, x, x_fixed, x2, norm_w, bias, residual, residual_fixed, zero, y, tile, N, B, prefetched, marks,
                stage, K: tl.constexpr,
                BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, B_PAD: tl.constexpr, ROW_TILES: tl.constexpr,
                TILE_ROWS: tl.constexpr, CHUNK: tl.constexpr, X_PARTS: tl.constexpr, RES_PARTS: tl.constexpr,
                X_MODE: tl.constexpr, EPS: tl.constexpr, RMS_BLOCK: tl.constexpr, X_IN_W_DTYPE: tl.constexpr,
                STAGE_BYTES: tl.constexpr, HEAD_DIM: tl.constexpr = 1):
    """TILE_ROWS rows over one K chunk, from the weights its prefetch staged in shared memory (``STAGE_BYTES``,
    where the driver gives a staging area) or streamed from global memory."""
    if STAGE_BYTES and stage is not None:
        _staged_tile(w, x, x_fixed, x2, norm_w, bias, residual, residual_fixed, zero, y, tile, N, B, marks, stage,
                     K, BLOCK_N, BLOCK_K, ROW_TILES, TILE_ROWS, CHUNK, X_PARTS, RES_PARTS, X_MODE, EPS, RMS_BLOCK,
                     HEAD_DIM)
    else:
        _streamed_tile(w, x, x_fixed, x2, norm_w, bias, residual, residual_fixed, zero, y, tile, N, B, prefetched,
                       marks, K, BLOCK_N, BLOCK_K, B_PAD, ROW_TILES, TILE_ROWS, CHUNK, X_PARTS, RES_PARTS, X_MODE,
                       EPS, RMS_BLOCK, X_IN_W_DTYPE, HEAD_DIM)


@triton.constexpr_function
def _pow2(n):
    return triton.next_power_of_2(n)


@triton.jit
def _staged_tile(w, x, x_fixed, x2, norm_w, bias, residual, residual_fixed, zero, y, tile, N, B, marks, stage,
                 K: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, ROW_TILES: tl.constexpr,
                 TILE_ROWS: tl.constexpr, CHUNK: tl.constexpr, X_PARTS: tl.constexpr, RES_PARTS: tl.constexpr,
                 X_MODE: tl.constexpr, EPS: tl.constexpr, RMS_BLOCK: tl.constexpr, HEAD_DIM: tl.constexpr):
    """Batch 1, weights staged: form the chunk's input once into shared memory (one round trip for its loads),
    wait for the staged weights, then every row block's products come from shared memory."""
    chunk = tile // ROW_TILES
    first_row = (tile % ROW_TILES) * TILE_ROWS
    row_end = tl.minimum(first_row + TILE_ROWS, N)
    X_BLOCK: tl.constexpr = _pow2(CHUNK)
    QUADS: tl.constexpr = BLOCK_K // 8
    cols = tl.arange(0, X_BLOCK)
    xk, extra = _x_load(x, x_fixed, x2, norm_w, chunk * CHUNK, B, K, X_BLOCK, 1, X_PARTS, X_MODE, HEAD_DIM)
    rstd = 0.0
    if X_MODE == "rmsnorm":
        rstd = _rms_inverse(x, x_fixed, norm_w, B, EPS, K, RMS_BLOCK, 1, X_PARTS)
    xk = _x_form(xk, extra, x, norm_w, rstd, 1, X_MODE, w)
    stage_input(stage, cols, xk, cols < CHUNK, CHUNK, TILE_ROWS * CHUNK * 2)
    mark(marks, 0, tl.sum(xk.to(tl.float32)))  # the input is ready
    tl.debug_barrier()  # every thread's share of the input is in shared memory
    stage_wait(stage)
    for rb in tl.static_range(0, TILE_ROWS, BLOCK_N):
        rows = rb + tl.arange(0, BLOCK_N)
        boxed = tl.where(rows < TILE_ROWS, rows, 0)  # a block's rows past the box read its first (not stored)
        acc = tl.zeros((BLOCK_N, QUADS), tl.float32)
        # a loop, not unrolled: the unrolled products' code, fetched once a tile, stalled the warps on instruction
        # fetch for half of their time in them (ncu, Qwen3-0.6B; BENCHMARKS.md)
        for k in range(0, opaque(tl.full((), CHUNK // 8, tl.int32)), QUADS):
            acc += staged_products(stage, boxed, k + tl.arange(0, QUADS), CHUNK * 2, CHUNK, TILE_ROWS * CHUNK * 2,
                                   w.dtype.element_ty == tl.float16)
        mark(marks, 1, tl.sum(acc, axis=1))  # the last products are done
        _store_rows(acc, first_row + rows, row_end, chunk, bias, residual, residual_fixed, zero, y, B, N, 1, RES_PARTS)
    mark(marks, 2, tile)  # the stores are issued; the release follows


@triton.jit
def _streamed_tile(w, x, x_fixed, x2, norm_w, bias, residual, residual_fixed, zero, y, tile, N, B, prefetched, marks,
                   K: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, B_PAD: tl.constexpr,
                   ROW_TILES: tl.constexpr, TILE_ROWS: tl.constexpr, CHUNK: tl.constexpr, X_PARTS: tl.constexpr,
                   RES_PARTS: tl.constexpr, X_MODE: tl.constexpr, EPS: tl.constexpr, RMS_BLOCK: tl.constexpr,
                   X_IN_W_DTYPE: tl.constexpr, HEAD_DIM: tl.constexpr):
    """TILE_ROWS rows in blocks of BLOCK_N, one block after another, over one K chunk: the weight blocks
    stream in one sequence (two in flight, across row blocks too), and the tile's fixed costs (dispatch,
    wait, the RMSNorm pass) are paid once for all of them."""
    K_STEPS: tl.constexpr = CHUNK // BLOCK_K
    ROW_BLOCKS: tl.constexpr = (TILE_ROWS + BLOCK_N - 1) // BLOCK_N
    chunk = tile // ROW_TILES
    first_row = (tile % ROW_TILES) * TILE_ROWS
    row_end = tl.minimum(first_row + TILE_ROWS, N)
    rows = first_row + tl.arange(0, BLOCK_N)
    k_begin = chunk * CHUNK
    STEPS: tl.constexpr = ROW_BLOCKS * K_STEPS
    acc = _zero_acc(BLOCK_N, BLOCK_K, B_PAD)
    wk = prefetched
    xk, extra = _x_load(x, x_fixed, x2, norm_w, k_begin, B, K, BLOCK_K, B_PAD, X_PARTS, X_MODE, HEAD_DIM)
    # At batch > 1 the first step is peeled: block 1's loads come before the RMSNorm pass, so that the pass's wait
    # for x overlaps them (one round trip after the wait, not the pass's and then the block's). Llama-3.2-1B at
    # batch 8: 5.9% faster on an H200. At batch 1 Qwen3-0.6B and Llama-3.2-1B measured 4.5-5.6% slower (same
    # machine): there ptxas gives a block-1 weight load (HBM) the scoreboard of the pass's x loads (L2), so the
    # pass waits for HBM. Batch 1 keeps the plain loop (BENCHMARKS.md).
    PEEL: tl.constexpr = STEPS > 1 and B_PAD > 1
    first = 1
    if PEEL:
        w_next, x_next, extra_next, next_rows = _block_loads(w, x, x_fixed, x2, norm_w, 1, first_row, row_end,
                                                             k_begin, B, K, BLOCK_N, BLOCK_K, B_PAD, K_STEPS, X_PARTS,
                                                             X_MODE, HEAD_DIM)
    rstd = 0.0
    if X_MODE == "rmsnorm":
        rstd = _rms_inverse(x, x_fixed, norm_w, B, EPS, K, RMS_BLOCK, B_PAD, X_PARTS)
        mark(marks, 0, rstd)  # the input is ready: the RMSNorm pass is done
    else:
        mark(marks, 0, tl.sum(xk.to(tl.float32)))  # the input is ready: its first block has arrived
    if PEEL:
        acc = _accumulate(acc, wk, _x_form(xk, extra, x, norm_w, rstd, B_PAD, X_MODE, w), w, K, B_PAD, X_IN_W_DTYPE)
        if K_STEPS == 1:  # block 0 ended a row block
            _store_rows(acc, rows, row_end, chunk, bias, residual, residual_fixed, zero, y, B, N, B_PAD, RES_PARTS)
            acc = _zero_acc(BLOCK_N, BLOCK_K, B_PAD)
        wk, xk, extra, rows = w_next, x_next, extra_next, next_rows
        first = 2
    for j in range(first, STEPS):  # load block j while block j - 1 is multiplied
        w_next, x_next, extra_next, next_rows = _block_loads(w, x, x_fixed, x2, norm_w, j, first_row, row_end,
                                                             k_begin, B, K, BLOCK_N, BLOCK_K, B_PAD, K_STEPS, X_PARTS,
                                                             X_MODE, HEAD_DIM)
        acc = _accumulate(acc, wk, _x_form(xk, extra, x, norm_w, rstd, B_PAD, X_MODE, w), w, K, B_PAD, X_IN_W_DTYPE)
        if ROW_BLOCKS > 1:
            if j % K_STEPS == 0:  # block j - 1 ended a row block
                _store_rows(acc, rows, row_end, chunk, bias, residual, residual_fixed, zero, y, B, N, B_PAD, RES_PARTS)
                acc = _zero_acc(BLOCK_N, BLOCK_K, B_PAD)
        wk, xk, extra, rows = w_next, x_next, extra_next, next_rows
    acc = _accumulate(acc, wk, _x_form(xk, extra, x, norm_w, rstd, B_PAD, X_MODE, w), w, K, B_PAD, X_IN_W_DTYPE)
    mark(marks, 1, tl.sum(acc, axis=1))  # the last products are done (their weights have streamed in)
    _store_rows(acc, rows, row_end, chunk, bias, residual, residual_fixed, zero, y, B, N, B_PAD, RES_PARTS)
    mark(marks, 2, tile)  # the stores are issued (their residual loads done); the release follows


@triton.jit
def _block_loads(w, x, x_fixed, x2, norm_w, j, first_row, row_end, k_begin, B, K: tl.constexpr,
                 BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, B_PAD: tl.constexpr, K_STEPS: tl.constexpr,
                 X_PARTS: tl.constexpr, X_MODE: tl.constexpr, HEAD_DIM: tl.constexpr):
    """The loads of a tile's block j (row block j // K_STEPS, K step j % K_STEPS): weights, x and what x is formed
    with; and the block's rows."""
    rows = first_row + (j // K_STEPS) * BLOCK_N + tl.arange(0, BLOCK_N)
    k = k_begin + (j % K_STEPS) * BLOCK_K
    wk = _weight_block(w, rows, row_end, k, K, BLOCK_K, B_PAD)
    xk, extra = _x_load(x, x_fixed, x2, norm_w, k, B, K, BLOCK_K, B_PAD, X_PARTS, X_MODE, HEAD_DIM)
    return wk, xk, extra, rows


def _parts(t, parts, B, fixed=None):
    """A [.., last] tensor summed over its parts in order, in fp32 [B, last], plus a fixed-point part (as
    ``_partial_sum``)."""
    out = sum(t.view(parts, B, t.shape[-1]).float().unbind(0))
    return out if fixed is None else out + _from_fixed_reference(fixed.view(B, -1))


def to_fixed_reference(v):
    """``to_fixed`` in plain PyTorch."""
    return (v.float() * FIXED_ONE.value).to(torch.int64)


def _from_fixed_reference(q):
    """``_from_fixed`` in plain PyTorch."""
    return q.float() / FIXED_ONE.value


def _round_to(v, dtype):
    return v.to(dtype).float()


def _merged_reference(o_part, ml_part, dtype):
    """``_merged`` of every head: o_part [1, H, S, D] and ml_part [1, H, S, 2] as the attention output [1, H * D]."""
    return _round_to(merged_splits_reference(o_part[0], ml_part[0]).reshape(1, -1), dtype)


def linear_reference(w, x, x_fixed, x2, norm_w, bias, residual, residual_fixed, zero, y, tile, N, B, K, ROW_TILES,
                     TILE_ROWS, CHUNK, X_PARTS, RES_PARTS, X_MODE, EPS):
    chunk, r = divmod(tile, ROW_TILES)
    rows, cols = slice(r * TILE_ROWS, (r + 1) * TILE_ROWS), slice(chunk * CHUNK, (chunk + 1) * CHUNK)
    xs = _merged_reference(x, x2, w.dtype) if X_MODE == "merge" else _parts(x, X_PARTS, B, x_fixed)
    if X_MODE == "rmsnorm":
        xs = _round_to(xs, norm_w.dtype)
        rstd = torch.rsqrt((xs * xs).sum(1, keepdim=True) / K + EPS)
        xk = _round_to(_round_to(xs[:, cols] * rstd, norm_w.dtype) * norm_w[cols].float(), norm_w.dtype)
    elif X_MODE == "silu_mul":
        gate = xs[:, cols]
        xk = _round_to(_round_to(gate * torch.sigmoid(gate), x.dtype) * _parts(x2, X_PARTS, B)[:, cols], x.dtype)
    else:
        xk = xs[:, cols]
    out = xk @ w[rows, cols].float().T
    if chunk == 0:
        if bias is not None:
            out += bias[rows].float()
        if residual is not None:
            out = sum(residual.view(RES_PARTS, B, N)[:, :, rows].float().unbind(0), out)
        if residual_fixed is not None:
            out = out + _from_fixed_reference(residual_fixed.view(B, N)[:, rows])
    y.view(-1, B, N)[chunk, :, rows] = out
    if zero is not None and chunk == 0:
        zero.view(B, N)[:, rows] = 0


def _lead(t, name, last, w):
    """(parts, batch) of a [last], [P, last] or [P, B, last] tensor."""
    if t.dim() > 3 or t.shape[-1] != last or not t.is_contiguous():
        raise TaskDefinitionError(f"linear: w is {list(w.shape)}, so {name} must be a contiguous [{last}], "
                                  f"[P, {last}] or [P, B, {last}] tensor; got {tuple(t.shape)}")
    return (1 if t.dim() == 1 else t.shape[0]), (t.shape[1] if t.dim() == 3 else 1)


def _box(t, lead_first, last):
    """A region of a [.., last] tensor: the first dim's box (if any), all batch rows, then ``last``."""
    return ((lead_first,) if t.dim() >= 2 else ()) + ((ALL,) if t.dim() == 3 else ()) + (last,)


def split_k_blocks(k: int, split: int, batch: int, BLOCK_N: int = 16, BLOCK_K: int = 512,
                   dot_rows: int = DOT_ROWS) -> tuple[int, int] | None:
    """(block, chunk) columns of a GEMV over K split ``split`` ways: each chunk is whole blocks of at most
    ``block_shape``'s columns. None if K does not split that way."""
    block = max(16, min(block_shape(batch, BLOCK_N, BLOCK_K, dot_rows)[1], triton.next_power_of_2(cdiv(k, split))))
    chunk = cdiv(cdiv(k, split), block) * block
    return (block, chunk) if cdiv(k, chunk) == split else None


def stage_bytes(w, batch, tile_rows, chunk) -> int:
    """The staging area (``megagen.tasks.staging``) a GEMV tile takes, or 0 where it cannot stage its weights:
    staged are batch 1, 16-bit weights whose box rows start 16-byte aligned, a box and an input chunk that fit
    ``STAGE_MAX_BYTES``."""
    area = area_bytes(tile_rows * chunk * 2, chunk)
    ok = (batch == 1 and w.element_size() == 2 and w.shape[1] * 2 % 16 == 0 and w.data_ptr() % 16 == 0
          and area <= STAGE_MAX_BYTES)
    return area if ok else 0


def _split_parts(o_part, ml_part, k, w) -> tuple[int, int]:
    """(splits, head dim) of attention splits that form a GEMV's input of k columns (``merge_gemv``)."""
    if (o_part.dim() != 4 or o_part.shape[0] != 1 or o_part.shape[1] * o_part.shape[3] != k
            or not o_part.is_contiguous() or o_part.dtype != torch.float32):
        raise TaskDefinitionError(f"linear: w is {list(w.shape)}, so x (attention splits) must be a contiguous fp32 "
                                  f"[1, H, S, D] tensor with H * D = {k} (batch 1); got {tuple(o_part.shape)} "
                                  f"{o_part.dtype}")
    _, heads, splits, d = o_part.shape
    if tuple(ml_part.shape) != (1, heads, splits, 2) or not ml_part.is_contiguous() or ml_part.dtype != torch.float32:
        raise TaskDefinitionError(f"linear: x2 (the splits' maxima and sums) must be a contiguous fp32 "
                                  f"[1, {heads}, {splits}, 2] tensor; got {tuple(ml_part.shape)} {ml_part.dtype}")
    if d & (d - 1):
        raise TaskDefinitionError(f"linear: merging attention splits takes a power-of-two head dim, got {d}")
    return splits, d


def linear_plan(w, x, y, x_fixed=None, x2=None, norm_w=None, bias=None, residual=None, residual_fixed=None, zero=None,
                eps=1e-6, BLOCK_N=32, BLOCK_K=512, TILE_ROWS=None, DOT_ROWS=DOT_ROWS, stage=True, MERGE=False,
                COPY_SPREAD=0):
    if w.dim() != 2 or not w.is_contiguous():
        raise TaskDefinitionError(f"linear: w must be a contiguous [N, K] matrix, got shape {tuple(w.shape)}")
    n, k = w.shape
    head_dim = 1
    if MERGE:
        (parts, head_dim), batch = _split_parts(x, x2, k, w), 1
    else:
        parts, batch = _lead(x, "x", k, w)
    if batch == 1:
        check_pairs_aligned(w, "linear")
    split, y_batch = _lead(y, "y", n, w)
    if y_batch != batch:
        raise TaskDefinitionError(f"linear: x has {batch} batch rows but y has {y_batch}")
    if not MERGE and x2 is not None and (x2.shape != x.shape or not x2.is_contiguous()):
        raise TaskDefinitionError(f"linear: x2 must be contiguous and shaped like x {tuple(x.shape)}; "
                                  f"got {tuple(x2.shape)}")
    res_parts = 1
    if residual is not None:
        res_parts, res_batch = _lead(residual, "residual", n, w)
        if res_batch != batch:
            raise TaskDefinitionError(f"linear: residual has {res_batch} batch rows, x has {batch}")
    for name, t, size in (("norm_w", norm_w, k), ("bias", bias, n)):
        if t is not None and (tuple(t.shape) != (size,) or not t.is_contiguous()):
            raise TaskDefinitionError(f"linear: {name} must be a contiguous [{size}] vector, got {tuple(t.shape)}")
    if zero is not None and (tuple(zero.shape) != (1, batch, n) or not zero.is_contiguous()):
        raise TaskDefinitionError(f"linear: zero must be a contiguous [1, B, {n}] = {(1, batch, n)} tensor, got "
                                  f"{tuple(zero.shape)}")
    for name, t, size in (("x_fixed", x_fixed, k), ("residual_fixed", residual_fixed, n)):
        if t is not None and (tuple(t.shape) != (1, batch, size) or t.dtype != torch.int64 or not t.is_contiguous()):
            raise TaskDefinitionError(f"linear: {name} must be a contiguous int64 [1, B, {size}] = "
                                      f"{(1, batch, size)} tensor (fixed point), got {tuple(t.shape)} {t.dtype}")
    if bias is not None and split > 1:
        raise TaskDefinitionError("linear: a bias with split-K output is not supported; use S = 1")
    b_pad = batch_pad(batch)
    if DOT_ROWS not in (16, 32, 64):
        raise TaskDefinitionError(f"linear: DOT_ROWS (the least rows of a batch's weight block) must be 16, 32 or "
                                  f"64, got {DOT_ROWS!r}")
    blocks = split_k_blocks(k, split, batch, BLOCK_N, BLOCK_K, DOT_ROWS)
    if blocks is None:
        raise TaskDefinitionError(f"linear: K={k} does not split into {split} chunks of whole column blocks; "
                                  "use fewer splits or a smaller BLOCK_K")
    BLOCK_K, chunk = blocks
    if MERGE and (BLOCK_K % head_dim or chunk % head_dim):
        raise TaskDefinitionError(f"linear: merging attention splits takes whole heads of {head_dim} columns a "
                                  f"block and a K chunk; got blocks of {BLOCK_K} in chunks of {chunk}")
    BLOCK_N = block_shape(batch, BLOCK_N, BLOCK_K, DOT_ROWS)[0]
    TILE_ROWS = BLOCK_N if TILE_ROWS is None else TILE_ROWS
    if not isinstance(TILE_ROWS, int) or TILE_ROWS < 1:
        raise TaskDefinitionError(f"linear: TILE_ROWS must be a positive int, got {TILE_ROWS!r}")
    if not isinstance(COPY_SPREAD, int) or isinstance(COPY_SPREAD, bool) or COPY_SPREAD < 0:
        raise TaskDefinitionError(f"linear: COPY_SPREAD (SM cycles) must be an int of at least 0, got {COPY_SPREAD!r}")
    row_tiles = cdiv(n, TILE_ROWS)
    t = tile_arange(row_tiles * split)
    r, c = t % row_tiles, t // row_tiles
    rows = (r * TILE_ROWS, TILE_ROWS)
    cols = (c * chunk, chunk)
    x_cols = ALL if norm_w is not None else cols  # RMSNorm needs the whole row
    if MERGE:  # the splits of the chunk's heads
        heads = ((0, 1), (c * chunk // head_dim, chunk // head_dim), ALL, ALL)
        reads = {"w": (rows, cols), "x": heads, "x2": heads}
    else:
        reads = {"w": (rows, cols), "x": _box(x, ALL, x_cols)}
    if x_fixed is not None:
        reads["x_fixed"] = ((0, 1), ALL, x_cols)
    if x2 is not None and not MERGE:
        reads["x2"] = _box(x2, ALL, cols)
    if norm_w is not None:
        reads["norm_w"] = (ALL,)
    if bias is not None:
        reads["bias"] = (rows,)
    if residual is not None:
        reads["residual"] = _box(residual, ALL, rows)
    if residual_fixed is not None:
        reads["residual_fixed"] = ((0, 1), ALL, rows)
    mode = "merge" if MERGE else "rmsnorm" if norm_w is not None else "silu_mul" if x2 is not None else "plain"
    formed = norm_w if mode == "rmsnorm" else x  # the tensor whose dtype the formed x is rounded to
    x_in_w_dtype = w.element_size() == 2 and formed.dtype == w.dtype and (mode != "plain" or parts == 1)
    constexprs = {"K": k, "BLOCK_N": BLOCK_N, "BLOCK_K": BLOCK_K, "B_PAD": b_pad, "ROW_TILES": row_tiles,
                  "TILE_ROWS": TILE_ROWS, "CHUNK": chunk, "X_PARTS": parts, "RES_PARTS": res_parts, "X_MODE": mode,
                  "EPS": float(eps) if norm_w is not None else 0.0,
                  "RMS_BLOCK": min(triton.next_power_of_2(k), _RMS_VALUES // b_pad) if norm_w is not None else 1,
                  "X_IN_W_DTYPE": x_in_w_dtype, "STAGE_BYTES": stage_bytes(w, batch, TILE_ROWS, chunk) if stage else 0,
                  "HEAD_DIM": head_dim, "COPY_SPREAD": COPY_SPREAD}
    constexprs.update({name: None for name, v in (("x_fixed", x_fixed), ("x2", x2), ("norm_w", norm_w), ("bias", bias),
                                                   ("residual", residual), ("residual_fixed", residual_fixed),
                                                   ("zero", zero)) if v is None})
    writes = {"y": _box(y, (c, 1), rows)}
    if zero is not None:  # the first K chunk's row tiles clear it
        writes["zero"] = _box(zero, (0, 1), (r * TILE_ROWS, (c == 0) * TILE_ROWS))
    tile_bytes = TILE_ROWS * chunk * w.element_size()
    return TilePlan(t.size, reads=reads, writes=writes,
                    scalars={"N": n, "B": batch}, constexprs=constexprs,
                    cost=0.5 + tile_bytes / _SM_BYTES_PER_US)


def _merge_plan(w, x, x2, y, **params):
    """``linear_plan`` of a GEMV whose input is attention splits (x: outputs, x2: maxima and sums), merged per head."""
    return linear_plan(w, x, y, x2=x2, MERGE=True, **params)


def _register(name, inputs, outputs=("y",), plan=linear_plan):
    return register_task(name, linear_tile, inputs=inputs, outputs=outputs, plan=plan,
                         prefetch=gemv_prefetch, reference=linear_reference)


gemv = _register("gemv", ("w", "x"))
rmsnorm_gemv = _register("rmsnorm_gemv", ("w", "x", "norm_w"))
rmsnorm_gemv_bias = _register("rmsnorm_gemv_bias", ("w", "x", "norm_w", "bias"))
gemv_bias = _register("gemv_bias", ("w", "x", "bias"))
gemv_residual = _register("gemv_residual", ("w", "x", "residual"))
# ... that also clears ``zero`` for an accumulating op after it (megagen.tasks.mlp)
gemv_residual_zero = _register("gemv_residual_zero", ("w", "x", "residual"), ("y", "zero"))
# readers of a residual stream whose last part is a fused MLP's fixed-point sum
rmsnorm_gemv_fixed = _register("rmsnorm_gemv_fixed", ("w", "x", "x_fixed", "norm_w"))
rmsnorm_gemv_bias_fixed = _register("rmsnorm_gemv_bias_fixed", ("w", "x", "x_fixed", "norm_w", "bias"))
gemv_residual_zero_fixed = _register("gemv_residual_zero_fixed", ("w", "x", "residual", "residual_fixed"),
                                     ("y", "zero"))
silu_mul_gemv = _register("silu_mul_gemv", ("w", "x", "x2"))
silu_mul_gemv_residual = _register("silu_mul_gemv_residual", ("w", "x", "x2", "residual"))
# the o projection of split attention (megagen.tasks.attention's split_attention): each tile merges the splits of the
# heads its K chunk covers, where a merge by the last split to finish costs the attention a round trip more
merge_gemv = _register("merge_gemv", ("w", "x", "x2"), plan=_merge_plan)
merge_gemv_residual = _register("merge_gemv_residual", ("w", "x", "x2", "residual"), plan=_merge_plan)
