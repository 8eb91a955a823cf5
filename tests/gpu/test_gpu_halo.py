"""Halo exchanges of device arrays on 6 ranks sharing one GPU, while the GPU lags behind the host."""

from pathlib import Path

import pytest

from tests.gpu.gpu_env import requires_gpu
from tests.mpi_launcher import run_mpi

pytestmark = [pytest.mark.mpi, requires_gpu]


def test_received_buffers_are_not_reused_before_the_device_copied_them():
    worker = Path(__file__).with_name("workers") / "halo_buffer_reuse.py"
    result = run_mpi(6, worker, timeout=300)
    assert result.stdout.strip().splitlines()[-1] == "OK", result.stdout[-2000:]
