"""Built-in GEMV: y[N] = W[N, K] @ x[K], fp32 accumulation, one tile per BLOCK_N output rows.

Before the tile waits for x, ``gemv_prefetch`` (weights depend on no task) loads the
first BLOCK_K columns of the tile's weight rows into registers, so weight traffic
starts while the producer of x finishes. The main loop keeps two weight blocks in
flight (the next block is loaded before the current one is used).
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
def gemv_prefetch(w, tile, N, K: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    return _weight_block(w, tile * BLOCK_N + tl.arange(0, BLOCK_N), 0, N, K, BLOCK_K)


@triton.jit
def gemv_tile(w, x, y, tile, N, prefetched, K: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rows = tile * BLOCK_N + tl.arange(0, BLOCK_N)
    cols = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_N, BLOCK_K), dtype=tl.float32)
    wk = prefetched
    for k0 in range(BLOCK_K, K, BLOCK_K):
        w_next = _weight_block(w, rows, k0, N, K, BLOCK_K)
        c = k0 - BLOCK_K + cols
        acc += wk.to(tl.float32) * tl.load(x + c, mask=c < K, other=0.0).to(tl.float32)[None, :]
        wk = w_next
    c = (K - 1) // BLOCK_K * BLOCK_K + cols
    acc += wk.to(tl.float32) * tl.load(x + c, mask=c < K, other=0.0).to(tl.float32)[None, :]
    tl.store(y + rows, tl.sum(acc, axis=1).to(y.dtype.element_ty), mask=rows < N)


def _gemv_plan(w, x, y, BLOCK_N=32, BLOCK_K=512):
    if w.dim() != 2 or not w.is_contiguous():
        raise TaskDefinitionError(f"gemv: w must be a contiguous [N, K] matrix, got shape {tuple(w.shape)}")
    n, k = w.shape
    if tuple(x.shape) != (k,) or tuple(y.shape) != (n,) or x.stride(0) != 1 or y.stride(0) != 1:
        raise TaskDefinitionError(f"gemv: w is [{n}, {k}], so x must be [{k}] and y [{n}] (unit stride); "
                                  f"got x {tuple(x.shape)}, y {tuple(y.shape)}")
    t = tile_arange(cdiv(n, BLOCK_N))
    rows = (t * BLOCK_N, BLOCK_N)
    tile_bytes = BLOCK_N * k * w.element_size()
    return TilePlan(t.size, reads={"w": (rows, ALL), "x": (ALL,)}, writes={"y": (rows,)},
                    scalars={"N": n}, constexprs={"K": k, "BLOCK_N": BLOCK_N, "BLOCK_K": BLOCK_K},
                    cost=0.5 + tile_bytes / _SM_BYTES_PER_US)


gemv = register_task("gemv", gemv_tile, inputs=("w", "x"), outputs=("y",), plan=_gemv_plan,
                     prefetch=gemv_prefetch)
