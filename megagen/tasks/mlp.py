"""A dense layer's MLP as one phase: RMSNorm, gate and up, silu(gate) * up, and down, I intermediate rows a tile.

As two GEMV phases (gate/up, then down over the whole intermediate vector) the MLP costs a layer
one more dependency hop, one more wave of tiles starting their loads, and the stragglers of both
phases. Here a tile goes from its I gate and up rows straight to the I columns of the down
projection they multiply, and adds that [hidden] partial product to ``y`` with atomics
(``TilePlan.accumulate``): a split-K reduction over the intermediate dimension with no phase of
its own. ``y`` must hold zeros when the op runs: ``gemv_residual_zero`` (the o projection before
it) clears it, and the residual stream reads it as one more partial sum (the ``*_fixed`` GEMVs of
``megagen.tasks.linear``). Every product is rounded as HuggingFace rounds it. ``y`` is fixed point
(int64, ``FIXED_ONE`` units a 1.0; each tile's partial sums rounded toward zero to a multiple of
2^-32): integer sums do not depend on the order the tiles' atomics arrive in, where fp32 sums would
differ in their last bits from run to run and schedule to schedule. The sums must stay below 2^31
in magnitude, far above what a residual stream holds.

Batch 1 only: a batch multiplies its weight tiles on tensor cores as two GEMV phases
(``megagen.tasks.linear``). The down weights may be in any layout (their strides are constexprs),
so a transposed copy streams I whole rows instead of a 2·I-byte piece of every row.
"""
import torch
import triton
import triton.language as tl

from megagen.errors import TaskDefinitionError
from megagen.tasks.base import ALL, TilePlan, cdiv, register_task, tile_arange
from megagen.tasks.linear import (_RMS_VALUES, _SM_BYTES_PER_US, FIXED_ONE, _parts, _rms_inverse, _round, _round_to,
                                  _weight_block, _x_form, _x_load, to_fixed, to_fixed_reference)


@triton.jit
def mlp_prefetch(gate_w, up_w, tile, INTER, K: tl.constexpr, I: tl.constexpr, BLOCK_K: tl.constexpr):
    """The tile's first gate and up blocks, loaded before it waits for its input."""
    rows = tile * I + tl.arange(0, I)
    return _weight_block(gate_w, rows, INTER, 0, K, BLOCK_K), _weight_block(up_w, rows, INTER, 0, K, BLOCK_K)


@triton.jit
def _down_block(down_w, h0, cols, col_end, H: tl.constexpr, BLOCK_H: tl.constexpr, ROW_STRIDE: tl.constexpr,
                COL_STRIDE: tl.constexpr):
    """Down weights [h0, h0 + BLOCK_H) x ``cols`` as a [BLOCK_H, I] block (zero past H and col_end)."""
    h = h0 + tl.arange(0, BLOCK_H)
    mask = (h[:, None] < H) & (cols[None, :] < col_end)
    return tl.load(down_w + h[:, None] * ROW_STRIDE + cols[None, :] * COL_STRIDE, mask=mask, other=0.0,
                   eviction_policy="evict_first")


@triton.jit
def mlp_tile(gate_w, up_w, down_w, x, norm_w, y, tile, INTER, prefetched, K: tl.constexpr, H: tl.constexpr,
             I: tl.constexpr, BLOCK_K: tl.constexpr, BLOCK_H: tl.constexpr, X_PARTS: tl.constexpr,
             EPS: tl.constexpr, RMS_BLOCK: tl.constexpr, DOWN_ROW_STRIDE: tl.constexpr,
             DOWN_COL_STRIDE: tl.constexpr):
    """Gate and up rows [tile * I, tile * I + I) over K in BLOCK_K steps, then the down columns of the same
    indices in BLOCK_H-row steps, each step's partial sums added to y. Loads run one step ahead throughout,
    the first down block's during the last gate/up step."""
    rows = tile * I + tl.arange(0, I)
    rstd = _rms_inverse(x, None, norm_w, 1, EPS, K, RMS_BLOCK, 1, X_PARTS)
    g_blk, u_blk = prefetched
    # summed a step at a time: [I, BLOCK_K] accumulators as the GEMV keeps would crowd the registers of
    # every task (one kernel); a few shuffles a step cost less than spills
    acc_g = tl.zeros((I,), dtype=tl.float32)
    acc_u = tl.zeros((I,), dtype=tl.float32)
    xk, nw = _x_load(x, None, None, norm_w, 0, 1, K, BLOCK_K, 1, X_PARTS, "rmsnorm")
    for k0 in range(BLOCK_K, K, BLOCK_K):
        g_next = _weight_block(gate_w, rows, INTER, k0, K, BLOCK_K)
        u_next = _weight_block(up_w, rows, INTER, k0, K, BLOCK_K)
        x_next, nw_next = _x_load(x, None, None, norm_w, k0, 1, K, BLOCK_K, 1, X_PARTS, "rmsnorm")
        xf = _x_form(xk, nw, x, norm_w, rstd, 1, "rmsnorm")[None, :]
        acc_g += tl.sum(g_blk.to(tl.float32) * xf, axis=1)
        acc_u += tl.sum(u_blk.to(tl.float32) * xf, axis=1)
        g_blk, u_blk, xk, nw = g_next, u_next, x_next, nw_next
    d_blk = _down_block(down_w, 0, rows, INTER, H, BLOCK_H, DOWN_ROW_STRIDE, DOWN_COL_STRIDE)
    xf = _x_form(xk, nw, x, norm_w, rstd, 1, "rmsnorm")[None, :]
    acc_g += tl.sum(g_blk.to(tl.float32) * xf, axis=1)
    acc_u += tl.sum(u_blk.to(tl.float32) * xf, axis=1)
    # rounded where HuggingFace rounds: the projections' outputs, silu's, and the product
    gate = _round(acc_g, gate_w)
    act = _round(_round(gate * tl.sigmoid(gate), gate_w) * _round(acc_u, gate_w), gate_w)
    for h0 in range(0, H, BLOCK_H):
        d_next = _down_block(down_w, h0 + BLOCK_H, rows, INTER, H, BLOCK_H, DOWN_ROW_STRIDE, DOWN_COL_STRIDE)
        h = h0 + tl.arange(0, BLOCK_H)
        tl.atomic_add(y + h, to_fixed(tl.sum(d_blk.to(tl.float32) * act[None, :], axis=1)), mask=h < H,
                      sem="relaxed")
        d_blk = d_next


def mlp_reference(gate_w, up_w, down_w, x, norm_w, y, tile, I, K, X_PARTS, EPS):
    rows = slice(tile * I, (tile + 1) * I)
    xs = _round_to(_parts(x, X_PARTS, 1), norm_w.dtype)
    rstd = torch.rsqrt((xs * xs).sum(1, keepdim=True) / K + EPS)
    xn = _round_to(_round_to(xs * rstd, norm_w.dtype) * norm_w.float(), norm_w.dtype)
    gate = _round_to(xn @ gate_w[rows].float().T, gate_w.dtype)
    up = _round_to(xn @ up_w[rows].float().T, gate_w.dtype)
    act = _round_to(_round_to(gate * torch.sigmoid(gate), gate_w.dtype) * up, gate_w.dtype)
    y.view(1, -1).add_(to_fixed_reference(act @ down_w[:, rows].float().T))


def mlp_plan(gate_w, up_w, down_w, x, norm_w, y, eps=1e-6, I=16, BLOCK_K=256, BLOCK_H=512):
    if gate_w.dim() != 2 or gate_w.shape != up_w.shape or not (gate_w.is_contiguous() and up_w.is_contiguous()):
        raise TaskDefinitionError(f"rmsnorm_mlp: gate_w and up_w must be contiguous [I, K] matrices of one shape; got "
                                  f"{tuple(gate_w.shape)} and {tuple(up_w.shape)}")
    inter, k = gate_w.shape
    if down_w.dim() != 2 or down_w.shape[1] != inter or down_w.dtype != gate_w.dtype:
        raise TaskDefinitionError(f"rmsnorm_mlp: down_w must be an [H, {inter}] matrix of gate_w's dtype; got "
                                  f"{tuple(down_w.shape)} {down_w.dtype}")
    h = down_w.shape[0]
    if x.dim() != 3 or x.shape[1:] != (1, k) or not x.is_contiguous():
        raise TaskDefinitionError(f"rmsnorm_mlp: x must be contiguous [P, 1, {k}] partial sums (batch 1); got "
                                  f"{tuple(x.shape)}")
    if tuple(y.shape) != (1, 1, h) or y.dtype != torch.int64 or not y.is_contiguous():
        raise TaskDefinitionError(f"rmsnorm_mlp: y must be a contiguous int64 [1, 1, {h}] tensor (fixed point); got "
                                  f"{tuple(y.shape)} {y.dtype}")
    if tuple(norm_w.shape) != (k,) or not norm_w.is_contiguous():
        raise TaskDefinitionError(f"rmsnorm_mlp: norm_w must be a contiguous [{k}] vector, got {tuple(norm_w.shape)}")
    for name, v in (("I", I), ("BLOCK_K", BLOCK_K), ("BLOCK_H", BLOCK_H)):
        if not isinstance(v, int) or v < 16 or v & (v - 1):
            raise TaskDefinitionError(f"rmsnorm_mlp: {name} must be a power of two of at least 16, got {v!r}")
    t = tile_arange(cdiv(inter, I))
    rows = (t * I, I)
    reads = {"gate_w": (rows, ALL), "up_w": (rows, ALL), "down_w": (ALL, rows), "x": (ALL, ALL, ALL),
             "norm_w": (ALL,)}
    constexprs = {"K": k, "H": h, "I": I, "BLOCK_K": min(BLOCK_K, triton.next_power_of_2(k)),
                  "BLOCK_H": min(BLOCK_H, triton.next_power_of_2(h)), "X_PARTS": x.shape[0], "EPS": float(eps),
                  "RMS_BLOCK": min(triton.next_power_of_2(k), _RMS_VALUES),
                  "DOWN_ROW_STRIDE": down_w.stride(0), "DOWN_COL_STRIDE": down_w.stride(1)}
    tile_bytes = I * (2 * k + h) * gate_w.element_size()
    return TilePlan(t.size, reads=reads, writes={"y": (ALL, ALL, ALL)}, scalars={"INTER": inter},
                    constexprs=constexprs, cost=0.5 + tile_bytes / _SM_BYTES_PER_US, accumulate=("y",),
                    fixed_point={"y": FIXED_ONE.value})


rmsnorm_mlp = register_task("rmsnorm_mlp", mlp_tile, inputs=("gate_w", "up_w", "down_w", "x", "norm_w"),
                            outputs=("y",), plan=mlp_plan, prefetch=mlp_prefetch, reference=mlp_reference)
