"""Built-in decode attention: RoPE (with optional per-head RMSNorm) and KV-cache append, split-KV
attention partials, and their combine.

Layouts: projections arrive as ``[1, B, heads * D]`` (the GEMV output); ``q_rot`` is
``[B, H, D]``; each layer's cache is ``[B_max, KV, S_max, D]``; ``cos`` / ``sin`` are
``[S_max, D]`` tables (HuggingFace's rotary embedding evaluated at every position, so
every RoPE scaling type it implements statically comes for free); ``pos`` holds each batch
row's position on the device, so a decode step needs nothing from the host. A launch with a
position past the cache (the runner refuses to generate that far; a user replaying launches
might not) clamps it to the last slot: memory stays safe, the tokens are meaningless.

Attention splits each (batch row, KV head) into ``SPLITS`` tiles. The split boundaries
follow the live length: tile s covers positions [lo + s * chunk, lo + (s + 1) * chunk),
clipped to the length, with lo the start of the sliding window (0 without one) and
chunk = ceil((length - lo) / SPLITS), so the work spreads over all tiles at any context
(tiles past the live length, e.g. the last 15 of 32 at length 33, are empty: they write
max -inf, sum 0). A tile handles
all query heads of its KV group (GQA / MQA) and writes an unnormalised output with its
running max and sum; ``attention_combine`` merges the splits per head.
"""
import torch
import triton
import triton.language as tl

from megagen.errors import TaskDefinitionError
from megagen.tasks.base import ALL, TilePlan, cdiv, register_task, tile_arange


@triton.jit
def _rope_head(src, cos, sin, p, norm_w, EPS: tl.constexpr, D: tl.constexpr, HALF_PAD: tl.constexpr):
    """One head of D values at ``src``, RMS-normalised if norm_w is given, rotated by position p.

    Returns the two rotated halves in fp32; they are rounded to the model dtype once, when stored
    (HuggingFace rounds each product, so bf16 results may differ from it by an ulp)."""
    i = tl.arange(0, HALF_PAD)
    m = i < D // 2
    x1 = tl.load(src + i, mask=m, other=0.0).to(tl.float32)
    x2 = tl.load(src + D // 2 + i, mask=m, other=0.0).to(tl.float32)
    if norm_w is not None:
        rstd = tl.rsqrt((tl.sum(x1 * x1, axis=0) + tl.sum(x2 * x2, axis=0)) / D + EPS)
        dt = norm_w.dtype.element_ty
        w1 = tl.load(norm_w + i, mask=m, other=0.0).to(tl.float32)
        w2 = tl.load(norm_w + D // 2 + i, mask=m, other=0.0).to(tl.float32)
        x1 = ((x1 * rstd).to(dt).to(tl.float32) * w1).to(dt).to(tl.float32)
        x2 = ((x2 * rstd).to(dt).to(tl.float32) * w2).to(dt).to(tl.float32)
    c1 = tl.load(cos + p * D + i, mask=m, other=0.0).to(tl.float32)
    c2 = tl.load(cos + p * D + D // 2 + i, mask=m, other=0.0).to(tl.float32)
    s1 = tl.load(sin + p * D + i, mask=m, other=0.0).to(tl.float32)
    s2 = tl.load(sin + p * D + D // 2 + i, mask=m, other=0.0).to(tl.float32)
    return x1 * c1 - x2 * s1, x2 * c2 + x1 * s2


@triton.jit
def _store_head(dst, r1, r2, D: tl.constexpr, HALF_PAD: tl.constexpr):
    i = tl.arange(0, HALF_PAD)
    m = i < D // 2
    tl.store(dst + i, r1.to(dst.dtype.element_ty), mask=m)
    tl.store(dst + D // 2 + i, r2.to(dst.dtype.element_ty), mask=m)


@triton.jit
def rope_q_tile(q, cos, sin, pos, norm_w, q_rot, tile, B, H: tl.constexpr, D: tl.constexpr, S_MAX: tl.constexpr,
                HALF_PAD: tl.constexpr, EPS: tl.constexpr):
    b = tile // H
    h = tile % H
    p = tl.minimum(tl.load(pos + b), S_MAX - 1)  # a launch past the cache stays in bounds (see module doc)
    r1, r2 = _rope_head(q + (b * H + h) * D, cos, sin, p, norm_w, EPS, D, HALF_PAD)
    _store_head(q_rot + (b * H + h) * D, r1, r2, D, HALF_PAD)


@triton.jit
def rope_kv_append_tile(k, v, cos, sin, pos, norm_w, k_cache, v_cache, tile, B, KV: tl.constexpr,
                        D: tl.constexpr, S_MAX: tl.constexpr, HALF_PAD: tl.constexpr, EPS: tl.constexpr):
    b = tile // KV
    h = tile % KV
    p = tl.minimum(tl.load(pos + b), S_MAX - 1)  # a launch past the cache stays in bounds (see module doc)
    r1, r2 = _rope_head(k + (b * KV + h) * D, cos, sin, p, norm_w, EPS, D, HALF_PAD)
    slot = ((b * KV + h) * S_MAX + p) * D
    _store_head(k_cache + slot, r1, r2, D, HALF_PAD)
    d = tl.arange(0, 2 * HALF_PAD)
    tl.store(v_cache + slot + d, tl.load(v + (b * KV + h) * D + d, mask=d < D), mask=d < D)


def _rope_reference(x, cos, sin, p, norm_w, EPS):
    """``_rope_head`` on one head ``x`` [D] in plain PyTorch: fp32 result, rounded only by the caller's store."""
    x = x.float()
    if norm_w is not None:
        rstd = torch.rsqrt((x * x).sum() / x.numel() + EPS)
        x = ((x * rstd).to(norm_w.dtype).float() * norm_w.float()).to(norm_w.dtype).float()
    x1, x2 = x.chunk(2)
    c1, c2 = cos[p].float().chunk(2)
    s1, s2 = sin[p].float().chunk(2)
    return torch.cat([x1 * c1 - x2 * s1, x2 * c2 + x1 * s2])


def rope_q_reference(q, cos, sin, pos, norm_w, q_rot, tile, H, D, EPS):
    b, h = divmod(tile, H)
    q_rot[b, h] = _rope_reference(q[0, b, h * D:(h + 1) * D], cos, sin, pos[b], norm_w, EPS)


def rope_kv_append_reference(k, v, cos, sin, pos, norm_w, k_cache, v_cache, tile, KV, D, EPS):
    b, h = divmod(tile, KV)
    head, p = slice(h * D, (h + 1) * D), pos[b]
    k_cache[b, h, p] = _rope_reference(k[0, b, head], cos, sin, p, norm_w, EPS)
    v_cache[b, h, p] = v[0, b, head]


def _rope_common(name, x, cos, sin, pos, norm_w, heads):
    if x.dim() != 3 or x.shape[0] != 1 or x.shape[2] % heads or not x.is_contiguous():
        raise TaskDefinitionError(f"{name}: the projection must be a contiguous [1, B, heads * D] tensor; "
                                  f"got {tuple(x.shape)} for {heads} heads")
    d = x.shape[2] // heads
    if cos.shape != sin.shape or cos.dim() != 2 or cos.shape[1] != d or d % 2:
        raise TaskDefinitionError(f"{name}: cos and sin must be [S_max, {d}] tables (even head dim); "
                                  f"got {tuple(cos.shape)} and {tuple(sin.shape)}")
    batch = x.shape[1]
    if pos.dim() != 1 or pos.shape[0] < batch:
        raise TaskDefinitionError(f"{name}: pos must be a [B] vector of positions, got {tuple(pos.shape)}")
    if norm_w is not None and tuple(norm_w.shape) != (d,):
        raise TaskDefinitionError(f"{name}: norm_w must be [{d}], got {tuple(norm_w.shape)}")
    return batch, d


def _rope_reads(norm_w):
    reads = {"cos": (ALL, ALL), "sin": (ALL, ALL)}
    if norm_w is not None:
        reads["norm_w"] = (ALL,)
    return reads


def _rope_q_plan(q, cos, sin, pos, q_rot, norm_w=None, eps=1e-6):
    heads = q_rot.shape[1] if q_rot.dim() == 3 else 0
    batch, d = _rope_common("rope_q", q, cos, sin, pos, norm_w, max(heads, 1))
    if tuple(q_rot.shape) != (batch, heads, d) or not q_rot.is_contiguous():
        raise TaskDefinitionError(f"rope_q: q_rot must be a contiguous [B, H, D] = [{batch}, H, {d}] tensor; "
                                  f"got {tuple(q_rot.shape)}")
    t = tile_arange(batch * heads)
    b, h = t // heads, t % heads
    reads = _rope_reads(norm_w)
    reads.update(q=((0, 1), (b, 1), (h * d, d)), pos=((b, 1),))
    constexprs = {"H": heads, "D": d, "S_MAX": cos.shape[0], "HALF_PAD": triton.next_power_of_2(d // 2),
                  "EPS": float(eps)}
    if norm_w is None:
        constexprs["norm_w"] = None
    return TilePlan(t.size, reads=reads, writes={"q_rot": ((b, 1), (h, 1), ALL)}, scalars={"B": batch},
                    constexprs=constexprs, cost=0.5)


def _rope_kv_plan(k, v, cos, sin, pos, k_cache, v_cache, norm_w=None, eps=1e-6):
    if k_cache.dim() != 4 or k_cache.shape != v_cache.shape or not (k_cache.is_contiguous() and v_cache.is_contiguous()):
        raise TaskDefinitionError(f"rope_kv_append: caches must be contiguous [B_max, KV, S_max, D] tensors of one "
                                  f"shape; got {tuple(k_cache.shape)} and {tuple(v_cache.shape)}")
    _, heads, s_max, d_cache = k_cache.shape
    batch, d = _rope_common("rope_kv_append", k, cos, sin, pos, norm_w, heads)
    if v.shape != k.shape or d != d_cache or k_cache.shape[0] < batch or cos.shape[0] < s_max:
        raise TaskDefinitionError(f"rope_kv_append: k {tuple(k.shape)}, v {tuple(v.shape)}, caches "
                                  f"{tuple(k_cache.shape)} and tables {tuple(cos.shape)} do not agree")
    t = tile_arange(batch * heads)
    b, h = t // heads, t % heads
    reads = _rope_reads(norm_w)
    head = ((0, 1), (b, 1), (h * d, d))
    cache = ((b, 1), (h, 1), ALL, ALL)
    reads.update(k=head, v=head, pos=((b, 1),))
    constexprs = {"KV": heads, "D": d, "S_MAX": s_max, "HALF_PAD": triton.next_power_of_2(d // 2),
                  "EPS": float(eps)}
    if norm_w is None:
        constexprs["norm_w"] = None
    return TilePlan(t.size, reads=reads, writes={"k_cache": cache, "v_cache": cache}, scalars={"B": batch},
                    constexprs=constexprs, cost=0.5)


@triton.jit
def attention_partial_tile(q_rot, k_cache, v_cache, pos, o_part, ml_part, tile, B, scale, window,
                           KV: tl.constexpr, GROUP: tl.constexpr, G_PAD: tl.constexpr, D: tl.constexpr,
                           D_PAD: tl.constexpr, S_MAX: tl.constexpr, SPLITS: tl.constexpr,
                           BLOCK_S: tl.constexpr, PRECISION: tl.constexpr):
    s = tile % SPLITS
    h = (tile // SPLITS) % KV
    b = tile // (SPLITS * KV)
    length = tl.minimum(tl.load(pos + b) + 1, S_MAX)
    lo = length * 0
    if window > 0:
        lo = tl.maximum(length - window, 0)
    chunk = tl.cdiv(length - lo, SPLITS)
    start = lo + s * chunk
    end = tl.minimum(start + chunk, length)
    g = tl.arange(0, G_PAD)  # the group's query heads, padded to a tensor-core tile (rows past GROUP are zero)
    d = tl.arange(0, D_PAD)
    heads = h * GROUP + g
    qmask = (g[:, None] < GROUP) & (d[None, :] < D)
    q = tl.load(q_rot + (b * KV * GROUP + heads[:, None]) * D + d[None, :], mask=qmask, other=0.0)
    m_i = tl.full((G_PAD,), float("-inf"), dtype=tl.float32)
    l_i = tl.zeros((G_PAD,), dtype=tl.float32)
    acc = tl.zeros((G_PAD, D_PAD), dtype=tl.float32)
    base = (b * KV + h) * S_MAX
    for j0 in range(start, end, BLOCK_S):
        j = j0 + tl.arange(0, BLOCK_S)
        jm = j < end
        kvmask = jm[:, None] & (d[None, :] < D)
        kb = tl.load(k_cache + (base + j[:, None]) * D + d[None, :], mask=kvmask, other=0.0)
        vb = tl.load(v_cache + (base + j[:, None]) * D + d[None, :], mask=kvmask, other=0.0)
        scores = tl.dot(q, tl.trans(kb), input_precision=PRECISION) * scale
        scores = tl.where(jm[None, :], scores, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(scores, axis=1))
        p = tl.exp(scores - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        # probabilities in the cache dtype, as HuggingFace's eager attention multiplies them with V
        acc = acc * alpha[:, None] + tl.dot(p.to(vb.dtype), vb, input_precision=PRECISION)
        m_i = m_new
    row = (b * KV * GROUP + heads) * SPLITS + s
    tl.store(o_part + row[:, None] * D + d[None, :], acc, mask=qmask)
    tl.store(ml_part + row * 2, m_i, mask=g < GROUP)
    tl.store(ml_part + row * 2 + 1, l_i, mask=g < GROUP)


def attention_partial_reference(q_rot, k_cache, v_cache, pos, o_part, ml_part, tile, scale, window, KV, GROUP,
                                SPLITS):
    """The same split's softmax in closed form (max, then exponentials) instead of online over BLOCK_S blocks."""
    rest, s = divmod(tile, SPLITS)
    b, h = divmod(rest, KV)
    length = int(pos[b]) + 1
    lo = max(length - window, 0) if window > 0 else 0
    chunk = cdiv(length - lo, SPLITS)
    start = lo + s * chunk
    keys = slice(start, min(start + chunk, length))  # empty for a split past the end
    heads = slice(h * GROUP, (h + 1) * GROUP)
    scores = q_rot[b, heads].float() @ k_cache[b, h, keys].float().T * scale
    m = scores.amax(1) if scores.shape[1] else torch.full((GROUP,), float("-inf"), device=scores.device)
    p = torch.exp(scores - m[:, None])
    o_part[b, heads, s] = p.to(v_cache.dtype).float() @ v_cache[b, h, keys].float()
    ml_part[b, heads, s] = torch.stack([m, p.sum(1)], 1)


def _attention_plan(q_rot, k_cache, v_cache, pos, o_part, ml_part, scale, window=0, BLOCK_S=32):
    if q_rot.dim() != 3 or k_cache.dim() != 4 or k_cache.shape != v_cache.shape:
        raise TaskDefinitionError(f"attention_partial: q_rot must be [B, H, D] and the caches [B_max, KV, S_max, D]; "
                                  f"got {tuple(q_rot.shape)}, {tuple(k_cache.shape)}, {tuple(v_cache.shape)}")
    batch, heads, d = q_rot.shape
    _, kv, s_max, d_cache = k_cache.shape
    if d_cache != d or heads % kv or k_cache.shape[0] < batch:
        raise TaskDefinitionError(f"attention_partial: {heads} query heads of dim {d} do not fit caches of shape "
                                  f"{tuple(k_cache.shape)} (need KV dividing H, same D, B_max >= B)")
    if o_part.dim() != 4 or tuple(o_part.shape[:2]) != (batch, heads) or o_part.shape[3] != d:
        raise TaskDefinitionError(f"attention_partial: o_part must be [B, H, SPLITS, D]; got {tuple(o_part.shape)}")
    splits = o_part.shape[2]
    if tuple(ml_part.shape) != (batch, heads, splits, 2):
        raise TaskDefinitionError(f"attention_partial: ml_part must be [B, H, SPLITS, 2] = "
                                  f"{(batch, heads, splits, 2)}; got {tuple(ml_part.shape)}")
    group = heads // kv
    t = tile_arange(batch * kv * splits)
    s, h, b = t % splits, (t // splits) % kv, t // (splits * kv)
    qh = ((b, 1), (h * group, group), ALL)
    part = ((b, 1), (h * group, group), (s, 1), ALL)
    cache = ((b, 1), (h, 1), ALL, ALL)
    return TilePlan(t.size, reads={"q_rot": qh, "k_cache": cache, "v_cache": cache, "pos": ((b, 1),)},
                    writes={"o_part": part, "ml_part": part},
                    scalars={"B": batch, "scale": float(scale), "window": int(window or 0)},
                    constexprs={"KV": kv, "GROUP": group, "G_PAD": max(16, triton.next_power_of_2(group)), "D": d,
                                "D_PAD": max(16, triton.next_power_of_2(d)), "S_MAX": s_max, "SPLITS": splits,
                                "BLOCK_S": max(16, BLOCK_S),
                                # tl.dot rounds fp32 inputs to tf32 unless told otherwise
                                "PRECISION": "ieee" if q_rot.dtype == torch.float32 else None},
                    cost=1.0)


@triton.jit
def attention_combine_tile(o_part, ml_part, out, tile, B, H: tl.constexpr, D: tl.constexpr, D_PAD: tl.constexpr,
                           SPLITS: tl.constexpr, S_PAD: tl.constexpr):
    s = tl.arange(0, S_PAD)
    d = tl.arange(0, D_PAD)
    row = tile * SPLITS + s
    m = tl.load(ml_part + row * 2, mask=s < SPLITS, other=float("-inf"))
    l_s = tl.load(ml_part + row * 2 + 1, mask=s < SPLITS, other=0.0)
    weight = tl.exp(m - tl.max(m, axis=0))
    weight = tl.where(s < SPLITS, weight, 0.0)
    o = tl.load(o_part + row[:, None] * D + d[None, :], mask=(s[:, None] < SPLITS) & (d[None, :] < D), other=0.0)
    res = tl.sum(o * weight[:, None], axis=0) / tl.sum(l_s * weight, axis=0)
    tl.store(out + tile * D + d, res.to(out.dtype.element_ty), mask=d < D)


def attention_combine_reference(o_part, ml_part, out, tile, H, D):
    b, h = divmod(tile, H)
    m, l_s = ml_part[b, h].float().unbind(1)
    weight = torch.exp(m - m.max())
    out[0, b, h * D:(h + 1) * D] = (o_part[b, h].float() * weight[:, None]).sum(0) / (l_s * weight).sum()


def _combine_plan(o_part, ml_part, out):
    batch, heads, splits, d = o_part.shape
    if out.dim() != 3 or tuple(out.shape) != (1, batch, heads * d) or not out.is_contiguous():
        raise TaskDefinitionError(f"attention_combine: out must be a contiguous [1, B, H * D] = "
                                  f"{(1, batch, heads * d)} tensor; got {tuple(out.shape)}")
    t = tile_arange(batch * heads)
    b, h = t // heads, t % heads
    part = ((b, 1), (h, 1), ALL, ALL)
    return TilePlan(t.size, reads={"o_part": part, "ml_part": part}, writes={"out": ((0, 1), (b, 1), (h * d, d))},
                    scalars={"B": batch},
                    constexprs={"H": heads, "D": d, "D_PAD": triton.next_power_of_2(d), "SPLITS": splits,
                                "S_PAD": triton.next_power_of_2(splits)},
                    cost=0.5)


rope_q = register_task("rope_q", rope_q_tile, inputs=("q", "cos", "sin", "pos"), outputs=("q_rot",),
                       plan=_rope_q_plan, reference=rope_q_reference)
rmsnorm_rope_q = register_task("rmsnorm_rope_q", rope_q_tile, inputs=("q", "cos", "sin", "pos", "norm_w"),
                               outputs=("q_rot",), plan=_rope_q_plan, reference=rope_q_reference)
rope_kv_append = register_task("rope_kv_append", rope_kv_append_tile, inputs=("k", "v", "cos", "sin", "pos"),
                               outputs=("k_cache", "v_cache"), plan=_rope_kv_plan,
                               reference=rope_kv_append_reference)
rmsnorm_rope_kv_append = register_task("rmsnorm_rope_kv_append", rope_kv_append_tile,
                                       inputs=("k", "v", "cos", "sin", "pos", "norm_w"),
                                       outputs=("k_cache", "v_cache"), plan=_rope_kv_plan,
                                       reference=rope_kv_append_reference)
attention_partial = register_task("attention_partial", attention_partial_tile,
                                  inputs=("q_rot", "k_cache", "v_cache", "pos"), outputs=("o_part", "ml_part"),
                                  plan=_attention_plan, reference=attention_partial_reference)
attention_combine = register_task("attention_combine", attention_combine_tile, inputs=("o_part", "ml_part"),
                                  outputs=("out",), plan=_combine_plan, reference=attention_combine_reference)
