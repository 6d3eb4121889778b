"""Tensor-parallel PyTorch baseline: a HuggingFace causal LM sharded Megatron-style over ``world`` ranks.

This is the "torch TP + NCCL + CUDA graph" system of megagen's tensor-parallel benchmark. Each rank
runs ``shard_hf_model_(model, rank, world)`` on its own full copy of the model, which keeps:

* q/k/v_proj and gate/up_proj column-parallel: the rank's slice of output rows (and biases), i.e.
  its heads / KV heads and its slice of the MLP's intermediate features;
* o_proj and down_proj row-parallel: the rank's slice of input columns, followed by an all-reduce
  (SUM) of the output over ``group`` (NCCL on GPUs); a bias is kept on rank 0 only;
* lm_head vocabulary-parallel: rows ``[rank*V/world, (rank+1)*V/world)``, the logits all-gathered
  into the full vocabulary, so the model's logits have the unsharded shape (``V % world == 0`` is
  required, no padding);
* the embedding and the norms replicated.

The attention forward of these families reshapes with ``(*input_shape, -1, head_dim)`` and
``num_key_value_groups`` (query heads per KV head) is the same per rank, so the attention modules
need no change. The config is updated to per-rank ``num_attention_heads``, ``num_key_value_heads``
and ``intermediate_size`` (``head_dim`` pinned, ``vocab_size`` kept full), so it describes the
rank's modules: caches built from it hold only the rank's KV heads (``StaticCache`` and
``DynamicCache`` size themselves lazily from the keys anyway; ``generate``'s early-initialised
static cache reads ``config.num_key_value_heads``). The decode step is then captured in a CUDA
graph by ``megagen.bench.hf_static``, which works unchanged on the sharded model.
"""
from __future__ import annotations

import torch
import torch.distributed as dist
from torch import nn

from megagen.errors import MegagenError

FAMILIES = ("llama", "qwen2", "qwen3", "mistral")


def _slice(weight: torch.Tensor, dim: int, rank: int, world: int) -> nn.Parameter:
    """The rank's contiguous slice of ``weight`` along ``dim``, as a copy (the full tensor can be freed)."""
    part = weight.chunk(world, dim=dim)[rank].clone(memory_format=torch.contiguous_format)
    return nn.Parameter(part, requires_grad=weight.requires_grad)


def _column_parallel_(linear: nn.Linear, rank: int, world: int) -> None:
    linear.weight = _slice(linear.weight, 0, rank, world)
    if linear.bias is not None:
        linear.bias = _slice(linear.bias, 0, rank, world)
    linear.out_features //= world


def _row_parallel_(linear: nn.Linear, rank: int, world: int, group) -> None:
    linear.weight = _slice(linear.weight, 1, rank, world)
    if linear.bias is not None and rank != 0:  # added once, by rank 0, before the sum
        linear.bias = None
    linear.in_features //= world

    def all_reduce(module, args, output):
        dist.all_reduce(output, group=group)
        return output
    linear.register_forward_hook(all_reduce)


def _vocab_parallel_(linear: nn.Linear, rank: int, world: int, group) -> None:
    linear.weight = _slice(linear.weight, 0, rank, world)  # also unties it from the embedding
    linear.out_features //= world

    def all_gather(module, args, output):
        parts = [torch.empty_like(output) for _ in range(world)]
        dist.all_gather(parts, output.contiguous(), group=group)
        return torch.cat(parts, dim=-1)
    linear.register_forward_hook(all_gather)


def shard_hf_model_(model, rank: int, world: int, group=None):
    """Shard ``model`` (llama / qwen2 / qwen3 / mistral causal LM) in place for rank ``rank`` of ``world``.

    Every rank must call it on an identical model. The forward then needs the process group
    ``group`` (default: the world group) to be initialised. Raises MegagenError, leaving the model
    untouched, when ``world`` does not divide the heads, KV heads, intermediate size or vocabulary.
    """
    cfg = model.config
    if cfg.model_type not in FAMILIES:
        raise MegagenError(f"shard_hf_model_ supports {FAMILIES}, not model_type {cfg.model_type!r}")
    if getattr(model, "megagen_tp", None):
        raise MegagenError(f"the model is already sharded (rank, world) = {model.megagen_tp}")
    if not 0 <= rank < world:
        raise MegagenError(f"rank {rank} is not in [0, {world})")
    if dist.is_initialized() and dist.get_world_size(group) != world:
        raise MegagenError(f"world={world} but the process group has {dist.get_world_size(group)} ranks")
    sizes = {"num_attention_heads": cfg.num_attention_heads, "num_key_value_heads": cfg.num_key_value_heads,
             "intermediate_size": cfg.intermediate_size, "vocab_size": model.lm_head.out_features}
    bad = [f"{name}={n}" for name, n in sizes.items() if n % world]
    if bad:
        raise MegagenError(f"tensor parallelism over world={world} ranks needs it to divide {', '.join(bad)} "
                         f"({cfg.model_type}; KV heads are not replicated, the vocabulary is not padded)")

    head_dim = model.model.layers[0].self_attn.head_dim
    for layer in model.model.layers:
        attn, mlp = layer.self_attn, layer.mlp
        for linear in (attn.q_proj, attn.k_proj, attn.v_proj, mlp.gate_proj, mlp.up_proj):
            _column_parallel_(linear, rank, world)
        for linear in (attn.o_proj, mlp.down_proj):
            _row_parallel_(linear, rank, world, group)
        if hasattr(mlp, "intermediate_size"):
            mlp.intermediate_size //= world
    _vocab_parallel_(model.lm_head, rank, world, group)

    cfg.head_dim = head_dim  # derived from hidden_size // num_attention_heads otherwise
    cfg.num_attention_heads //= world
    cfg.num_key_value_heads //= world
    cfg.intermediate_size //= world
    cfg.tie_word_embeddings = False  # lm_head holds a slice now; keeps tie_weights() from undoing it
    model.megagen_tp = (rank, world)
    return model
