"""megagen.torch_tp: the tensor-parallel baseline's sharded model gives the unsharded model's logits.

Two processes on the CPU (gloo) shard tiny random models of three families and run a prefill and
greedy decode steps with a DynamicCache and with a StaticCache (as megagen.bench.hf_static does,
less the CUDA graph); rank 0 compares the logits with those of an unsharded copy.
"""
import os

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from transformers import DynamicCache, StaticCache

from megagen import models
from megagen.errors import MegagenError
from megagen.torch_tp import shard_hf_model_

WORLD = 2
# tied lm_head; q/k/v biases; llama3 rope and biases on every projection (o_proj, down_proj included)
PRESETS = {"tiny-qwen3": {}, "tiny-qwen2": {}, "tiny-llama": {"attention_bias": True, "mlp_bias": True}}
PROMPT, STEPS = 7, 3


def _model(name: str):
    """The preset with random weights, its biases (zero from HuggingFace's init) random too."""
    model = models.random_model(name, dtype=torch.float32, seed=0, **PRESETS[name])
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for key, p in model.named_parameters():
            if key.endswith(".bias"):
                p.copy_(torch.randn(p.shape, generator=generator))
    return model


def _decode(model, prompt, cache, static: bool):
    """Logits of the prompt's last token and of ``STEPS`` greedy steps after it, and the tokens chosen."""
    logits, tokens = [], []
    length = prompt.shape[1]
    out = model(input_ids=prompt, past_key_values=cache, use_cache=True,
                **({"cache_position": torch.arange(length)} if static else {}))
    for step in range(STEPS + 1):
        logits.append(out.logits[:, -1])
        if step == STEPS:
            break
        token = out.logits[:, -1].argmax(-1, keepdim=True)
        tokens.append(token)
        position = torch.full((1,), length + step)
        out = model(input_ids=token, past_key_values=cache, use_cache=True,
                    **({"cache_position": position, "position_ids": position[None]} if static else {}))
    return torch.stack(logits), torch.cat(tokens, 1)


def _worker(rank: int, init_method: str):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=init_method, rank=rank, world_size=WORLD)
    try:
        with torch.no_grad():
            for name in PRESETS:
                reference, model = _model(name), shard_hf_model_(_model(name), rank, WORLD)
                cfg = reference.config
                assert model.config.num_key_value_heads == cfg.num_key_value_heads // WORLD
                for p in model.parameters():  # copies, not views keeping the full weights alive
                    assert p.is_contiguous() and p.untyped_storage().nbytes() == p.numel() * p.element_size()
                torch.manual_seed(1)
                prompt = torch.randint(3, cfg.vocab_size, (2, PROMPT))
                for static in (False, True):
                    caches = [StaticCache(config=m.config, max_cache_len=PROMPT + STEPS + 1) if static
                              else DynamicCache() for m in (reference, model)]
                    want, want_tokens = _decode(reference, prompt, caches[0], static)
                    got, got_tokens = _decode(model, prompt, caches[1], static)
                    assert caches[1].layers[0].keys.shape[1] == cfg.num_key_value_heads // WORLD
                    if rank == 0:
                        assert got.shape == want.shape
                        error = ((got - want).abs().max() / want.abs().max()).item()
                        assert error < 1e-4, f"{name} ({'static' if static else 'dynamic'} cache): {error=}"
                        assert torch.equal(got_tokens, want_tokens), name
    finally:
        dist.destroy_process_group()
    # Skip the interpreter's teardown: a gloo worker thread may still be releasing the last collective's
    # tensors, and taking the GIL while Python finalizes aborts the process (see pytorch/pytorch#179291).
    os._exit(0)


def test_sharded_logits_match_unsharded(tmp_path):
    mp.spawn(_worker, args=(f"file://{tmp_path / 'rendezvous'}",), nprocs=WORLD, join=True)


@pytest.mark.parametrize("world, message", [(3, "num_attention_heads=4"), (4, "num_key_value_heads=2")])
def test_world_must_divide_heads(world, message):
    model = models.random_model("tiny-qwen3", dtype=torch.float32)
    weight = model.model.layers[0].self_attn.q_proj.weight
    with pytest.raises(MegagenError, match=message):
        shard_hf_model_(model, 0, world)
    assert model.model.layers[0].self_attn.q_proj.weight is weight  # left untouched
    assert model.config.num_attention_heads == 4


def test_sharding_twice_is_refused():
    model = shard_hf_model_(models.random_model("tiny-qwen3", dtype=torch.float32), 0, 2)
    with pytest.raises(MegagenError, match="already sharded"):
        shard_hf_model_(model, 0, 2)
