"""Trace a HuggingFace causal LM into the parts megagen maps onto tasks.

The trace walks the module tree and checks it against the config: every leaf module must
be a part megagen implements (linear, embedding, RMSNorm, SiLU, rotary embedding, top-k router),
the decoder must have the standard layout (embedding, layers of RMSNorm / attention / RMSNorm /
gated MLP or mixture of gated experts, final norm, lm_head), and every shape must agree with the
config. Anything else raises ``UnsupportedModelError`` naming the module and the operation,
before any compilation. What differs between families (which layers slide, which settings are
unsupported) lives in ``models.families``.
"""
from __future__ import annotations

import dataclasses
import functools

import torch
from torch import nn

from megagen.errors import MegagenError, UnsupportedModelError

SUPPORTED_DTYPES = (torch.float32, torch.bfloat16, torch.float16)
# RoPE types whose tables depend only on the position (dynamic ones rescale with the sequence length).
STATIC_ROPE_TYPES = ("default", "linear", "llama3", "yarn")


@dataclasses.dataclass
class Norm:
    weight: torch.Tensor
    eps: float


@dataclasses.dataclass
class Projection:
    """A linear layer's weight [out, in] and bias (or None): the model's own, or a rank's shard of them."""

    weight: torch.Tensor
    bias: torch.Tensor | None = None

    @functools.cached_property
    def columns(self) -> torch.Tensor:
        """The weight as an [out, in] view of column-major storage: a copy, made once, so a tile that takes a
        few input columns streams whole rows of memory (``megagen.tasks.mlp``)."""
        return self.weight.t().contiguous().t()


@dataclasses.dataclass
class Attention:
    q: Projection
    k: Projection
    v: Projection
    o: Projection
    q_norm: Norm | None
    k_norm: Norm | None
    heads: int
    kv_heads: int
    head_dim: int
    scaling: float
    window: int | None


@dataclasses.dataclass
class Experts:
    """A sparse MLP block: a router over stacked gated experts, ``top_k`` of them routed per token.

    The stacked layout is HuggingFace's, so a tile picks expert e's weights by offset alone.
    ``renormalize``: the top-k softmax probabilities are divided by their sum; ``weight_dtype``: the
    dtype HuggingFace casts the routing weights to before scaling the experts' outputs.
    """

    router: torch.Tensor  # [E, hidden]
    gate_up: torch.Tensor  # [E, 2 * inter, hidden]: each expert's gate rows, then its up rows
    down: torch.Tensor  # [E, hidden, inter]
    top_k: int
    renormalize: bool
    weight_dtype: torch.dtype

    @property
    def intermediate_size(self) -> int:
        return self.down.shape[2]


@dataclasses.dataclass
class Layer:
    """A decoder layer: a dense one has gate / up / down, a sparse one ``experts`` (and gate / up / down None)."""

    input_norm: Norm
    attn: Attention
    post_norm: Norm
    gate: Projection | None
    up: Projection | None
    down: Projection | None
    experts: Experts | None = None

    @property
    def intermediate_size(self) -> int:
        """The MLP's (or each expert's) intermediate size: what tensor parallelism splits."""
        return self.experts.intermediate_size if self.experts is not None else self.gate.weight.shape[0]

    @functools.cached_property
    def early_router(self) -> tuple[torch.Tensor, torch.Tensor]:
        """A sparse layer's router split over the o projection (``Tiling.early_routing``): the router's logits are
        rstd * W_r diag(g) (x + W_o a), x the residual stream before o, a the attention's output, g the
        post-attention norm's weight and rstd that norm's factor, one positive number a row. So W_r diag(g)
        [E, hidden] and W_r diag(g) W_o [E, attention width], made once in fp32 and kept in the model dtype, give
        logits short of rstd, which order the experts as the router's do, before o is done."""
        router = self.experts.router.float() * self.post_norm.weight.float()
        return router.to(self.experts.router.dtype), (router @ self.attn.o.weight.float()).to(self.experts.router.dtype)


@dataclasses.dataclass
class Decoder:
    """A traced decoder: the weights megagen reads, and the facts its graph needs.

    Under tensor parallelism each rank has its own Decoder holding its shard (``megagen.shard``):
    ``lm_head`` is then the rank's rows of the vocabulary, from ``vocab_offset``, ``vocab_valid`` of
    them real (the last shard is zero-padded to the others' height).
    """

    model: nn.Module
    family: object
    embed: torch.Tensor
    layers: list[Layer]
    final_norm: Norm
    lm_head: torch.Tensor
    rotary: nn.Module
    vocab_size: int
    hidden_size: int
    dtype: torch.dtype
    device: torch.device
    rank: int = 0
    tp: int = 1

    @property
    def vocab_offset(self) -> int:
        return self.rank * self.lm_head.shape[0]

    @property
    def vocab_valid(self) -> int:
        return min(self.lm_head.shape[0], self.vocab_size - self.vocab_offset)

    def rope_tables(self, max_seq_len: int) -> tuple[torch.Tensor, torch.Tensor]:
        """cos and sin [max_seq_len, head_dim], exactly as the model's rotary embedding computes them."""
        positions = torch.arange(max_seq_len, device=self.device)[None]
        probe = torch.empty(1, dtype=self.dtype, device=self.device)
        with torch.no_grad():
            cos, sin = self.rotary(probe, positions)
        return cos[0].contiguous(), sin[0].contiguous()


# What a leaf module of an unsupported kind does, for the error message.
_KNOWN_UNSUPPORTED = {
    "LayerNorm": "LayerNorm (mean-centred normalisation with bias); megagen maps RMSNorm",
    "Conv1D": "Conv1D (GPT-2's transposed linear layer); megagen maps nn.Linear",
    "GELUActivation": "GELU activation; megagen maps SiLU-gated MLPs",
    "NewGELUActivation": "GELU activation; megagen maps SiLU-gated MLPs",
    "GELU": "GELU activation; megagen maps SiLU-gated MLPs",
}


def _leaf_kind(module: nn.Module) -> str | None:
    cls = type(module).__name__
    if isinstance(module, nn.Linear):
        return "linear"
    if isinstance(module, nn.Embedding):
        return "embedding"
    if isinstance(module, (nn.Dropout, nn.Identity)):
        return "identity"
    if cls.endswith("RMSNorm") and hasattr(module, "variance_epsilon") and getattr(module, "weight", None) is not None:
        return "rmsnorm"
    if cls.endswith("RotaryEmbedding"):
        return "rotary"
    if isinstance(module, nn.SiLU) or cls == "SiLUActivation":
        return "silu"
    if cls.endswith("TopKRouter") and hasattr(module, "top_k") and getattr(module, "weight", None) is not None:
        return "router"
    return None


def _unsupported(path: str, module: nn.Module, what: str) -> UnsupportedModelError:
    return UnsupportedModelError(f"{path} ({type(module).__name__}): {what}. megagen cannot map this model; "
                                 "see megagen.models.families for what is supported")


def _check_leaves(model: nn.Module):
    for path, module in model.named_modules():
        if next(module.children(), None) is not None:
            continue
        if _leaf_kind(module) is None:
            cls = type(module).__name__
            what = _KNOWN_UNSUPPORTED.get(cls, f"an operation megagen has no task for ({cls})")
            raise _unsupported(path, module, what)


def _get(model: nn.Module, path: str, kind: str | None = None):
    module = model
    for part in path.split("."):
        module = getattr(module, part, None)
        if module is None:
            raise UnsupportedModelError(f"{type(model).__name__} has no '{path}': megagen expects the standard "
                                        "decoder layout (model.embed_tokens, model.layers, model.norm, lm_head)")
    if kind is not None and _leaf_kind(module) != kind:
        raise _unsupported(path, module, f"expected a {kind} here")
    return module


def _norm(model, path) -> Norm:
    m = _get(model, path, "rmsnorm")
    return Norm(m.weight, float(m.variance_epsilon))


def _linear(model, path, out_features: int, in_features: int, bias: bool | None = False) -> Projection:
    m = _get(model, path, "linear")
    if (m.out_features, m.in_features) != (out_features, in_features):
        raise _unsupported(path, m, f"shape [{m.out_features}, {m.in_features}] does not match the config's "
                                    f"[{out_features}, {in_features}]")
    if bias is not None and (m.bias is not None) != bias:
        raise _unsupported(path, m, "a bias on this projection" if m.bias is not None else "no bias here, "
                                    "where the rest of the model has one")
    return Projection(m.weight, m.bias)


def _dense_mlp(model, p: str, inter: int, hidden: int) -> dict:
    act = _get(model, f"{p}.mlp.act_fn")
    if _leaf_kind(act) != "silu":
        raise _unsupported(f"{p}.mlp.act_fn", act, "an activation other than SiLU")
    return dict(gate=_linear(model, f"{p}.mlp.gate_proj", inter, hidden),
                up=_linear(model, f"{p}.mlp.up_proj", inter, hidden),
                down=_linear(model, f"{p}.mlp.down_proj", hidden, inter))


def _experts(model, p: str, family, hidden: int) -> Experts:
    """A sparse block of exactly a router ('gate') and stacked gated experts ('experts'), nothing else."""
    block = _get(model, f"{p}.mlp")
    extra = [name for name, _ in block.named_children() if name not in ("gate", "experts")]
    if extra:
        path = f"{p}.mlp.{extra[0]}"
        raise _unsupported(path, _get(model, path), "a part of the mixture-of-experts block besides the router and "
                                                    "the routed experts (a shared expert?); megagen has no task for it")
    router = _get(model, f"{p}.mlp.gate", "router")
    experts = _get(model, f"{p}.mlp.experts")
    num = router.weight.shape[0]
    act = _get(model, f"{p}.mlp.experts.act_fn")
    if _leaf_kind(act) != "silu":
        raise _unsupported(f"{p}.mlp.experts.act_fn", act, "an activation other than SiLU")
    layout = dict(has_gate=True, has_bias=False, is_transposed=False, is_concatenated=True)
    odd = [k for k, v in layout.items() if getattr(experts, k, v) != v]
    gate_up, down = getattr(experts, "gate_up_proj", None), getattr(experts, "down_proj", None)
    if odd or not isinstance(gate_up, torch.Tensor) or not isinstance(down, torch.Tensor):
        raise _unsupported(f"{p}.mlp.experts", experts, f"an expert layout other than stacked gate_up_proj "
                                                        f"[E, 2I, H] and down_proj [E, H, I] ({', '.join(odd)})")
    inter = down.shape[-1]
    for name, module, w, shape in (("gate", router, router.weight, (num, hidden)),
                                   ("experts", experts, gate_up, (num, 2 * inter, hidden)),
                                   ("experts", experts, down, (num, hidden, inter))):
        if tuple(w.shape) != shape:
            raise _unsupported(f"{p}.mlp.{name}", module, f"weights of shape {tuple(w.shape)}, expected {shape}")
    if not 1 <= router.top_k <= num:
        raise _unsupported(f"{p}.mlp.gate", router, f"top_k {router.top_k} of {num} experts")
    if family.routing is None:
        raise _unsupported(f"{p}.mlp", block, f"experts in a {family.name} model, a family megagen maps as dense")
    renormalize, weight_dtype = family.routing(model.config, model.dtype)
    return Experts(router.weight, gate_up, down, int(router.top_k), renormalize, weight_dtype)


def trace(model) -> Decoder:
    """Map ``model`` onto megagen's parts, or raise UnsupportedModelError / MegagenError saying why not."""
    from transformers import PreTrainedModel

    from megagen.models import family_for
    if not isinstance(model, PreTrainedModel):
        raise MegagenError(f"megagen.build needs a transformers PreTrainedModel (a causal LM); got "
                           f"{type(model).__name__}")
    config = model.config
    _check_leaves(model)
    family = family_for(config.model_type)
    if family is None:
        raise UnsupportedModelError(f"{type(model).__name__}: model_type '{config.model_type}' has no megagen family; "
                                    "megagen.models.families lists the supported ones (llama, qwen2, qwen3, mistral, "
                                    "qwen3_moe, mixtral)")
    unsupported = family.unsupported(config)
    if unsupported:
        setting, why = unsupported[0]
        raise UnsupportedModelError(f"{type(model).__name__}: config.{setting} is set ({why}); megagen does not "
                                    "implement it")
    if getattr(config, "hidden_act", "silu") not in ("silu", "swish"):
        raise UnsupportedModelError(f"{type(model).__name__}: hidden_act '{config.hidden_act}'; megagen maps "
                                    "SiLU-gated MLPs")
    for setting in ("attn_logit_softcapping", "final_logit_softcapping"):
        if getattr(config, setting, None):
            raise UnsupportedModelError(f"{type(model).__name__}: config.{setting} (logit soft-capping) is not "
                                        "implemented")
    dtype = model.dtype
    if dtype not in SUPPORTED_DTYPES:
        raise MegagenError(f"the model's dtype is {dtype}; megagen supports float32, bfloat16 and float16 "
                           "(convert with model.to(torch.bfloat16))")
    mixed = sorted({str(p.dtype) for p in model.parameters()} - {str(dtype)})
    if mixed:
        raise MegagenError(f"the model mixes parameter dtypes ({dtype} and {', '.join(mixed)}); megagen rounds "
                           f"where HuggingFace does only with one dtype: convert with model.to({dtype})")
    devices = {p.device for p in model.parameters()}
    if len(devices) != 1:
        raise MegagenError(f"the model's parameters are on several devices {sorted(map(str, devices))}; "
                           "put the whole model on one device")

    hidden, vocab = config.hidden_size, config.vocab_size
    heads, kv_heads = config.num_attention_heads, config.num_key_value_heads
    inter = config.intermediate_size
    rotary = _get(model, "model.rotary_emb", "rotary")
    rope_type = getattr(rotary, "rope_type", "default")
    if rope_type not in STATIC_ROPE_TYPES:
        raise _unsupported("model.rotary_emb", rotary, f"rope_type '{rope_type}' changes with the sequence length; "
                                                       f"megagen supports {', '.join(STATIC_ROPE_TYPES)}")
    embed = _get(model, "model.embed_tokens", "embedding")
    if tuple(embed.weight.shape) != (vocab, hidden):
        raise _unsupported("model.embed_tokens", embed, f"shape {tuple(embed.weight.shape)} is not the config's "
                                                        f"({vocab}, {hidden})")
    stack = _get(model, "model.layers")
    if len(stack) != config.num_hidden_layers:
        raise _unsupported("model.layers", stack, f"{len(stack)} layers, the config says {config.num_hidden_layers}")

    layers = []
    for i in range(len(stack)):
        p = f"model.layers.{i}"
        attn_module = _get(model, f"{p}.self_attn")
        head_dim = getattr(attn_module, "head_dim", hidden // heads)
        q = _linear(model, f"{p}.self_attn.q_proj", heads * head_dim, hidden, bias=None)
        has_bias = q.bias is not None
        k = _linear(model, f"{p}.self_attn.k_proj", kv_heads * head_dim, hidden, bias=has_bias)
        v = _linear(model, f"{p}.self_attn.v_proj", kv_heads * head_dim, hidden, bias=has_bias)
        o = _linear(model, f"{p}.self_attn.o_proj", hidden, heads * head_dim)
        qk_norm = [_norm(model, f"{p}.self_attn.{n}") if hasattr(attn_module, n) else None
                   for n in ("q_norm", "k_norm")]
        if (qk_norm[0] is None) != (qk_norm[1] is None):
            raise _unsupported(f"{p}.self_attn", attn_module, "a norm on only one of q and k")
        if hasattr(_get(model, f"{p}.mlp"), "experts"):
            mlp = dict(gate=None, up=None, down=None, experts=_experts(model, p, family, hidden))
        else:
            mlp = _dense_mlp(model, p, inter, hidden)
        window = family.window(config, i, attn_module)
        layers.append(Layer(
            input_norm=_norm(model, f"{p}.input_layernorm"),
            attn=Attention(q, k, v, o, qk_norm[0], qk_norm[1], heads, kv_heads, head_dim,
                           float(attn_module.scaling), int(window) if window else None),
            post_norm=_norm(model, f"{p}.post_attention_layernorm"), **mlp))
    lm_head = _linear(model, "lm_head", vocab, hidden)
    return Decoder(model=model, family=family, embed=embed.weight, layers=layers,
                   final_norm=_norm(model, "model.norm"), lm_head=lm_head.weight, rotary=rotary,
                   vocab_size=vocab, hidden_size=hidden, dtype=dtype, device=next(iter(devices)))
