"""Model families: a HuggingFace model_type, its per-layer attention window, its routing, and its unsupported
settings."""
from __future__ import annotations

import dataclasses
from typing import Callable

import torch


def _no_window(config, layer: int, attn) -> int | None:
    return None


def _window_from_layer_types(config, layer: int, attn) -> int | None:
    """Qwen2 / Qwen3: a layer slides only when config.layer_types marks it 'sliding_attention'."""
    return getattr(attn, "sliding_window", None)


def _window_everywhere(config, layer: int, attn) -> int | None:
    """Mistral, Mixtral, Qwen3-MoE: config.sliding_window (possibly null) applies to every layer."""
    return getattr(config, "sliding_window", None)


def _qwen3_moe_routing(config, dtype):
    """Qwen3-MoE: the top-k probabilities renormalised only if config.norm_topk_prob, then cast to the model dtype."""
    return bool(config.norm_topk_prob), dtype


def _mixtral_routing(config, dtype):
    """Mixtral: the top-k probabilities always renormalised, and kept in float32 (HF never casts them back)."""
    return True, torch.float32


@dataclasses.dataclass(frozen=True)
class Family:
    """A decoder family megagen maps onto its task library.

    ``window(config, layer, attn)`` gives a layer's sliding attention window (None: full).
    ``unsupported(config)`` lists (setting, reason) pairs the config uses that megagen does not implement.
    ``routing(config, dtype)``: for mixture-of-experts families (None for dense ones), (renormalise the top-k
    probabilities, the dtype of the routing weights) as HuggingFace's router computes them.
    """

    name: str
    model_types: tuple[str, ...]
    window: Callable = _no_window
    unsupported: Callable = lambda config: []
    routing: Callable | None = None


def _llama_unsupported(config):
    issues = []
    if getattr(config, "mlp_bias", False):
        issues.append(("mlp_bias", "biases on the MLP projections"))
    if getattr(config, "pretraining_tp", 1) not in (1, None):
        issues.append(("pretraining_tp", "sliced pretraining tensor-parallel linears"))
    return issues


FAMILIES = {f.name: f for f in (
    Family("llama", ("llama",), unsupported=_llama_unsupported),
    Family("qwen2", ("qwen2",), window=_window_from_layer_types),
    Family("qwen3", ("qwen3",), window=_window_from_layer_types),
    Family("mistral", ("mistral",), window=_window_everywhere),
    Family("qwen3_moe", ("qwen3_moe",), window=_window_everywhere, routing=_qwen3_moe_routing),
    Family("mixtral", ("mixtral",), window=_window_everywhere, routing=_mixtral_routing),
)}


def family_for(model_type: str) -> Family | None:
    for f in FAMILIES.values():
        if model_type in f.model_types:
            return f
    return None
