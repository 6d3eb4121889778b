"""Built-in decode attention, one phase per layer: split-KV attention, the last split of each KV head to finish
merging the splits.

Layouts: projections arrive as ``[1, B, heads * D]`` (the GEMV output); each layer's cache is
``[B_max, KV, S_max, D]``; ``cos`` / ``sin`` are ``[S_max, D]`` tables (HuggingFace's rotary
embedding evaluated at every position, so every RoPE scaling type it implements statically
comes for free); ``pos`` holds each batch row's position p on the device, so a decode step
needs nothing from the host. A launch with a position past the cache (the runner refuses to
generate that far; a user replaying launches might not) clamps it to the last slot: memory
stays safe, the tokens are meaningless.

Attention splits each (batch row, KV head) into ``SPLITS`` tiles. The cached keys [lo, p)
(lo: the start of the sliding window, 0 without one) are cut into chunks of
ceil((p - lo) / SPLITS), so the work spreads over all tiles at any context (tiles past the
end, e.g. the last 15 of 32 with 33 cached keys, are empty: they write max -inf, sum 0), and
the last tile also takes the new token's key at p. A tile handles all query heads of its KV
group (GQA / MQA): it applies RoPE to them itself (after Qwen3's per-head RMSNorm), and the
last tile rotates the new key from the k projection in registers, so no RoPE phase stands
between the projections and attention; it also caches the new key and value at slot p, which
no split reads. Each tile writes an unnormalised output with its running max and sum, then
takes a ticket (``megagen.scoreboard.device.take_ticket``): the group's last tile to take one
merges every split into the group's heads of ``out``. A combine phase of its own, which this
replaced, cost a dependency hop more: Qwen3-0.6B 0.8020 -> 0.7845 ms a step on an H100
(BENCHMARKS.md, 2026-11-27). ``split_attention`` is the splits alone, for an o projection that
merges them itself (``megagen.tasks.linear.merge_gemv_residual``), which saves the ticket's round
trip and the merge's: the decode does so at batch 1 where the o projection stages its weights.
"""
import torch
import triton
import triton.language as tl

from megagen.errors import TaskDefinitionError
from megagen.profiler_device import mark
from megagen.scoreboard.device import take_ticket
from megagen.tasks.base import ALL, TilePlan, cdiv, register_task, tile_arange


@triton.jit
def _projection(src, offs, mask, part_stride, like, PARTS: tl.constexpr):
    """A projection's values at ``src + offs`` in fp32: one part as stored, or PARTS split-K partial sums
    ``part_stride`` apart, summed in order and rounded to the element type of pointer ``like`` (the model
    dtype, which HuggingFace's projection outputs have)."""
    x = tl.load(src + offs, mask=mask, other=0.0).to(tl.float32)
    if PARTS > 1:
        for i in tl.static_range(1, PARTS):
            x += tl.load(src + i * part_stride + offs, mask=mask, other=0.0)
        x = x.to(like.dtype.element_ty).to(tl.float32)
    return x


@triton.jit
def _swap_halves(x, D: tl.constexpr):
    """[rows, D] with each row's two halves swapped: every element's rotate_half partner."""
    R: tl.constexpr = x.shape[0]
    lo, hi = tl.split(tl.permute(tl.reshape(x, (R, 2, D // 2)), (0, 2, 1)))
    return tl.reshape(tl.permute(tl.join(hi, lo), (0, 2, 1)), (R, D))


@triton.jit
def _head_rows(src, rows, row_mask, cos, sin, p, norm_w, part_stride, like, D: tl.constexpr, D_PAD: tl.constexpr,
               PARTS: tl.constexpr):
    """What rotating heads of D values at ``src + rows * D`` (``_projection``) at position p takes, as
    [rows, D_PAD] tiles of one layout: the heads in fp32; each element's rotate_half partner half a head away,
    loaded a second time (with partial sums, the heads themselves: ``_rope_rows`` swaps their halves in
    registers); the cos and sin rows at p; the per-head norm's weights of each element and of its partner (the
    cos row where the model has no such norm: unused). Rows outside ``row_mask`` are zero.

    Only loads, each table in its heads' shape, so that no math (a reduction's barrier, a layout conversion
    through shared memory) comes between them: such math waits for the loads issued before it, and every load
    after it pays a round trip of its own. A tile issues all of its loads first, for one round trip in all."""
    d = tl.arange(0, D_PAD)
    partner = tl.where(d < D // 2, d + D // 2, d - D // 2)
    m = row_mask[:, None] & (d < D)[None, :]
    x = _projection(src, rows[:, None] * D + d[None, :], m, part_stride, like, PARTS)
    if PARTS > 1 and D == D_PAD:
        xp = x
    else:
        xp = _projection(src, rows[:, None] * D + partner[None, :], m, part_stride, like, PARTS)
    if PARTS == 1:
        at = rows[:, None] * 0 + d[None, :]  # every row reads the same table row
        at_partner = rows[:, None] * 0 + partner[None, :]
        tm = m
    else:
        # [1, D_PAD] rows, broadcast: with split-K partial sums the heads' loads are many, and tables in their
        # shape took a batch-8 Llama-3.2-1B layer's MegaKernel from 172 to 268 bytes of spills (ptxas, sm_90a)
        # and its step 3.9% slower on an H100 (BENCHMARKS.md)
        at, at_partner, tm = d[None, :], partner[None, :], (d < D)[None, :]
    c = tl.load(cos + p * D + at, mask=tm, other=0.0)
    s = tl.load(sin + p * D + at, mask=tm, other=0.0)
    if norm_w is None:
        w, wp = c, c
    else:
        w = tl.load(norm_w + at, mask=tm, other=0.0)
        wp = tl.load(norm_w + at_partner, mask=tm, other=0.0)
    return x, xp, c, s, w, wp


@triton.jit
def _rope_rows(heads, norm_w, EPS: tl.constexpr, D: tl.constexpr, D_PAD: tl.constexpr, PARTS: tl.constexpr):
    """Heads (``_head_rows``) RMS-normalised if norm_w is given, then rotated: fp32 [rows, D_PAD]. The caller
    rounds the result to the model dtype once (HuggingFace rounds each product, so bf16 results may differ from
    it by an ulp)."""
    x, xp, c, s, w, wp = heads
    if PARTS > 1 and D == D_PAD:
        # the partners from x's registers: loading and rounding every part a second time took a batch-8 Llama-3.2-1B
        # layer's MegaKernel from 300 to 708 bytes of spills (ptxas, sm_90a), this 292; one part loads its partners,
        # which spilled less at batch 1 (Qwen3-0.6B 136 bytes, against 188 swapped)
        xp = _swap_halves(x, D)
    if norm_w is not None:
        rstd = tl.rsqrt(tl.sum(x * x, axis=1) / D + EPS)[:, None]
        dt = norm_w.dtype.element_ty
        x = ((x * rstd).to(dt).to(tl.float32) * w.to(tl.float32)).to(dt).to(tl.float32)
        xp = ((xp * rstd).to(dt).to(tl.float32) * wp.to(tl.float32)).to(dt).to(tl.float32)
    d = tl.arange(0, D_PAD)
    sign = tl.where(d < D // 2, -1.0, 1.0)[None, :]
    return x * c.to(tl.float32) + sign * xp * s.to(tl.float32)


@triton.jit
def _kv_block(k_cache, v_cache, base, j0, end, d, D: tl.constexpr, BLOCK_S: tl.constexpr):
    """Cached keys and values at positions [j0, j0 + BLOCK_S) of the head at row ``base``, zero from ``end`` on."""
    j = j0 + tl.arange(0, BLOCK_S)
    m = (j[:, None] < end) & (d[None, :] < D)
    offs = (base + j[:, None]) * D + d[None, :]
    return tl.load(k_cache + offs, mask=m, other=0.0), tl.load(v_cache + offs, mask=m, other=0.0)


def _rope_reference(x, cos, sin, p, norm_w, EPS):
    """``_rope_rows`` on one head ``x`` [D] in plain PyTorch: fp32 result, rounded only by the caller."""
    x = x.float()
    if norm_w is not None:
        rstd = torch.rsqrt((x * x).sum() / x.numel() + EPS)
        x = ((x * rstd).to(norm_w.dtype).float() * norm_w.float()).to(norm_w.dtype).float()
    x1, x2 = x.chunk(2)
    c1, c2 = cos[p].float().chunk(2)
    s1, s2 = sin[p].float().chunk(2)
    return torch.cat([x1 * c1 - x2 * s1, x2 * c2 + x1 * s2])


def _projection_reference(x, b, cols, like):
    """``_projection`` of batch row b's columns ``cols`` of a [PARTS, B, N] projection, in plain PyTorch."""
    parts = x[:, b, cols].float().unbind(0)
    return sum(parts[1:], parts[0]).to(like.dtype).float() if len(parts) > 1 else parts[0].float()


def _clamped_pos(pos, b, s_max):
    return min(int(pos[b]), s_max - 1)


def _check_rope_inputs(name, cos, sin, pos, batch, d, norms):
    """The RoPE tables, positions and per-head norm weights a task reads, against its batch and head dim."""
    if cos.shape != sin.shape or cos.dim() != 2 or cos.shape[1] != d or d % 2:
        raise TaskDefinitionError(f"{name}: cos and sin must be [S_max, {d}] tables (even head dim); "
                                  f"got {tuple(cos.shape)} and {tuple(sin.shape)}")
    if pos.dim() != 1 or pos.shape[0] < batch:
        raise TaskDefinitionError(f"{name}: pos must be a [B] vector of positions, got {tuple(pos.shape)}")
    for norm, w in norms.items():
        if w is not None and tuple(w.shape) != (d,):
            raise TaskDefinitionError(f"{name}: {norm} must be [{d}], got {tuple(w.shape)}")


def _check_projection(name, tensor, x, batch, heads, d, parts, dtype):
    """A projection as the attention reads it: [1, B, heads * D] in the cache dtype, or [PARTS, B, heads * D]
    fp32 split-K partial sums."""
    if x.dim() != 3 or tuple(x.shape) != (parts, batch, heads * d) or not x.is_contiguous():
        raise TaskDefinitionError(f"{name}: {tensor} must be a contiguous [PARTS, B, heads * D] = "
                                  f"{(parts, batch, heads * d)} tensor (PARTS as q's); got {tuple(x.shape)}")
    if x.dtype != (dtype if parts == 1 else torch.float32):
        raise TaskDefinitionError(f"{name}: {tensor} must hold the cache dtype {dtype} (one part) or fp32 (split-K "
                                  f"partial sums); got {parts} part(s) of {x.dtype}")


@triton.jit
def _split_range(p, s, window, SPLITS: tl.constexpr):
    """[start, end): split s's share of the cached keys when the new token goes to slot p."""
    lo = p * 0
    if window > 0:
        lo = tl.maximum(p + 1 - window, 0)
    chunk = tl.cdiv(p - lo, SPLITS)
    start = lo + s * chunk
    return start, tl.minimum(start + chunk, p)


@triton.jit
def attention_prefetch(pos, k_cache, v_cache, tile, window, KV: tl.constexpr, D: tl.constexpr,
                               D_PAD: tl.constexpr, S_MAX: tl.constexpr, SPLITS: tl.constexpr,
                               BLOCK_S: tl.constexpr):
    """Before the tile waits: the position and the first block of cached keys and values (written by earlier
    launches; this launch writes only slot p, which no split reads)."""
    s = tile % SPLITS
    h = (tile // SPLITS) % KV
    b = tile // (SPLITS * KV)
    p = tl.minimum(tl.load(pos + b), S_MAX - 1)  # a launch past the cache stays in bounds (see module doc)
    start, end = _split_range(p, s, window, SPLITS)
    kb, vb = _kv_block(k_cache, v_cache, (b * KV + h) * S_MAX, start, end, tl.arange(0, D_PAD), D, BLOCK_S)
    return p, kb, vb


@triton.jit
def _split(q, k, v, cos, sin, q_norm_w, k_norm_w, k_cache, v_cache, o_part, ml_part, tile, B, scale, window,
           prefetched, marks, KV: tl.constexpr, GROUP: tl.constexpr, G_PAD: tl.constexpr, D: tl.constexpr,
           D_PAD: tl.constexpr, S_MAX: tl.constexpr, SPLITS: tl.constexpr, BLOCK_S: tl.constexpr,
           PRECISION: tl.constexpr, Q_EPS: tl.constexpr, K_EPS: tl.constexpr, PARTS: tl.constexpr):
    """One split's share of the keys: its unnormalised output, max and sum into o_part and ml_part; the last
    split also caches the new key and value at slot p, which no split reads (they read [lo, p))."""
    s = tile % SPLITS
    h = (tile // SPLITS) % KV
    b = tile // (SPLITS * KV)
    p, kb, vb = prefetched
    start, end = _split_range(p, s, window, SPLITS)
    g = tl.arange(0, G_PAD)  # the group's query heads, padded to a tensor-core tile (rows past GROUP are zero)
    d = tl.arange(0, D_PAD)
    heads = h * GROUP + g
    base = (b * KV + h) * S_MAX
    # Every load is issued before the math that waits on it, so they cost one round trip in all, not one after
    # another: the prefetch loaded the first block of cached keys and values, here the new key and value (last
    # split only, masked elsewhere) and the queries with their tables, and the loop loads one block ahead (the
    # next block's loads issued before the math on the one it holds measured slower).
    last = s == SPLITS - 1
    one = tl.arange(0, 1)
    kh = _head_rows(k + (b * KV + h) * D, one, (one < 1) & last, cos, sin, p, k_norm_w, B * KV * D, k_cache, D, D_PAD,
                    PARTS)
    # the cache holds the model dtype, which the projections' split-K partial sums (PARTS > 1) are rounded to
    vn = _projection(v, (b * KV + h) * D + d[None, :], last & (d[None, :] < D), B * KV * D, v_cache, PARTS)
    qh = _head_rows(q + b * KV * GROUP * D, heads, g < GROUP, cos, sin, p, q_norm_w, B * KV * GROUP * D, k_cache, D,
                    D_PAD, PARTS)
    kn = _rope_rows(kh, k_norm_w, K_EPS, D, D_PAD, PARTS).to(k_cache.dtype.element_ty)
    vn = vn.to(v_cache.dtype.element_ty)
    # the rotated queries in the model dtype, as HuggingFace multiplies them with the keys
    qr = _rope_rows(qh, q_norm_w, Q_EPS, D, D_PAD, PARTS).to(k_cache.dtype.element_ty)
    mark(marks, 0, tl.sum(tl.sum(qr.to(tl.float32), axis=1), axis=0))  # the queries are normalised and rotated
    m_i = tl.full((G_PAD,), float("-inf"), dtype=tl.float32)
    l_i = tl.zeros((G_PAD,), dtype=tl.float32)
    acc = tl.zeros((G_PAD, D_PAD), dtype=tl.float32)
    for j0 in range(start, end, BLOCK_S):
        jm = j0 + tl.arange(0, BLOCK_S) < end
        scores = tl.dot(qr, tl.trans(kb), input_precision=PRECISION) * scale
        scores = tl.where(jm[None, :], scores, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(scores, axis=1))
        prob = tl.exp(scores - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(prob, axis=1)
        # probabilities in the cache dtype, as HuggingFace's eager attention multiplies them with V
        acc = acc * alpha[:, None] + tl.dot(prob.to(vb.dtype), vb, input_precision=PRECISION)
        m_i = m_new
        kb, vb = _kv_block(k_cache, v_cache, base, j0 + BLOCK_S, end, d, D, BLOCK_S)
    if last:  # the new token's key and value, from the projections
        score = tl.sum(qr.to(tl.float32) * kn.to(tl.float32), axis=1) * scale
        m_new = tl.maximum(m_i, score)
        prob = tl.exp(score - m_new)
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + prob
        acc = acc * alpha[:, None] + prob.to(vn.dtype).to(tl.float32)[:, None] * vn.to(tl.float32)
        m_i = m_new
    mark(marks, 1, l_i)  # the softmax over the split's keys (and the new one) is done
    row = (b * KV * GROUP + heads) * SPLITS + s
    qmask = (g[:, None] < GROUP) & (d[None, :] < D)
    tl.store(o_part + row[:, None] * D + d[None, :], acc, mask=qmask)
    tl.store(ml_part + row * 2, m_i, mask=g < GROUP)
    tl.store(ml_part + row * 2 + 1, l_i, mask=g < GROUP)
    slot = (base + p) * D + d[None, :]
    tl.store(k_cache + slot, kn, mask=last & (d[None, :] < D))
    tl.store(v_cache + slot, vn, mask=last & (d[None, :] < D))
    mark(marks, 2, tile)  # the stores are issued; the release follows


def _split_reference(q, k, v, cos, sin, pos, q_norm_w, k_norm_w, k_cache, v_cache, o_part, ml_part, tile, scale,
                     window, KV, GROUP, D, SPLITS, Q_EPS, K_EPS):
    """``_split`` with the softmax in closed form (max, then exponentials) instead of online over BLOCK_S blocks."""
    rest, s = divmod(tile, SPLITS)
    b, h = divmod(rest, KV)
    p = _clamped_pos(pos, b, k_cache.shape[2])
    lo = max(p + 1 - window, 0) if window > 0 else 0
    chunk = cdiv(p - lo, SPLITS)
    start = lo + s * chunk
    cached = slice(start, min(start + chunk, p))  # empty for a split past the end
    heads = range(h * GROUP, (h + 1) * GROUP)
    qr = torch.stack([_rope_reference(_projection_reference(q, b, slice(i * D, (i + 1) * D), k_cache), cos, sin, p,
                                      q_norm_w, Q_EPS) for i in heads])
    keys, values = k_cache[b, h, cached].float(), v_cache[b, h, cached].float()
    if s == SPLITS - 1:
        head = slice(h * D, (h + 1) * D)
        k_cache[b, h, p] = _rope_reference(_projection_reference(k, b, head, k_cache), cos, sin, p, k_norm_w, K_EPS)
        v_cache[b, h, p] = _projection_reference(v, b, head, v_cache)
        keys, values = torch.cat([keys, k_cache[b, h, p:p + 1].float()]), torch.cat([values, v_cache[b, h, p:p + 1].float()])
    scores = qr.to(k_cache.dtype).float() @ keys.T * scale
    m = scores.amax(1) if scores.shape[1] else torch.full((GROUP,), float("-inf"), device=scores.device)
    prob = torch.exp(scores - m[:, None])
    o_part[b, heads, s] = prob.to(v_cache.dtype).float() @ values
    ml_part[b, heads, s] = torch.stack([m, prob.sum(1)], 1)


def _attention_plan(q, k, v, cos, sin, pos, k_cache, v_cache, o_part, ml_part, scale, out=None, q_norm_w=None,
                    k_norm_w=None, q_eps=1e-6, k_eps=1e-6, window=0, BLOCK_S=32):
    """The splits, and with ``out`` their merge by the last split of each (row, KV head) to finish."""
    if k_cache.dim() != 4 or k_cache.shape != v_cache.shape or not (k_cache.is_contiguous() and v_cache.is_contiguous()):
        raise TaskDefinitionError(f"attention: caches must be contiguous [B_max, KV, S_max, D] tensors of one "
                                  f"shape; got {tuple(k_cache.shape)} and {tuple(v_cache.shape)}")
    _, kv, s_max, d = k_cache.shape
    if o_part.dim() != 4 or o_part.shape[3] != d:
        raise TaskDefinitionError(f"attention: o_part must be [B, H, SPLITS, {d}]; got {tuple(o_part.shape)}")
    batch, heads, splits, _ = o_part.shape
    if heads % kv or k_cache.shape[0] < batch or cos.shape[0] < s_max:
        raise TaskDefinitionError(f"attention: {heads} query heads of dim {d} do not fit caches of shape "
                                  f"{tuple(k_cache.shape)} and tables of {cos.shape[0]} positions (need KV dividing H, "
                                  "B_max >= B, a table row for every cache slot)")
    if tuple(ml_part.shape) != (batch, heads, splits, 2):
        raise TaskDefinitionError(f"attention: ml_part must be [B, H, SPLITS, 2] = "
                                  f"{(batch, heads, splits, 2)}; got {tuple(ml_part.shape)}")
    if out is not None and (tuple(out.shape) != (1, batch, heads * d) or not out.is_contiguous()):
        raise TaskDefinitionError(f"attention: out must be a contiguous [1, B, H * D] = {(1, batch, heads * d)} tensor; "
                                  f"got {tuple(out.shape)}")
    parts = q.shape[0] if q.dim() == 3 else 1
    _check_projection("attention", "q", q, batch, heads, d, parts, k_cache.dtype)
    _check_projection("attention", "k", k, batch, kv, d, parts, k_cache.dtype)
    _check_projection("attention", "v", v, batch, kv, d, parts, k_cache.dtype)
    _check_rope_inputs("attention", cos, sin, pos, batch, d, {"q_norm_w": q_norm_w, "k_norm_w": k_norm_w})
    group = heads // kv
    t = tile_arange(batch * kv * splits)
    s, h, b = t % splits, (t // splits) % kv, t // (splits * kv)
    last = s == splits - 1  # only the last split reads the new key and value, and caches them
    new_head = ((0, parts), (b, 1), (h * d, last * d))
    cache = ((b, 1), (h, 1), ALL, ALL)
    reads = {"q": ((0, parts), (b, 1), (h * group * d, group * d)), "k": new_head, "v": new_head, "cos": (ALL, ALL),
             "sin": (ALL, ALL), "pos": ((b, 1),), "k_cache": cache, "v_cache": cache}
    if out is not None:  # every split's, read by the group's last to finish
        reads["o_part"] = reads["ml_part"] = ((b, 1), (h * group, group), ALL, ALL)
    constexprs = {"KV": kv, "GROUP": group, "G_PAD": max(16, triton.next_power_of_2(group)), "D": d,
                  "D_PAD": max(16, triton.next_power_of_2(d)), "S_MAX": s_max, "SPLITS": splits,
                  "S_PAD": triton.next_power_of_2(splits), "G_MERGE": triton.next_power_of_2(group),
                  "BLOCK_S": max(16, BLOCK_S),
                  # tl.dot rounds fp32 inputs to tf32 unless told otherwise (its inputs are in the cache dtype)
                  "PRECISION": "ieee" if k_cache.dtype == torch.float32 else None,
                  "Q_EPS": float(q_eps), "K_EPS": float(k_eps), "PARTS": parts}
    for norm, w in (("q_norm_w", q_norm_w), ("k_norm_w", k_norm_w)):
        if w is None:
            constexprs[norm] = None
        else:
            reads[norm] = (ALL,)
    part = ((b, 1), (h * group, group), (s, 1), ALL)
    writes = {"o_part": part, "ml_part": part, "k_cache": cache, "v_cache": cache}
    if out is not None:
        writes["out"] = ((0, 1), (b, 1), (h * group * d, group * d))
    # the splits of one (row, KV head) are a ticket group: the last to finish merges them into the group's heads
    return TilePlan(t.size, reads=reads, writes=writes,
                    scalars={"B": batch, "scale": float(scale), "window": int(window or 0)},
                    constexprs=constexprs, cost=1.0, tickets=t // splits)


@triton.jit(noinline=True)
def _merge(o_part, ml_part, out, bh, GROUP: tl.constexpr, G_MERGE: tl.constexpr, D: tl.constexpr,
           D_PAD: tl.constexpr, SPLITS: tl.constexpr, S_PAD: tl.constexpr):
    """The heads of KV group ``bh`` (row b * KV + KV head) from their splits' outputs, maxima and sums: every
    head's splits loaded at once (one round trip; head by head took Qwen3-0.6B 22 us a step slower on an H100).
    A function of its own (noinline): inlined, the sampling MegaKernel of Qwen3-0.6B spilled 72 bytes, against 32
    (ptxas, sm_90a)."""
    g = tl.arange(0, G_MERGE)
    s = tl.arange(0, S_PAD)
    d = tl.arange(0, D_PAD)
    row = (bh * GROUP + g[:, None]) * SPLITS + s[None, :]  # [G_MERGE, S_PAD]
    rm = (g[:, None] < GROUP) & (s[None, :] < SPLITS)
    m = tl.load(ml_part + row * 2, mask=rm, other=float("-inf"))
    l_s = tl.load(ml_part + row * 2 + 1, mask=rm, other=0.0)
    o = tl.load(o_part + row[:, :, None] * D + d[None, None, :], mask=rm[:, :, None] & (d[None, None, :] < D),
                other=0.0)
    weight = tl.where(rm, tl.exp(m - tl.max(m, axis=1)[:, None]), 0.0)
    res = tl.sum(o * weight[:, :, None], axis=1) / tl.sum(l_s * weight, axis=1)[:, None]
    tl.store(out + (bh * GROUP + g[:, None]) * D + d[None, :], res.to(out.dtype.element_ty),
             mask=(g[:, None] < GROUP) & (d[None, :] < D))


@triton.jit
def attention_tile(q, k, v, cos, sin, q_norm_w, k_norm_w, k_cache, v_cache, o_part, ml_part, out, tile, B, scale,
                   window, prefetched, marks, ticket, KV: tl.constexpr, GROUP: tl.constexpr, G_PAD: tl.constexpr,
                   D: tl.constexpr, D_PAD: tl.constexpr, S_MAX: tl.constexpr, SPLITS: tl.constexpr,
                   S_PAD: tl.constexpr, G_MERGE: tl.constexpr, BLOCK_S: tl.constexpr, PRECISION: tl.constexpr,
                   Q_EPS: tl.constexpr, K_EPS: tl.constexpr, PARTS: tl.constexpr):
    _split(q, k, v, cos, sin, q_norm_w, k_norm_w, k_cache, v_cache, o_part, ml_part, tile, B, scale, window,
           prefetched, marks, KV, GROUP, G_PAD, D, D_PAD, S_MAX, SPLITS, BLOCK_S, PRECISION, Q_EPS, K_EPS, PARTS)
    if take_ticket(ticket, tile // SPLITS, SPLITS):  # the last split of its (row, KV head) to finish
        _merge(o_part, ml_part, out, tile // SPLITS, GROUP, G_MERGE, D, D_PAD, SPLITS, S_PAD)


@triton.jit
def split_tile(q, k, v, cos, sin, q_norm_w, k_norm_w, k_cache, v_cache, o_part, ml_part, tile, B, scale, window,
               prefetched, marks, ticket, KV: tl.constexpr, GROUP: tl.constexpr, G_PAD: tl.constexpr,
               D: tl.constexpr, D_PAD: tl.constexpr, S_MAX: tl.constexpr, SPLITS: tl.constexpr,
               BLOCK_S: tl.constexpr, PRECISION: tl.constexpr, Q_EPS: tl.constexpr, K_EPS: tl.constexpr,
               PARTS: tl.constexpr):
    """A split alone, for an o projection that merges the splits itself (``megagen.tasks.linear.merge_gemv``). It
    takes no ticket: its plan's ticket groups only let a group's splits share their cache rows (the last writes slot
    p, which the others do not read)."""
    _split(q, k, v, cos, sin, q_norm_w, k_norm_w, k_cache, v_cache, o_part, ml_part, tile, B, scale, window,
           prefetched, marks, KV, GROUP, G_PAD, D, D_PAD, S_MAX, SPLITS, BLOCK_S, PRECISION, Q_EPS, K_EPS, PARTS)


def attention_reference(q, k, v, cos, sin, pos, q_norm_w, k_norm_w, k_cache, v_cache, o_part, ml_part, out, tile,
                        scale, window, KV, GROUP, D, SPLITS, Q_EPS, K_EPS):
    """A split; the last of its group (in tile order) then merges the group's heads."""
    _split_reference(q, k, v, cos, sin, pos, q_norm_w, k_norm_w, k_cache, v_cache, o_part, ml_part, tile, scale,
                     window, KV, GROUP, D, SPLITS, Q_EPS, K_EPS)
    if tile % SPLITS == SPLITS - 1:
        b, h = divmod(tile // SPLITS, KV)
        heads = slice(h * GROUP, (h + 1) * GROUP)
        merged = merged_splits_reference(o_part[b, heads], ml_part[b, heads])
        out[0, b, h * GROUP * D:(h + 1) * GROUP * D] = merged.flatten()


def merged_splits_reference(o_part, ml_part):
    """Heads from their splits in plain PyTorch: o_part [H, S, D] and ml_part [H, S, 2] as [H, D] in fp32."""
    m, l_s = ml_part.float().unbind(2)  # [H, S] each
    weight = torch.exp(m - m.amax(1, keepdim=True))
    return (o_part.float() * weight[..., None]).sum(1) / (l_s * weight).sum(1)[:, None]


_INPUTS = ("q", "k", "v", "cos", "sin", "pos")
_SPLITS = ("k_cache", "v_cache", "o_part", "ml_part")
_QK_NORMS = ("q_norm_w", "k_norm_w")
attention = register_task("attention", attention_tile, inputs=_INPUTS, outputs=_SPLITS + ("out",),
                          plan=_attention_plan, prefetch=attention_prefetch, reference=attention_reference)
qk_norm_attention = register_task("qk_norm_attention", attention_tile, inputs=_INPUTS + _QK_NORMS,
                                  outputs=_SPLITS + ("out",), plan=_attention_plan, prefetch=attention_prefetch,
                                  reference=attention_reference)
# the splits alone: the o projection merges them (megagen.tasks.linear.merge_gemv_residual)
split_attention = register_task("split_attention", split_tile, inputs=_INPUTS, outputs=_SPLITS, plan=_attention_plan,
                                prefetch=attention_prefetch, reference=_split_reference)
qk_norm_split_attention = register_task("qk_norm_split_attention", split_tile, inputs=_INPUTS + _QK_NORMS,
                                        outputs=_SPLITS, plan=_attention_plan, prefetch=attention_prefetch,
                                        reference=_split_reference)
