"""Tensor-parallel shards of a traced decoder (Megatron layout).

Rank r of tp keeps:
- q, k, v (and their biases): its heads' rows (column-parallel), so attention runs on its heads;
  with fewer KV heads than ranks, each KV head is replicated on the tp / KV ranks whose query
  heads use it (as Megatron and vLLM do), so any tp that divides the heads works;
- o: the matching columns (row-parallel): its output is a partial sum, allreduced across ranks;
- gate, up: its rows of the intermediate size; down: the matching columns (allreduced); in a
  mixture of experts the same for every expert (each rank holds a slice of every expert), and the
  router replicated, so every rank routes alike and reads only the routed experts' slices;
- lm_head: its rows of the vocabulary (vocabulary-parallel), cdiv(vocab, tp) each, the last
  zero-padded: each rank computes its logits and its best token, and the next token is the
  best over the ranks (a cross-rank argmax of tp values per row, not an all-gather of logits);
- everything else (embedding, norms, RoPE tables) replicated: they are small or read sparsely.

The shards are copies, so the full model can be freed afterwards (megagen keeps using the
HuggingFace model only for the prompt's prefill).
"""
from __future__ import annotations

import dataclasses

import torch

from megagen.errors import MegagenError
from megagen.tasks.base import cdiv
from megagen.trace import Decoder, Experts, Layer, Projection


def check_divisible(decoder: Decoder, tp: int) -> None:
    """Raise MegagenError unless ``tp`` splits the heads and the intermediate size evenly, and either splits
    the KV heads evenly or is a multiple of them (each KV head then replicated on tp / KV ranks)."""
    if not isinstance(tp, int) or tp < 1:
        raise MegagenError(f"tp must be a positive int, got {tp!r}")
    a = decoder.layers[0].attn
    inters = sorted({layer.intermediate_size for layer in decoder.layers})  # dense and experts' may differ
    inter = " and ".join(map(str, inters))
    hint = (f"choose a tp that divides {a.heads} heads and intermediate size {inter}, and divides or is a multiple "
            f"of {a.kv_heads} KV heads")
    for what, n in (("attention heads", a.heads), *(("intermediate size", i) for i in inters)):
        if n % tp:
            raise MegagenError(f"tp={tp} does not divide the model's {what} ({n}); {hint}")
    if a.kv_heads % tp and tp % a.kv_heads:
        raise MegagenError(f"tp={tp} neither divides the model's KV heads ({a.kv_heads}) nor is a multiple of them; "
                           f"{hint}")


def kv_heads_of(rank: int, tp: int, kv_heads: int) -> range:
    """The KV heads rank ``rank`` holds: its share of them, or the one its query heads use when tp > KV."""
    if kv_heads % tp == 0:
        n = kv_heads // tp
        return range(rank * n, (rank + 1) * n)
    head = rank // (tp // kv_heads)
    return range(head, head + 1)


def _rows(t: torch.Tensor | None, rank: int, parts: int) -> torch.Tensor | None:
    if t is None:
        return None
    n = t.shape[0] // parts
    return t[rank * n:(rank + 1) * n].contiguous()


def _cols(t: torch.Tensor, rank: int, parts: int) -> torch.Tensor:
    n = t.shape[1] // parts
    return t[:, rank * n:(rank + 1) * n].contiguous()


def _column_parallel(p: Projection, rank: int, tp: int) -> Projection:
    return Projection(_rows(p.weight, rank, tp), _rows(p.bias, rank, tp))


def _row_parallel(p: Projection, rank: int, tp: int) -> Projection:
    if p.bias is not None:
        raise MegagenError("a bias on a row-parallel projection (o_proj or down_proj) is not supported")
    return Projection(_cols(p.weight, rank, tp))


def _experts_shard(e: Experts, rank: int, tp: int) -> Experts:
    """Every expert's slice of the intermediate size: its gate and up rows, restacked, and its down columns."""
    inter = e.intermediate_size
    gate, up = e.gate_up[:, :inter], e.gate_up[:, inter:]
    n = inter // tp
    rows = slice(rank * n, (rank + 1) * n)
    return dataclasses.replace(e, gate_up=torch.cat([gate[:, rows], up[:, rows]], 1).contiguous(),
                               down=e.down[:, :, rows].contiguous())


def vocab_shard(lm_head: torch.Tensor, rank: int, tp: int) -> torch.Tensor:
    """Rank ``rank``'s rows of the vocabulary, zero-padded to cdiv(vocab, tp) rows."""
    rows = cdiv(lm_head.shape[0], tp)
    part = lm_head[rank * rows:(rank + 1) * rows]
    out = torch.zeros(rows, lm_head.shape[1], dtype=lm_head.dtype, device=lm_head.device)
    out[:part.shape[0]] = part
    return out


def shard(decoder: Decoder, rank: int, tp: int) -> Decoder:
    """Rank ``rank``'s shard of ``decoder`` for tensor parallelism over ``tp`` ranks."""
    check_divisible(decoder, tp)
    layers = []
    for layer in decoder.layers:
        a = layer.attn
        kv = kv_heads_of(rank, tp, a.kv_heads)
        part, parts = kv.start // len(kv), a.kv_heads // len(kv)  # this rank's KV heads as one of equal parts
        attn = dataclasses.replace(a, q=_column_parallel(a.q, rank, tp), k=_column_parallel(a.k, part, parts),
                                   v=_column_parallel(a.v, part, parts), o=_row_parallel(a.o, rank, tp),
                                   heads=a.heads // tp, kv_heads=len(kv))
        if layer.experts is not None:
            layers.append(dataclasses.replace(layer, attn=attn, experts=_experts_shard(layer.experts, rank, tp)))
            continue
        layers.append(Layer(input_norm=layer.input_norm, attn=attn, post_norm=layer.post_norm,
                            gate=_column_parallel(layer.gate, rank, tp), up=_column_parallel(layer.up, rank, tp),
                            down=_row_parallel(layer.down, rank, tp)))
    return dataclasses.replace(decoder, layers=layers, lm_head=vocab_shard(decoder.lm_head, rank, tp), rank=rank,
                               tp=tp)


__all__ = ["check_divisible", "kv_heads_of", "shard", "vocab_shard"]
