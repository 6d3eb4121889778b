"""The decode step as a TaskGraph: one token per batch row through the whole model.

Per layer the graph has these dependency phases (tiles of one phase run side by side, and a
tile starts as soon as the tiles it reads are done):

1. q, k, v projections with the input RMSNorm fused in (and Qwen2's biases);
2. RoPE (after Qwen3's q/k RMSNorm) for q, and for k with the KV-cache append of k and v;
3. split-KV attention partials; 4. their combine;
5. o projection, adding the residual stream;
6. gate and up projections with the post-attention RMSNorm fused in;
7. down projection over silu(gate) * up, adding the residual stream.

Under tensor parallelism (a rank's shard, ``megagen.shard``) the o and down projections write
their partial sums to symmetric buffers instead, and an allreduce phase after each adds every
rank's partials to the residual stream (``megagen.tasks.comm``); at the end each rank's
argmax covers its slice of the vocabulary and the next token is picked across ranks.

The residual stream is fp32 and travels as split-K partial sums ([S, B, hidden]), so a
projection with too few output rows to fill the GPU splits along K without an extra
reduction phase. At the end: the final RMSNorm fused into lm_head, a two-stage argmax, and
the next token and position written on the device, so the next launch needs nothing from
the host. Every intermediate has its own buffer: no write-after-read hazards between
layers, and every intermediate can be compared with the reference executor.
"""
from __future__ import annotations

import dataclasses

import torch

from megagen.graph import TaskGraph
from megagen.tasks import attention as A
from megagen.tasks import linear as Lin
from megagen.tasks import sampling as S
from megagen.tasks.base import cdiv
from megagen.tasks.comm import allreduce_ops
from megagen.world import EmulatedWorld, World


@dataclasses.dataclass
class DecodeState:
    """Device state a decode step reads and writes: next tokens, positions, KV cache, RoPE tables."""

    tokens: torch.Tensor  # [B_max] int64
    pos: torch.Tensor  # [B_max] int64
    k_cache: list[torch.Tensor]  # per layer [B_max, KV, S_max, D]
    v_cache: list[torch.Tensor]
    cos: torch.Tensor  # [S_max, D]
    sin: torch.Tensor

    @classmethod
    def allocate(cls, decoder, max_batch_size: int, max_seq_len: int) -> "DecodeState":
        dev, dt = decoder.device, decoder.dtype
        a = decoder.layers[0].attn
        shape = (max_batch_size, a.kv_heads, max_seq_len, a.head_dim)
        cos, sin = decoder.rope_tables(max_seq_len)
        return cls(tokens=torch.zeros(max_batch_size, dtype=torch.int64, device=dev),
                   pos=torch.zeros(max_batch_size, dtype=torch.int64, device=dev),
                   k_cache=[torch.zeros(shape, dtype=dt, device=dev) for _ in decoder.layers],
                   v_cache=[torch.zeros(shape, dtype=dt, device=dev) for _ in decoder.layers],
                   cos=cos, sin=sin)


@dataclasses.dataclass(frozen=True)
class Tiling:
    """Tile sizes of the decode graph and the CTA count its splits are sized for."""

    num_ctas: int
    block_n: int = 16
    block_k: int = 512
    attention_block: int = 32
    max_attention_splits: int = 32

    def k_splits(self, n: int, k: int, batch: int) -> int:
        """Split-K factor for a [n, k] projection: enough tiles to give every CTA one, in whole K blocks."""
        block_k, _ = Lin.split_k_blocks(k, 1, batch, self.block_k)
        rows = cdiv(n, self.block_n)
        split = 1
        while rows * split < self.num_ctas and cdiv(k, 2 * split) >= block_k:
            split *= 2
        while split > 1 and Lin.split_k_blocks(k, split, batch, self.block_k) is None:
            split //= 2
        return split

    def attention_splits(self, batch: int, kv_heads: int) -> int:
        return max(1, min(self.max_attention_splits, self.num_ctas // (batch * kv_heads)))


def decode_graph(decoder, state: DecodeState, batch: int, tiling: Tiling, world: World | None = None,
                 allreduce: str = "auto") -> TaskGraph:
    """The graph of one decode step for the first ``batch`` rows of ``state``.

    ``decoder`` is the model, or rank ``decoder.rank``'s shard of it in ``world``; ``allreduce``:
    the form of the allreduce tasks ("auto", "one_shot" or "two_shot", see megagen.tasks.comm).
    """
    dev, dt = decoder.device, decoder.dtype
    hidden = decoder.hidden_size
    world = EmulatedWorld(1, dev) if world is None else world
    rank, tp = decoder.rank, world.size
    suffix = f"_tp{tp}_rank{rank}" if tp > 1 else ""
    g = TaskGraph(f"{decoder.family.name}_decode_b{batch}{suffix}", world=world, rank=rank)
    g.input(state.tokens, state.pos, state.cos, state.sin, *state.k_cache, *state.v_cache, decoder.embed,
            decoder.lm_head, decoder.final_norm.weight)

    def act(*shape, dtype=dt):
        return torch.empty(shape, dtype=dtype, device=dev)

    def linear(task, w, y, name, **tensors):
        g.input(w)
        g.add(task, name=name, w=w, y=y, BLOCK_N=tiling.block_n, BLOCK_K=tiling.block_k, **tensors)
        return y

    def residual_linear(task, partial_task, w, name, residual, **tensors):
        """A projection added to the residual stream: fused on one rank, through an allreduce across ranks."""
        n, k = w.shape
        split = tiling.k_splits(n, k, batch)
        if tp == 1:
            return linear(task, w, act(split, batch, n, dtype=torch.float32), name, residual=residual, **tensors)
        part = world.symmetric(rank, (split, batch, n), torch.float32)
        linear(partial_task, w, part, name, **tensors)
        out = act(1, batch, n, dtype=torch.float32)
        allreduce_ops(g, f"{name}.allreduce", part, residual, out, ranks=tp, mode=allreduce)
        return out

    resid = act(1, batch, hidden, dtype=torch.float32)
    g.add(S.embedding, name="embed", tokens=state.tokens, table=decoder.embed, out=resid)
    for i, layer in enumerate(decoder.layers):
        a = layer.attn
        g.input(layer.input_norm.weight, layer.post_norm.weight)
        norm = dict(x=resid, norm_w=layer.input_norm.weight, eps=layer.input_norm.eps)
        proj = {}
        for name, lin, heads in (("q", a.q, a.heads), ("k", a.k, a.kv_heads), ("v", a.v, a.kv_heads)):
            y = act(1, batch, heads * a.head_dim)
            if lin.bias is not None:
                g.input(lin.bias)
                proj[name] = linear(Lin.rmsnorm_gemv_bias, lin.weight, y, f"L{i}.{name}_proj", bias=lin.bias, **norm)
            else:
                proj[name] = linear(Lin.rmsnorm_gemv, lin.weight, y, f"L{i}.{name}_proj", **norm)

        q_rot = act(batch, a.heads, a.head_dim)
        rope = dict(cos=state.cos, sin=state.sin, pos=state.pos)
        if a.q_norm is not None:
            g.input(a.q_norm.weight, a.k_norm.weight)
            g.add(A.rmsnorm_rope_q, name=f"L{i}.rope_q", q=proj["q"], q_rot=q_rot, norm_w=a.q_norm.weight,
                  eps=a.q_norm.eps, **rope)
            g.add(A.rmsnorm_rope_kv_append, name=f"L{i}.rope_kv", k=proj["k"], v=proj["v"],
                  k_cache=state.k_cache[i], v_cache=state.v_cache[i], norm_w=a.k_norm.weight, eps=a.k_norm.eps,
                  **rope)
        else:
            g.add(A.rope_q, name=f"L{i}.rope_q", q=proj["q"], q_rot=q_rot, **rope)
            g.add(A.rope_kv_append, name=f"L{i}.rope_kv", k=proj["k"], v=proj["v"], k_cache=state.k_cache[i],
                  v_cache=state.v_cache[i], **rope)

        splits = tiling.attention_splits(batch, a.kv_heads)
        o_part = act(batch, a.heads, splits, a.head_dim, dtype=torch.float32)
        ml_part = act(batch, a.heads, splits, 2, dtype=torch.float32)
        g.add(A.attention_partial, name=f"L{i}.attention", q_rot=q_rot, k_cache=state.k_cache[i],
              v_cache=state.v_cache[i], pos=state.pos, o_part=o_part, ml_part=ml_part, scale=a.scaling,
              window=a.window or 0, BLOCK_S=tiling.attention_block)
        attn = act(1, batch, a.heads * a.head_dim)
        g.add(A.attention_combine, name=f"L{i}.attention_combine", o_part=o_part, ml_part=ml_part, out=attn)
        resid = residual_linear(Lin.gemv_residual, Lin.gemv, a.o.weight, f"L{i}.o_proj", resid, x=attn)

        post = dict(x=resid, norm_w=layer.post_norm.weight, eps=layer.post_norm.eps)
        inter = layer.gate.weight.shape[0]
        gate = linear(Lin.rmsnorm_gemv, layer.gate.weight, act(1, batch, inter), f"L{i}.gate_proj", **post)
        up = linear(Lin.rmsnorm_gemv, layer.up.weight, act(1, batch, inter), f"L{i}.up_proj", **post)
        resid = residual_linear(Lin.silu_mul_gemv_residual, Lin.silu_mul_gemv, layer.down.weight,
                                f"L{i}.down_proj", resid, x=gate, x2=up)

    vocab = decoder.lm_head.shape[0]  # this rank's slice of the vocabulary
    logits = act(1, batch, vocab)
    linear(Lin.rmsnorm_gemv, decoder.lm_head, logits, "lm_head", x=resid, norm_w=decoder.final_norm.weight,
           eps=decoder.final_norm.eps)
    _, blocks = S.argmax_blocks(vocab)
    value = world.symmetric(rank, (batch, blocks), torch.float32)  # every rank's best per block, read by all
    index = world.symmetric(rank, (batch, blocks), torch.int64)
    g.add(S.argmax_partial, name="argmax", logits=logits, value=value, index=index, offset=decoder.vocab_offset,
          valid=decoder.vocab_valid)
    g.add(S.greedy_pick, name="next_token", value=value, index=index, tokens=state.tokens, pos=state.pos)
    return g
