"""Shared fixtures for the megagen test suite.

``import megagen`` comes first so that, without a CUDA GPU, Triton is switched to
its CPU interpreter before any test module decorates a ``@triton.jit`` function.
Helpers that test modules import directly live in ``mgutil.py`` next to this file.
"""
import megagen  # noqa: F401  (must precede every @triton.jit in the test modules)
import pytest
import torch
from hypothesis import HealthCheck, settings

from megagen.backend import default_device
from mgutil import SCHEDULERS, assert_matches

settings.register_profile("megagen", deadline=None, derandomize=True, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile("megagen")


@pytest.fixture(scope="session", autouse=True)
def megagen_cache_dir(tmp_path_factory):
    """Generated modules go to a fresh cache directory, not ~/.cache/megagen."""
    path = tmp_path_factory.mktemp("megagen_cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MEGAGEN_CACHE_DIR", str(path))
        yield path


@pytest.fixture(scope="session")
def device() -> torch.device:
    """Where graph tensors live: the GPU when there is one, the CPU under Triton's interpreter."""
    return default_device()


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


@pytest.fixture(params=SCHEDULERS)
def scheduler(request) -> str:
    return request.param


@pytest.fixture
def check():
    """``check(actual, expected)``: compare a MegaKernel result with plain PyTorch, NaN-poison aware."""
    return assert_matches
