"""Built-in GEMV: y = W[N, K] @ x, fp32 accumulation, optionally split along K into partial sums.

Tiles: ``rows = cdiv(N, BLOCK_N)`` row blocks times ``SPLIT_K`` column chunks, chunk-major
(every row block of chunk 0 first). With ``SPLIT_K = S`` the output is ``y[S, N]`` of
partial sums (fp32), and a consumer GEMV takes ``x[P, K]`` partials and adds them as it
loads them. A tile of chunk c then needs only the producer tiles that finished rows in
chunk c, so the next GEMV starts on early chunks while this one still runs, instead of
waiting for all of it; the reduction is deterministic and needs no zeroing.

Weights are written by no task (megagen refuses a graph where an earlier op writes a
prefetched tensor), so ``gemv_prefetch`` loads the first BLOCK_K columns of the tile's
weight block into registers before the tile waits for x. The main loop keeps two
weight blocks in flight. (Asking L2 to prefetch more of the weights, per line or in bulk,
for this task or the next, measured slower on an H200: see BENCHMARKS.md.)
"""
import triton
import triton.language as tl

from megagen.errors import TaskDefinitionError
from megagen.tasks.base import ALL, TilePlan, cdiv, register_task, tile_arange

# A rough per-SM share of HBM bandwidth (bytes per microsecond), for the schedule simulator's cost model.
_SM_BYTES_PER_US = 25_000


@triton.jit
def _weight_block(w, rows, k0, N, K: tl.constexpr, BLOCK_K: tl.constexpr):
    cols = k0 + tl.arange(0, BLOCK_K)
    mask = (rows[:, None] < N) & (cols[None, :] < K)
    return tl.load(w + rows[:, None] * K + cols[None, :], mask=mask, other=0.0, eviction_policy="evict_first")


@triton.jit
def _x_block(x, k0, K: tl.constexpr, BLOCK_K: tl.constexpr, X_PARTS: tl.constexpr):
    """x[k0:k0+BLOCK_K] in fp32, summing X_PARTS partial rows of x[X_PARTS, K]."""
    cols = k0 + tl.arange(0, BLOCK_K)
    xk = tl.zeros((BLOCK_K,), dtype=tl.float32)
    for p in tl.static_range(X_PARTS):
        xk += tl.load(x + p * K + cols, mask=cols < K, other=0.0).to(tl.float32)
    return xk


@triton.jit
def gemv_prefetch(w, tile, N, K: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  ROW_TILES: tl.constexpr, CHUNK: tl.constexpr):
    rows = (tile % ROW_TILES) * BLOCK_N + tl.arange(0, BLOCK_N)
    return _weight_block(w, rows, (tile // ROW_TILES) * CHUNK, N, K, BLOCK_K)


@triton.jit
def gemv_tile(w, x, y, tile, N, prefetched, K: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
              ROW_TILES: tl.constexpr, CHUNK: tl.constexpr, X_PARTS: tl.constexpr):
    chunk = tile // ROW_TILES
    rows = (tile % ROW_TILES) * BLOCK_N + tl.arange(0, BLOCK_N)
    k_begin = chunk * CHUNK
    acc = tl.zeros((BLOCK_N, BLOCK_K), dtype=tl.float32)
    wk = prefetched
    for j in range(1, CHUNK // BLOCK_K):
        w_next = _weight_block(w, rows, k_begin + j * BLOCK_K, N, K, BLOCK_K)
        acc += wk.to(tl.float32) * _x_block(x, k_begin + (j - 1) * BLOCK_K, K, BLOCK_K, X_PARTS)[None, :]
        wk = w_next
    acc += wk.to(tl.float32) * _x_block(x, k_begin + CHUNK - BLOCK_K, K, BLOCK_K, X_PARTS)[None, :]
    tl.store(y + chunk * N + rows, tl.sum(acc, axis=1).to(y.dtype.element_ty), mask=rows < N)


def _gemv_plan(w, x, y, BLOCK_N=32, BLOCK_K=512):
    if w.dim() != 2 or not w.is_contiguous():
        raise TaskDefinitionError(f"gemv: w must be a contiguous [N, K] matrix, got shape {tuple(w.shape)}")
    n, k = w.shape
    parts = 1 if x.dim() == 1 else x.shape[0]
    split = 1 if y.dim() == 1 else y.shape[0]
    if x.shape[-1] != k or x.dim() > 2 or not x.is_contiguous():
        raise TaskDefinitionError(f"gemv: w is [{n}, {k}], so x must be a contiguous [{k}] vector or [P, {k}] "
                                  f"partial sums; got {tuple(x.shape)}")
    if y.shape[-1] != n or y.dim() > 2 or not y.is_contiguous():
        raise TaskDefinitionError(f"gemv: w is [{n}, {k}], so y must be a contiguous [{n}] vector or [S, {n}] "
                                  f"for S-way split-K partial sums; got {tuple(y.shape)}")
    BLOCK_K = min(BLOCK_K, triton.next_power_of_2(cdiv(k, split)))
    chunk = cdiv(cdiv(k, split), BLOCK_K) * BLOCK_K
    if cdiv(k, chunk) != split:
        raise TaskDefinitionError(f"gemv: K={k} does not split into {split} chunks of whole {BLOCK_K}-column "
                                  "blocks; use fewer splits or a smaller BLOCK_K")
    row_tiles = cdiv(n, BLOCK_N)
    t = tile_arange(row_tiles * split)
    r, c = t % row_tiles, t // row_tiles
    rows = (r * BLOCK_N, BLOCK_N)
    cols = (c * chunk, chunk)
    tile_bytes = BLOCK_N * chunk * w.element_size()
    return TilePlan(t.size,
                    reads={"w": (rows, cols), "x": (cols,) if x.dim() == 1 else (ALL, cols)},
                    writes={"y": (rows,) if y.dim() == 1 else ((c, 1), rows)},
                    scalars={"N": n},
                    constexprs={"K": k, "BLOCK_N": BLOCK_N, "BLOCK_K": BLOCK_K, "ROW_TILES": row_tiles,
                                "CHUNK": chunk, "X_PARTS": parts},
                    cost=0.5 + tile_bytes / _SM_BYTES_PER_US)


gemv = register_task("gemv", gemv_tile, inputs=("w", "x"), outputs=("y",), plan=_gemv_plan,
                     prefetch=gemv_prefetch)
