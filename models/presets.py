"""Configs of real checkpoints (public config.json shapes) and tiny configs for CPU tests.

No hub is reachable, so models are built from these with random weights (``random_model``).
"""
from __future__ import annotations

import torch

# Shapes of public checkpoints (their config.json values; rope settings as in the checkpoints).
PRESETS: dict[str, dict] = {
    'Qwen3-0.6B': {'model_type': 'qwen3', 'hidden_size': 1024, 'intermediate_size': 3072, 'num_hidden_layers': 28, 'num_attention_heads': 16, 'num_key_value_heads': 8, 'head_dim': 128, 'vocab_size': 151936, 'rms_norm_eps': 1e-06, 'rope_theta': 1000000, 'max_position_embeddings': 40960, 'tie_word_embeddings': True},
    'Qwen3-1.7B': {'model_type': 'qwen3', 'hidden_size': 2048, 'intermediate_size': 6144, 'num_hidden_layers': 28, 'num_attention_heads': 16, 'num_key_value_heads': 8, 'head_dim': 128, 'vocab_size': 151936, 'rms_norm_eps': 1e-06, 'rope_theta': 1000000, 'max_position_embeddings': 40960, 'tie_word_embeddings': True},
    'Qwen3-4B': {'model_type': 'qwen3', 'hidden_size': 2560, 'intermediate_size': 9728, 'num_hidden_layers': 36, 'num_attention_heads': 32, 'num_key_value_heads': 8, 'head_dim': 128, 'vocab_size': 151936, 'rms_norm_eps': 1e-06, 'rope_theta': 1000000, 'max_position_embeddings': 40960, 'tie_word_embeddings': True},
    'Qwen3-8B': {'model_type': 'qwen3', 'hidden_size': 4096, 'intermediate_size': 12288, 'num_hidden_layers': 36, 'num_attention_heads': 32, 'num_key_value_heads': 8, 'head_dim': 128, 'vocab_size': 151936, 'rms_norm_eps': 1e-06, 'rope_theta': 1000000, 'max_position_embeddings': 40960, 'tie_word_embeddings': False},
    'Qwen3-14B': {'model_type': 'qwen3', 'hidden_size': 5120, 'intermediate_size': 17408, 'num_hidden_layers': 40, 'num_attention_heads': 40, 'num_key_value_heads': 8, 'head_dim': 128, 'vocab_size': 151936, 'rms_norm_eps': 1e-06, 'rope_theta': 1000000, 'max_position_embeddings': 40960, 'tie_word_embeddings': False},
    'Qwen3-32B': {'model_type': 'qwen3', 'hidden_size': 5120, 'intermediate_size': 25600, 'num_hidden_layers': 64, 'num_attention_heads': 64, 'num_key_value_heads': 8, 'head_dim': 128, 'vocab_size': 151936, 'rms_norm_eps': 1e-06, 'rope_theta': 1000000, 'max_position_embeddings': 40960, 'tie_word_embeddings': False},
    'Llama-3.2-1B': {'model_type': 'llama', 'hidden_size': 2048, 'intermediate_size': 8192, 'num_hidden_layers': 16, 'num_attention_heads': 32, 'num_key_value_heads': 8, 'head_dim': 64, 'vocab_size': 128256, 'rms_norm_eps': 1e-05, 'rope_theta': 500000, 'rope_scaling': {'rope_type': 'llama3', 'factor': 32.0, 'low_freq_factor': 1.0, 'high_freq_factor': 4.0, 'original_max_position_embeddings': 8192}, 'max_position_embeddings': 131072, 'tie_word_embeddings': True},
    'Llama-3.2-3B': {'model_type': 'llama', 'hidden_size': 3072, 'intermediate_size': 8192, 'num_hidden_layers': 28, 'num_attention_heads': 24, 'num_key_value_heads': 8, 'head_dim': 128, 'vocab_size': 128256, 'rms_norm_eps': 1e-05, 'rope_theta': 500000, 'rope_scaling': {'rope_type': 'llama3', 'factor': 32.0, 'low_freq_factor': 1.0, 'high_freq_factor': 4.0, 'original_max_position_embeddings': 8192}, 'max_position_embeddings': 131072, 'tie_word_embeddings': True},
    'Llama-3.1-8B': {'model_type': 'llama', 'hidden_size': 4096, 'intermediate_size': 14336, 'num_hidden_layers': 32, 'num_attention_heads': 32, 'num_key_value_heads': 8, 'head_dim': 128, 'vocab_size': 128256, 'rms_norm_eps': 1e-05, 'rope_theta': 500000, 'rope_scaling': {'rope_type': 'llama3', 'factor': 8.0, 'low_freq_factor': 1.0, 'high_freq_factor': 4.0, 'original_max_position_embeddings': 8192}, 'max_position_embeddings': 131072, 'tie_word_embeddings': False},
    'Llama-3.1-70B': {'model_type': 'llama', 'hidden_size': 8192, 'intermediate_size': 28672, 'num_hidden_layers': 80, 'num_attention_heads': 64, 'num_key_value_heads': 8, 'head_dim': 128, 'vocab_size': 128256, 'rms_norm_eps': 1e-05, 'rope_theta': 500000, 'rope_scaling': {'rope_type': 'llama3', 'factor': 8.0, 'low_freq_factor': 1.0, 'high_freq_factor': 4.0, 'original_max_position_embeddings': 8192}, 'max_position_embeddings': 131072, 'tie_word_embeddings': False},
    'Qwen2.5-7B': {'model_type': 'qwen2', 'hidden_size': 3584, 'intermediate_size': 18944, 'num_hidden_layers': 28, 'num_attention_heads': 28, 'num_key_value_heads': 4, 'head_dim': 128, 'vocab_size': 152064, 'rms_norm_eps': 1e-06, 'rope_theta': 1000000, 'max_position_embeddings': 32768, 'tie_word_embeddings': False, '_note': 'q/k/v projections carry a bias'},
    'Mistral-7B-v0.3': {'model_type': 'mistral', 'hidden_size': 4096, 'intermediate_size': 14336, 'num_hidden_layers': 32, 'num_attention_heads': 32, 'num_key_value_heads': 8, 'head_dim': 128, 'vocab_size': 32768, 'rms_norm_eps': 1e-05, 'rope_theta': 1000000, 'max_position_embeddings': 32768, 'tie_word_embeddings': False},
    'Qwen3-30B-A3B': {'model_type': 'qwen3_moe', 'hidden_size': 2048, 'intermediate_size': 6144, 'moe_intermediate_size': 768, 'num_experts': 128, 'num_experts_per_tok': 8, 'norm_topk_prob': True, 'decoder_sparse_step': 1, 'mlp_only_layers': [], 'num_hidden_layers': 48, 'num_attention_heads': 32, 'num_key_value_heads': 4, 'head_dim': 128, 'vocab_size': 151936, 'rms_norm_eps': 1e-06, 'rope_theta': 1000000, 'max_position_embeddings': 40960, 'tie_word_embeddings': False, '_note': 'mixture of experts: 128 experts, 8 routed per token; about 30.5B parameters, 3.3B active per token'},
    'Mixtral-8x7B-v0.1': {'model_type': 'mixtral', 'hidden_size': 4096, 'intermediate_size': 14336, 'num_local_experts': 8, 'num_experts_per_tok': 2, 'num_hidden_layers': 32, 'num_attention_heads': 32, 'num_key_value_heads': 8, 'head_dim': 128, 'vocab_size': 32000, 'rms_norm_eps': 1e-05, 'rope_theta': 1000000.0, 'max_position_embeddings': 32768, 'sliding_window': None, 'tie_word_embeddings': False, '_note': 'mixture of experts: 8 experts, 2 routed per token; about 46.7B parameters (93 GB in bf16), 12.9B active'},
}

_TINY = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, head_dim=16, vocab_size=256, max_position_embeddings=256)

# Tiny configs, one per family, that exercise what distinguishes it (CPU tests and the CPU demo).
PRESETS.update({
    "tiny-qwen3": dict(model_type="qwen3", rms_norm_eps=1e-6, rope_theta=1000000, tie_word_embeddings=True, **_TINY),
    "tiny-llama": dict(model_type="llama", rms_norm_eps=1e-5, rope_theta=500000, tie_word_embeddings=False,
                       rope_scaling={"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
                                     "high_freq_factor": 4.0, "original_max_position_embeddings": 16}, **_TINY),
    "tiny-qwen2": dict(model_type="qwen2", rms_norm_eps=1e-6, rope_theta=1000000, tie_word_embeddings=False, **_TINY),
    "tiny-mistral": dict(model_type="mistral", rms_norm_eps=1e-5, rope_theta=1000000, tie_word_embeddings=False,
                         sliding_window=8, **_TINY),
    # mixtures of experts: 8 experts, 2 routed; Qwen3-MoE's middle layer is dense (mlp_only_layers)
    "tiny-qwen3-moe": dict(model_type="qwen3_moe", rms_norm_eps=1e-6, rope_theta=1000000, tie_word_embeddings=False,
                           moe_intermediate_size=32, num_experts=8, num_experts_per_tok=2, norm_topk_prob=True,
                           decoder_sparse_step=1, mlp_only_layers=[1], **{**_TINY, "num_hidden_layers": 3}),
    "tiny-mixtral": dict(model_type="mixtral", rms_norm_eps=1e-5, rope_theta=1000000, tie_word_embeddings=False,
                         num_local_experts=8, num_experts_per_tok=2, sliding_window=None,
                         **{**_TINY, "intermediate_size": 32}),
})


def preset_config(name: str, **overrides):
    """A transformers config for preset ``name`` (keys of PRESETS), with overrides."""
    from transformers import AutoConfig
    from megagen.errors import MegagenError
    if name not in PRESETS:
        raise MegagenError(f"unknown preset {name!r}; choose one of {sorted(PRESETS)}")
    values = {k: v for k, v in {**PRESETS[name], **overrides}.items() if not k.startswith("_")}  # "_note"s
    return AutoConfig.for_model(values.pop("model_type"), **values)


def random_model(name_or_config, *, dtype=torch.bfloat16, device="cpu", seed=0, **overrides):
    """A causal LM with random weights from a preset name or a config, in eval mode.

    HuggingFace's initialisation draws weights from N(0, initializer_range) and sets norms to one;
    the norms are drawn around one here too, so every weight of the model matters to its output.
    """
    from transformers import AutoModelForCausalLM
    config = preset_config(name_or_config, **overrides) if isinstance(name_or_config, str) else name_or_config
    torch.manual_seed(seed)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(config, dtype=dtype)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.uniform_(0.5, 1.5)
    return model.eval()


def load(name_or_path: str, *, dtype=torch.bfloat16, device="cpu", **overrides):
    """A preset with random weights, or a local checkpoint directory loaded with ``from_pretrained``."""
    import os
    if name_or_path not in PRESETS and not os.path.isdir(name_or_path):
        from megagen.errors import MegagenError
        raise MegagenError(f"{name_or_path!r} is neither a preset nor a checkpoint directory; give a local "
                           f"directory holding config.json and the weights, or a preset: {', '.join(sorted(PRESETS))}")
    if os.path.isdir(name_or_path):
        from transformers import AutoModelForCausalLM
        return AutoModelForCausalLM.from_pretrained(name_or_path, dtype=dtype).to(device).eval()
    return random_model(name_or_path, dtype=dtype, device=device, **overrides)
