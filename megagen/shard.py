"""Tensor-parallel shards of a traced decoder (Megatron layout).

Rank r of tp keeps:
- q, k, v (and their biases): its heads' rows (column-parallel), so attention runs on its heads;
- o: the matching columns (row-parallel): its output is a partial sum, allreduced across ranks;
- gate, up: its rows of the intermediate size; down: the matching columns (allreduced);
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
from megagen.trace import Decoder, Layer, Projection


def check_divisible(decoder: Decoder, tp: int) -> None:
    """Raise MegagenError unless ``tp`` splits the heads, the KV heads and the intermediate size evenly."""
    if not isinstance(tp, int) or tp < 1:
        raise MegagenError(f"tp must be a positive int, got {tp!r}")
    a = decoder.layers[0].attn
    inter = decoder.layers[0].gate.weight.shape[0]
    for what, n in (("attention heads", a.heads), ("KV heads", a.kv_heads), ("intermediate size", inter)):
        if n % tp:
            raise MegagenError(f"tp={tp} does not divide the model's {what} ({n}); choose a tp that divides "
                               f"{a.heads} heads, {a.kv_heads} KV heads and intermediate size {inter}")


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
        attn = dataclasses.replace(a, q=_column_parallel(a.q, rank, tp), k=_column_parallel(a.k, rank, tp),
                                   v=_column_parallel(a.v, rank, tp), o=_row_parallel(a.o, rank, tp),
                                   heads=a.heads // tp, kv_heads=a.kv_heads // tp)
        layers.append(Layer(input_norm=layer.input_norm, attn=attn, post_norm=layer.post_norm,
                            gate=_column_parallel(layer.gate, rank, tp), up=_column_parallel(layer.up, rank, tp),
                            down=_row_parallel(layer.down, rank, tp)))
    return dataclasses.replace(decoder, layers=layers, lm_head=vocab_shard(decoder.lm_head, rank, tp), rank=rank,
                               tp=tp)


__all__ = ["check_divisible", "shard", "vocab_shard"]
