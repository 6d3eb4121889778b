"""Attention tile anatomy in isolation (Qwen3-0.6B shapes: 8 KV heads, 2 query heads each, D 128, 8 splits of a
512-key cache). One launch of 64 programs, each stamping %globaltimer; medians over launches and programs.

python scratch/attn_probe.py  (from the repo root or scratch/base: the imported megagen's tile is timed whole)
"""
import statistics
import sys

import torch
import triton
import triton.language as tl

from megagen.tasks import attention as A

KV, GROUP, D, SPLITS, S_MAX, BLOCK_S, P = 8, 2, 128, 8, 528, 32, 512
H = KV * GROUP


@triton.jit
def _now():
    return tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64, is_pure=False, pack=1)


@triton.jit
def whole(q, k, v, cos, sin, qn, kn, kc, vc, o_part, ml_part, new_kv, pos, stamps, B, scale, window,
          NEW: tl.constexpr, KV: tl.constexpr, GROUP: tl.constexpr, G_PAD: tl.constexpr, D: tl.constexpr,
          D_PAD: tl.constexpr, S_MAX: tl.constexpr, SPLITS: tl.constexpr, BLOCK_S: tl.constexpr):
    tile = tl.program_id(0)
    t0 = _now()
    if NEW:
        pre = A.attention_partial_prefetch(pos, tile, KV, S_MAX, SPLITS)
        t1 = _now() + (pre * 0).to(tl.int64)
    else:
        pre = A.attention_partial_prefetch(pos, kc, vc, tile, window, KV, D, D_PAD, S_MAX, SPLITS, BLOCK_S)
        t1 = _now() + (tl.sum(tl.sum(pre[1].to(tl.float32), 1), 0) * 0).to(tl.int64)
    A.attention_partial_tile(q, k, v, cos, sin, qn, kn, kc, vc, o_part, ml_part, new_kv, tile, B, scale, window, pre,
                             KV, GROUP, G_PAD, D, D_PAD, S_MAX, SPLITS, BLOCK_S, None, 1e-6, 1e-6)
    tl.debug_barrier()
    t2 = _now()
    tl.store(stamps + tile * 4 + 0, t0)
    tl.store(stamps + tile * 4 + 1, t1)
    tl.store(stamps + tile * 4 + 2, t2)


@triton.jit
def stamped(q, k, v, cos, sin, q_norm_w, k_norm_w, k_cache, v_cache, o_part, ml_part, pos, stamps, scale, window,
            KV: tl.constexpr, GROUP: tl.constexpr, G_PAD: tl.constexpr, D: tl.constexpr, D_PAD: tl.constexpr,
            S_MAX: tl.constexpr, SPLITS: tl.constexpr, BLOCK_S: tl.constexpr, USE_DOT: tl.constexpr):
    """The new tile's structure (no new-key path), stamped: loads issued, queries ready, loop done, stored."""
    tile = tl.program_id(0)
    t0 = _now()
    s = tile % SPLITS
    h = (tile // SPLITS) % KV
    b = tile // (SPLITS * KV)
    p = tl.minimum(tl.load(pos + b), S_MAX - 1)
    start, end = A._split_range(p, s, window, SPLITS)
    g = tl.arange(0, G_PAD)
    d = tl.arange(0, D_PAD)
    heads = h * GROUP + g
    base = (b * KV + h) * S_MAX
    kb, vb = A._kv_block(k_cache, v_cache, base, start, end, d, D, BLOCK_S)
    kb2, vb2 = A._kv_block(k_cache, v_cache, base, start + BLOCK_S, end, d, D, BLOCK_S)
    t1 = _now()
    qr = A._rope_rows(q + b * KV * GROUP * D, heads, g < GROUP, cos, sin, p, q_norm_w, 1e-6, D, D_PAD)
    qr = qr.to(q.dtype.element_ty)
    t2 = _now() + (tl.sum(tl.sum(qr.to(tl.float32), 1), 0) * 0).to(tl.int64)
    m_i = tl.full((G_PAD,), float("-inf"), dtype=tl.float32)
    l_i = tl.zeros((G_PAD,), dtype=tl.float32)
    acc = tl.zeros((G_PAD, D_PAD), dtype=tl.float32)
    for it in tl.static_range(2):
        if it == 1:
            kb, vb = kb2, vb2
        j0 = start + it * BLOCK_S
        jm = j0 + tl.arange(0, BLOCK_S) < end
        if USE_DOT:
            scores = tl.dot(qr, tl.trans(kb)) * scale
        else:
            scores = tl.sum(qr.to(tl.float32)[:, None, :] * kb.to(tl.float32)[None, :, :], axis=2) * scale
        scores = tl.where(jm[None, :], scores, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(scores, axis=1))
        prob = tl.exp(scores - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(prob, axis=1)
        if USE_DOT:
            acc = acc * alpha[:, None] + tl.dot(prob.to(vb.dtype), vb)
        else:
            pv = prob.to(vb.dtype).to(tl.float32)
            acc = acc * alpha[:, None] + tl.sum(pv[:, :, None] * vb.to(tl.float32)[None, :, :], axis=1)
        m_i = m_new
    t3 = _now() + (tl.sum(tl.sum(acc, 1), 0) * 0).to(tl.int64)
    row = (b * KV * GROUP + heads) * SPLITS + s
    qmask = (g[:, None] < GROUP) & (d[None, :] < D)
    tl.store(o_part + row[:, None] * D + d[None, :], acc, mask=qmask)
    tl.store(ml_part + row * 2, m_i, mask=g < GROUP)
    tl.store(ml_part + row * 2 + 1, l_i, mask=g < GROUP)
    tl.debug_barrier()
    t4 = _now()
    tl.store(stamps + tile * 8 + 0, t0)
    tl.store(stamps + tile * 8 + 1, t1)
    tl.store(stamps + tile * 8 + 2, t2)
    tl.store(stamps + tile * 8 + 3, t3)
    tl.store(stamps + tile * 8 + 4, t4)


def main():
    dev = "cuda"
    bf = torch.bfloat16
    g = torch.Generator(device=dev).manual_seed(0)
    r = lambda *s: torch.randn(*s, device=dev, generator=g).to(bf)
    q, k, v = r(1, 1, H * D), r(1, 1, KV * D), r(1, 1, KV * D)
    cos, sin = r(S_MAX, D), r(S_MAX, D)
    qn, kn = r(D), r(D)
    kc, vc = r(1, KV, S_MAX, D), r(1, KV, S_MAX, D)
    o_part = torch.empty(1, H, SPLITS, D, device=dev)
    ml_part = torch.empty(1, H, SPLITS, 2, device=dev)
    new_kv = torch.empty(1, KV, 2, D, device=dev, dtype=bf)
    pos = torch.full((1,), P, device=dev, dtype=torch.int64)
    flush = torch.empty(256 << 20, device=dev, dtype=torch.uint8)
    new = "k_cache" not in A.attention_partial_prefetch.arg_names
    print("megagen from", A.__file__, "new prefetch:", new)
    consts = dict(KV=KV, GROUP=GROUP, G_PAD=16, D=D, D_PAD=D, S_MAX=S_MAX, SPLITS=SPLITS, BLOCK_S=BLOCK_S)

    def run(launch, width, n=200):
        stamps = torch.zeros(SPLITS * KV, width, device=dev, dtype=torch.int64)
        rows = []
        for _ in range(n):
            flush.add_(1)  # the cache comes from HBM, as in a decode step
            launch(stamps)
            torch.cuda.synchronize()
            rows.append(stamps.clone())
        s = torch.stack(rows).double()
        return s

    s = run(lambda st: whole[(SPLITS * KV,)](q, k, v, cos, sin, qn, kn, kc, vc, o_part, ml_part, new_kv, pos, st, 1,
                                              0.088, 0, NEW=new, num_warps=4, **consts), 4)
    d1, d2 = (s[..., 1] - s[..., 0]).flatten(), (s[..., 2] - s[..., 1]).flatten()
    print(f"whole tile: prefetch {d1.median() / 1e3:.2f} us, after it {d2.median() / 1e3:.2f} us "
          f"(p90 {d2.quantile(0.9) / 1e3:.2f})")
    for use_dot in (True, False):
        s = run(lambda st: stamped[(SPLITS * KV,)](q, k, v, cos, sin, qn, kn, kc, vc, o_part, ml_part, pos, st, 0.088,
                                                    0, USE_DOT=use_dot, num_warps=4, **consts), 8)
        parts = [(s[..., i + 1] - s[..., i]).flatten().median().item() / 1e3 for i in range(4)]
        print(f"stamped, tl.dot={use_dot}: issue {parts[0]:.2f}, queries ready {parts[1]:.2f}, loop {parts[2]:.2f}, "
              f"stores {parts[3]:.2f}, total {sum(parts):.2f} us")


if __name__ == "__main__":
    sys.exit(main())
