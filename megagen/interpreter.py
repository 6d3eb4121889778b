"""Fixes to Triton 3.6's CPU interpreter that megagen's CPU runs depend on (compiled kernels are untouched).

- Speed: the interpreter re-patches ``triton.language`` on every call of a ``@triton.jit`` device
  function, although the launch around it has already done so. That was over half of a decode step's
  time on the CPU; here a device function call inside a launch skips the redundant patching.
- bfloat16: the interpreter keeps bf16 values as their raw 16 bits in uint16 arrays and runs
  ``tl.dot`` and arithmetic on those integers (a bf16 ``tl.dot`` was off by 2.7e10), and it truncates
  fp32 -> bf16 casts where the GPU rounds to nearest even. Here bf16 dots and arithmetic run on the
  values, in fp32, rounded back to bf16 to nearest even, as on the GPU.
- Scalars: a 1-element array becomes a Python int with ``.item()`` (NumPy 2.4 refuses ``int()`` there).
"""
from __future__ import annotations

import numpy as np

_APPLIED = "megagen_fixes"


def apply() -> None:
    """Install the fixes once (idempotent); call before any kernel runs under the interpreter."""
    from triton.runtime import interpreter

    if getattr(interpreter, _APPLIED, False):
        return
    _patch_language_once_per_launch(interpreter)
    _index_scalars_with_item(interpreter)
    _bf16_as_values(interpreter)
    setattr(interpreter, _APPLIED, True)


def _patch_language_once_per_launch(interpreter) -> None:
    import triton.language as tl

    original = interpreter._patch_lang
    patched: set[int] = set()  # the language modules a launch in progress has patched

    class _NothingToRestore:
        def restore(self):
            pass

    def patch_lang(fn):
        langs = {id(v) for v in fn.__globals__.values() if v is tl or v is tl.core}
        if langs and langs <= patched:
            return _NothingToRestore()
        scope = original(fn)
        added = langs - patched
        patched.update(added)
        restore = scope.restore

        def restore_and_forget():
            restore()
            patched.difference_update(added)

        scope.restore = restore_and_forget
        return scope

    interpreter._patch_lang = patch_lang


def _index_scalars_with_item(interpreter) -> None:
    original = interpreter._patch_lang_tensor

    def patch_lang_tensor(tensor, scope):
        original(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.item()))

    interpreter._patch_lang_tensor = patch_lang_tensor


def bf16_bits_to_f32(bits: np.ndarray) -> np.ndarray:
    """bf16 values held as uint16 bits -> float32 (exact)."""
    return (np.asarray(bits).astype(np.uint32) << 16).view(np.float32)


def f32_to_bf16_bits(values: np.ndarray) -> np.ndarray:
    """float32 -> bf16 bits (uint16), rounded to nearest even as the GPU's cvt.rn.bf16.f32; NaN stays NaN."""
    u = np.asarray(values, dtype=np.float32).view(np.uint32)
    rounded = ((u + np.uint32(0x7FFF) + ((u >> 16) & np.uint32(1))) >> 16).astype(np.uint16)
    return np.where(np.isnan(values), np.uint16(0x7FC0), rounded)


def _bf16_as_values(interpreter) -> None:
    import triton.language as tl

    builder = interpreter.InterpreterBuilder
    Handle = interpreter.TensorHandle

    def is_bf16(handle):
        return handle.dtype.scalar == tl.bfloat16

    dot, binary_op, cast = builder.create_dot, builder.binary_op, builder.cast_impl

    def create_dot(self, a, b, d, input_precision, max_num_imprecise_acc):
        a = Handle(bf16_bits_to_f32(a.data), tl.float32) if is_bf16(a) else a
        b = Handle(bf16_bits_to_f32(b.data), tl.float32) if is_bf16(b) else b
        return dot(self, a, b, d, input_precision, max_num_imprecise_acc)

    def create_binary_op(self, lhs, rhs, op):
        if not (is_bf16(lhs) and is_bf16(rhs)):
            return binary_op(self, lhs, rhs, op)
        out = op(bf16_bits_to_f32(lhs.data), bf16_bits_to_f32(rhs.data))
        if out.dtype == np.float32:
            return Handle(f32_to_bf16_bits(out), tl.bfloat16)
        return Handle(out.astype(np.uint16), tl.bfloat16)  # a comparison: as the interpreter stores it

    def cast_impl(self, src, dst_type):
        if dst_type.scalar == tl.bfloat16 and src.dtype.scalar == tl.float32:
            return Handle(f32_to_bf16_bits(src.data), tl.bfloat16)
        return cast(self, src, dst_type)

    builder.create_dot = create_dot
    builder.binary_op = create_binary_op
    builder.cast_impl = cast_impl
