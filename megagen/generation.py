"""generate's choice of tokens: greedy, or a draw with HuggingFace's warpers, resolved as HuggingFace resolves it.

``model.generate`` takes each setting from the call, else from the model's ``generation_config``, else from
HuggingFace's global defaults (``GenerationConfig._get_default_generation_params``: no sampling, temperature 1,
top_k 50, top_p 1); a setting the call passes as None turns its warper off. ``resolve`` does the same and
checks the values before any work, so bad input is a ``MegagenError`` and the runner stays usable.
"""
from __future__ import annotations

import dataclasses
import math

import triton

from megagen.errors import MegagenError, UnsupportedModelError

SAMPLING_OPTIONS = ("do_sample", "temperature", "top_k", "top_p")
HF_DEFAULTS = {"do_sample": False, "temperature": 1.0, "top_k": 50, "top_p": 1.0}
# generation_config warpers HuggingFace applies after top-p when sampling, which megagen has no task for, with their
# neutral values
_OTHER_WARPERS = {"min_p": (None,), "top_h": (None,), "typical_p": (None, 1.0), "epsilon_cutoff": (None, 0.0),
                  "eta_cutoff": (None, 0.0)}


@dataclasses.dataclass(frozen=True)
class Sampling:
    """How each new token is chosen. ``top_k`` is what the sampling tasks read: 0 when top-k keeps every token
    (HuggingFace's None or 0, or a top_k of the whole vocabulary); ``seed`` keys the draw's noise."""

    do_sample: bool = False
    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    seed: int = 0


GREEDY = Sampling()


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def resolve(generation_config, options: dict, *, vocab_size: int, max_top_k: int) -> Sampling:
    """The Sampling that ``generate(**options)`` asks for, HuggingFace's way; MegagenError if a value is out of
    range (``temperature`` <= 0 when sampling, ``top_p`` outside (0, 1], a negative ``top_k``) or the draw needs
    more than ``max_top_k`` candidates a row."""
    values, source = {}, {}
    for name in SAMPLING_OPTIONS:
        if name in options:
            values[name], source[name] = options[name], ""
        else:
            value = getattr(generation_config, name, None)
            values[name] = HF_DEFAULTS[name] if value is None else value
            source[name] = " (from the model's generation_config)"
    do_sample, temperature, top_k, top_p = (values[n] for n in SAMPLING_OPTIONS)
    if do_sample is not None and not isinstance(do_sample, bool):
        raise MegagenError(f"do_sample must be True, False or None, got {do_sample!r}{source['do_sample']}")
    for name, value in (("temperature", temperature), ("top_p", top_p)):
        if value is not None and not _is_number(value):
            raise MegagenError(f"{name} must be a number or None, got {value!r}{source[name]}")
    if top_k is not None and not (isinstance(top_k, int) and not isinstance(top_k, bool)):
        raise MegagenError(f"top_k must be an int or None, got {top_k!r}{source['top_k']}")
    # values the call passes are checked even when greedy ignores them; the model's only when they are used
    checked = {name for name in SAMPLING_OPTIONS if do_sample or not source[name]}
    if "top_k" in checked and top_k is not None and top_k < 0:
        raise MegagenError(f"top_k must be >= 0 (0 or None: no top-k), got {top_k}{source['top_k']}")
    if "top_p" in checked and top_p is not None and not 0 < top_p <= 1:
        raise MegagenError(f"top_p must be in (0, 1] (1 or None: no top-p), got {top_p}{source['top_p']}")
    if not do_sample:
        return GREEDY
    if temperature is not None and not (temperature > 0 and math.isfinite(temperature)):
        raise MegagenError(f"temperature must be a positive number when sampling, got {temperature}"
                           f"{source['temperature']}; for greedy decoding pass do_sample=False")
    refuse_settings(generation_config, _OTHER_WARPERS, "megagen samples with temperature, top_k and top_p only",
                    "min_p = None")
    temperature = 1.0 if temperature is None else float(temperature)
    top_p = 1.0 if top_p is None else float(top_p)
    k = vocab_size if not top_k else min(top_k, vocab_size)  # HuggingFace's TopK clips to the vocabulary
    if k == vocab_size and top_p == 1.0:
        k = 0  # nothing is cut: a draw over the whole vocabulary
    elif k > max_top_k:
        if not top_k:
            raise MegagenError(f"top_p={top_p} without top_k would rank the whole vocabulary; megagen's sampler ranks "
                               f"at most max_top_k={max_top_k} tokens a row: pass a top_k of at most {max_top_k} "
                               "(HuggingFace's default is 50), or build with a larger max_top_k")
        raise MegagenError(f"top_k={top_k}{source['top_k']} is more than max_top_k={max_top_k}, the tokens megagen's "
                           f"sampler ranks a row; build with max_top_k={triton.next_power_of_2(k)} or lower top_k")
    return Sampling(True, temperature, k, top_p)


def refuse_settings(generation_config, neutral: dict, why: str, example: str) -> None:
    """An UnsupportedModelError naming the settings of ``generation_config`` that are not at one of their
    ``neutral`` values (settings megagen has no task for, under which it would not do what model.generate does)."""
    active = [f"{name}={getattr(generation_config, name)!r}" for name, values in neutral.items()
              if getattr(generation_config, name, None) not in values]
    if active:
        raise UnsupportedModelError(
            f"the model's generation_config sets {', '.join(active)}; {why}, so it would not return what "
            f"model.generate does. Reset them (e.g. model.generation_config.{example}) to generate with megagen")
