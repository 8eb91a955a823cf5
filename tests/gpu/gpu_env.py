"""What the GPU tests need, and why a test is skipped when it is missing.

Build tests need ``nvcc`` only (they compile CUDA on CPU-only machines);
runtime tests need an NVIDIA GPU, cupy and ``nvcc``.
"""

from __future__ import annotations

import functools
import os
from typing import Optional

import pytest

from orchestra.toolchain import nvcc_path

#: Architecture of compile-only builds (any supported one proves the code compiles).
BUILD_CUDA_ARCH = os.environ.get("ORCHESTRA_CUDA_ARCH", "90")


def nvcc_missing_reason() -> Optional[str]:
    if nvcc_path() is None:
        return "nvcc not found (set CUDACXX or put the CUDA toolkit's bin/ on PATH)"
    return None


@functools.cache
def gpu_missing_reason() -> Optional[str]:
    """None when an NVIDIA GPU can run the tests, else why not."""
    reason = nvcc_missing_reason()
    if reason:
        return reason
    try:
        import cupy
    except ImportError:
        return "cupy is not installed (pip install cupy-cuda13x, or cupy-cuda12x for CUDA 12 drivers)"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as error:  # CUDARuntimeError: no driver / no device
        return f"no usable NVIDIA GPU ({type(error).__name__}: {error})"
    return None if count > 0 else "no NVIDIA GPU visible"


def device_cuda_arch() -> str:
    """The compute capability of GPU 0, e.g. "90" (tests may probe; orchestra never does)."""
    import cupy

    return str(cupy.cuda.Device(0).compute_capability)


requires_nvcc = pytest.mark.skipif(nvcc_missing_reason() is not None, reason=str(nvcc_missing_reason()))
requires_gpu = pytest.mark.skipif(gpu_missing_reason() is not None, reason=f"GPU test: {gpu_missing_reason()}")
