"""RMSNorm of the residual stream as an op of its own: one tile per batch row.

The GEMVs can fuse the norm in (``linear.rmsnorm_gemv``), but then every tile reads the whole
row's split-K partial sums in fp32 for the RMS, and its own columns of them again. At batch 8
that is 4 parts x [8, K] fp32 a tile, more bytes from L2 than the tile's weights, so the tiles
had to be few and tall. After this op they read the normalised rows once, in the model dtype,
and can be as many as the CTAs. It costs one dependency phase, so decode graphs use it only
for a batch (``Tiling.norm_phase_min_batch``).
"""
import torch
import triton
import triton.language as tl

from megagen.errors import TaskDefinitionError
from megagen.tasks.base import ALL, TilePlan, register_task, tile_arange
from megagen.tasks.linear import _partial_sum, _parts, _round

# A row is held in registers whole: up to this many fp32 values (128 a thread at 4 warps).
MAX_K = 16384


@triton.jit
def rmsnorm_tile(x, norm_w, out, tile, B, K: tl.constexpr, BLOCK: tl.constexpr, PARTS: tl.constexpr,
                 EPS: tl.constexpr):
    """Batch row ``tile`` of x [PARTS, B, K]: its parts summed in order, rounded to the model dtype,
    scaled by 1 / RMS and by norm_w, rounded where HuggingFace's RMSNorm rounds (as ``linear``'s fused form)."""
    xs = _round(_partial_sum(x + tile * K, None, 0, B, K, BLOCK, 1, PARTS), norm_w)
    rstd = tl.rsqrt(tl.sum(xs * xs, axis=0) / K + EPS)
    cols = tl.arange(0, BLOCK)
    w = tl.load(norm_w + cols, mask=cols < K, other=0.0).to(tl.float32)
    y = _round(_round(xs * rstd, norm_w) * w, norm_w)
    tl.store(out + tile * K + cols, y.to(out.dtype.element_ty), mask=cols < K)


def rmsnorm_reference(x, norm_w, out, tile, B, K, PARTS, EPS):
    xs = _parts(x, PARTS, B)[tile].to(norm_w.dtype).float()
    rstd = torch.rsqrt((xs * xs).sum() / K + EPS)
    y = (xs * rstd).to(norm_w.dtype).float() * norm_w.float()
    out.view(B, K)[tile] = y.to(norm_w.dtype).to(out.dtype)


def rmsnorm_plan(x, norm_w, out, eps=1e-6):
    if x.dim() != 3 or not x.is_contiguous():
        raise TaskDefinitionError(f"rmsnorm: x must be a contiguous [PARTS, B, K] tensor (the residual stream's "
                                  f"partial sums), got {tuple(x.shape)}")
    parts, batch, k = x.shape
    if k > MAX_K:
        raise TaskDefinitionError(f"rmsnorm: rows of {k} values do not fit a tile's registers (at most {MAX_K}); "
                                  "use the fused form, linear.rmsnorm_gemv")
    if tuple(norm_w.shape) != (k,) or not norm_w.is_contiguous():
        raise TaskDefinitionError(f"rmsnorm: norm_w must be a contiguous [{k}] vector, got {tuple(norm_w.shape)}")
    if tuple(out.shape) != (1, batch, k) or out.dtype != norm_w.dtype or not out.is_contiguous():
        raise TaskDefinitionError(f"rmsnorm: out must be a contiguous [1, B, K] = {(1, batch, k)} tensor of "
                                  f"norm_w's dtype {norm_w.dtype}; got {tuple(out.shape)} {out.dtype}")
    t = tile_arange(batch)
    return TilePlan(batch, reads={"x": (ALL, (t, 1), ALL), "norm_w": (ALL,)}, writes={"out": (ALL, (t, 1), ALL)},
                    scalars={"B": batch},
                    constexprs={"K": k, "BLOCK": triton.next_power_of_2(k), "PARTS": parts, "EPS": float(eps)},
                    cost=1.0)


rmsnorm = register_task("rmsnorm", rmsnorm_tile, inputs=("x", "norm_w"), outputs=("out",), plan=rmsnorm_plan,
                        reference=rmsnorm_reference)
