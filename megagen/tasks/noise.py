"""The noise of a draw: Gumbel variates keyed by (seed, position, batch row, token id), in Triton and in torch.

The sampling tasks draw by Gumbel-max: the token drawn is the argmax of ``logit / temperature + g`` over the
tokens the warpers keep, with ``g`` standard Gumbel, one per token; that is a draw from the softmax of the kept
scores. Each token's ``g`` depends only on the seed and its counter (token id, batch row, position), never on
which block or tensor-parallel rank holds the token, so every split of the vocabulary draws the same token.

``g`` comes from Philox, Triton's counter-based generator (``tl.philox``, as behind ``tl.rand``): two of its four
32-bit words make a 64-bit uniform ``u``, and ``g = -log(E)`` with ``E = -log(u)`` computed from whichever of
``u`` and ``1 - u`` is below one half, so that E keeps float32's relative precision at both ends. (``tl.rand``'s
float32 uniform steps by 2^-24 near one, which would cap g at 16.6 and make its upper tail coarse, where the
winner over a large vocabulary lies.)

``gumbel_torch`` computes the same numbers in torch, bit for bit up to the logarithms' last-place rounding: the
tasks' references use it, and so does the first token of a generation, drawn from the prefill's logits.
"""
import torch
import triton
import triton.language as tl

_MASK32 = 0xFFFFFFFF
# Philox-4x32-10's constants, as triton.language.random has them
_ROUND_A, _ROUND_B = 0xD2511F53, 0xCD9E8D57
_KEY_A, _KEY_B = 0x9E3779B9, 0xBB67AE85
_ROUNDS = 10


@triton.jit
def gumbel(seed, position, row, token):
    """Standard Gumbel noise for token ids ``token`` at ``position`` of batch row ``row`` (blocks that broadcast)."""
    zero = (token * 0 + row * 0 + position * 0).to(tl.uint32)
    r0, r1, _, _ = tl.philox(seed, zero + token.to(tl.uint32), zero + row.to(tl.uint32),
                             zero + position.to(tl.uint32), zero)
    upper = (r0 >> 31) == 1  # u >= 1/2: take 1 - u, whose 64 bits are u's complemented
    hi = tl.where(upper, r0 ^ 0xFFFFFFFF, r0).to(tl.float32)
    lo = tl.where(upper, r1 ^ 0xFFFFFFFF, r1).to(tl.float32)
    small = hi * 2.3283064365386963e-10 + (lo + 0.5) * 5.421010862427522e-20  # min(u, 1 - u) in (0, 1/2]
    rest = 1.0 - small
    # E = -log(u): -log(small) when u < 1/2, else -log1p(-small), by Goldberg's exact log1p (one log either way)
    log = tl.log(tl.where(upper, rest, small))
    exponential = tl.where(upper, tl.where(rest == 1.0, small, -log * small / tl.maximum(1.0 - rest, 1e-30)), -log)
    return -tl.log(exponential)


def _mul_hi_lo(a: int, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The high and low 32 bits of a * b for 32-bit a and b (b: int64 tensor), in 16-bit halves: no overflow."""
    a1, a0 = a >> 16, a & 0xFFFF
    b1, b0 = b >> 16, b & 0xFFFF
    middle, low = a1 * b0 + a0 * b1, a0 * b0
    return (a1 * b1 + ((middle + (low >> 16)) >> 16)) & _MASK32, ((middle << 16) + low) & _MASK32


def _philox(seed: int, c0, c1, c2, c3) -> tuple[torch.Tensor, torch.Tensor]:
    """Triton's tl.philox (4x32, 10 rounds) on int64 tensors holding 32-bit words: its first two words."""
    k0, k1 = seed & _MASK32, (seed >> 32) & _MASK32
    for _ in range(_ROUNDS):
        hi_b, lo_b = _mul_hi_lo(_ROUND_B, c2)
        hi_a, lo_a = _mul_hi_lo(_ROUND_A, c0)
        c0, c1, c2, c3 = hi_b ^ c1 ^ k0, lo_b, hi_a ^ c3 ^ k1, lo_a
        k0, k1 = (k0 + _KEY_A) & _MASK32, (k1 + _KEY_B) & _MASK32
    return c0, c1


def gumbel_torch(seed: int, position: torch.Tensor, row: torch.Tensor, token: torch.Tensor) -> torch.Tensor:
    """``gumbel`` in torch (float32), for int64 tensors that broadcast together."""
    position, row, token = torch.broadcast_tensors(position, row, token)
    r0, r1 = _philox(seed, token & _MASK32, row & _MASK32, position & _MASK32, torch.zeros_like(token))
    upper = r0 >= 1 << 31
    hi = torch.where(upper, r0 ^ _MASK32, r0).float()
    lo = torch.where(upper, r1 ^ _MASK32, r1).float()
    small = hi * 2.0 ** -32 + (lo + 0.5) * 2.0 ** -64
    rest = 1.0 - small
    log = torch.log(torch.where(upper, rest, small))
    exponential = torch.where(upper, torch.where(rest == 1.0, small, -log * small / torch.clamp(1.0 - rest, min=1e-30)),
                              -log)
    return -torch.log(exponential)


__all__ = ["gumbel", "gumbel_torch"]
