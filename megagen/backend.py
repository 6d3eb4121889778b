"""Where MegaKernels run: a CUDA GPU, or Triton's interpreter on the CPU when there is none."""
from __future__ import annotations

import os

import torch


def interpreting() -> bool:
    """True when Triton runs kernels in its CPU interpreter (TRITON_INTERPRET=1)."""
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def use_interpreter_without_gpu() -> bool:
    """Switch Triton to its interpreter when no CUDA GPU is visible; must run before kernels are decorated."""
    if "TRITON_INTERPRET" not in os.environ and not torch.cuda.is_available():
        os.environ["TRITON_INTERPRET"] = "1"
    if interpreting():
        from megagen import interpreter
        interpreter.apply()
    return interpreting()


def default_device() -> torch.device:
    """The device graphs should live on: the current GPU, or the CPU under the interpreter."""
    return torch.device("cpu") if interpreting() else torch.device("cuda", torch.cuda.current_device())


def num_sms(device: torch.device) -> int:
    return torch.cuda.get_device_properties(device).multi_processor_count
