"""megagen.interpreter: Triton's CPU interpreter made right for bf16 and fast for nested device functions.

The bf16 tests run compiled on a GPU too, where they check that the interpreter and the GPU agree.
"""
import pytest
import torch
import triton
import triton.language as tl

import megagen  # noqa: F401  (applies the fixes before the kernels below are decorated)
from megagen.backend import interpreting


@triton.jit
def _dot_kernel(a, b, c, N: tl.constexpr):
    i = tl.arange(0, N)
    x = tl.load(a + i[:, None] * N + i[None, :])
    y = tl.load(b + i[:, None] * N + i[None, :])
    tl.store(c + i[:, None] * N + i[None, :], tl.dot(x, y))


@triton.jit
def _elementwise_kernel(a, b, add, mul, less, rounded, N: tl.constexpr):
    i = tl.arange(0, N)
    x = tl.load(a + i)
    y = tl.load(b + i)
    tl.store(add + i, x + y)
    tl.store(mul + i, x * y)
    tl.store(less + i, (x < y).to(tl.int32))
    tl.store(rounded + i, (x.to(tl.float32) * 1.001).to(tl.bfloat16))


def test_bf16_dot_multiplies_values(device):
    a, b = (torch.randn(16, 16, device=device).to(torch.bfloat16) for _ in range(2))
    c = torch.empty(16, 16, device=device)
    _dot_kernel[(1,)](a, b, c, N=16)
    torch.testing.assert_close(c, a.float() @ b.float(), rtol=1e-5, atol=1e-5)


def test_bf16_arithmetic_and_casts_round_as_torch(device):
    n = 256
    a = (torch.randn(n, device=device) * 3).to(torch.bfloat16)
    b = (torch.randn(n, device=device) * 3).to(torch.bfloat16)
    add, mul, rounded = (torch.empty(n, device=device, dtype=torch.bfloat16) for _ in range(3))
    less = torch.empty(n, device=device, dtype=torch.int32)
    _elementwise_kernel[(1,)](a, b, add, mul, less, rounded, N=n)
    assert torch.equal(add, a + b) and torch.equal(mul, a * b)  # torch: fp32 math, rounded to nearest even
    assert torch.equal(less.bool(), a < b)
    assert torch.equal(rounded, (a.float() * 1.001).to(torch.bfloat16))


@triton.jit
def _twice(x):
    return x * 2


@triton.jit
def _nested_kernel(out, CALLS: tl.constexpr):
    v = tl.arange(0, 8)
    for _ in tl.static_range(CALLS):
        v = _twice(v)
    tl.store(out + tl.arange(0, 8), v)


@pytest.mark.skipif(not interpreting(), reason="interpreter behaviour")
def test_device_function_calls_do_not_repatch_the_language(monkeypatch):
    from triton.runtime import interpreter

    patches = []
    original = interpreter._patch_builtin
    monkeypatch.setattr(interpreter, "_patch_builtin", lambda *a: patches.append(1) or original(*a))
    out = torch.empty(8, dtype=torch.int32)
    counts = []
    for calls in (0, 5):
        patches.clear()
        _nested_kernel[(1,)](out, CALLS=calls)
        counts.append(len(patches))
    assert torch.equal(out, torch.arange(8, dtype=torch.int32) * 32)
    assert counts[0] > 0 and counts[1] == counts[0], f"language patched {counts} times for 0 and 5 nested calls"
