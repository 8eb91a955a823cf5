"""A BuildAndRun job on a read-only cache: builds found there load; a missing one is one message (issue 54)."""

from __future__ import annotations

import errno
import subprocess

import numpy as np
import pytest

from orchestra import ConfigurationError, DaceConfig, DaCeOrchestration, orchestrate
from orchestra.cache.store import BuildStore


class Model:
    def __init__(self, config: DaceConfig, factor: float) -> None:
        self.factor = factor
        orchestrate(obj=self, config=config)

    def __call__(self, q):
        q[:] = q * self.factor


def run(cache, factor: float) -> np.ndarray:
    q = np.ones(3)
    Model(DaceConfig(None, backend="dace:cpu", orchestration=DaCeOrchestration.BuildAndRun, cache_root=cache), factor)(q)
    return q


def test_a_build_that_cannot_take_its_lock_says_what_to_do(tmp_path, monkeypatch):
    def read_only(self, key, timeout_s=None):
        raise OSError(errno.EROFS, "Read-only file system", str(self.root / ".locks"))

    monkeypatch.setattr(BuildStore, "lock", read_only)
    with pytest.raises(ConfigurationError, match=r"Model.__call__: the cache .* is not writable \(Read-only file "
                                                 r"system\), and it holds no build .*FV3_DACEMODE=Run"):
        run(tmp_path, 3.0)


@pytest.fixture()
def mounted(tmp_path):
    """A tmpfs of our own, remountable read-only (needs the right to mount, as root in a container)."""
    folder = tmp_path / "mount"
    folder.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=755", "tmpfs", str(folder)], capture_output=True).returncode:
        pytest.skip("cannot mount a file system here (the test above covers the message)")
    yield folder
    subprocess.run(["umount", "--lazy", str(folder)], capture_output=True)  # its libraries stay loaded in this process


def test_a_read_only_mount_loads_what_it_holds_and_refuses_to_build_in_one_message(mounted):
    assert run(mounted, 3.0).tolist() == [3.0, 3.0, 3.0]  # built while writable
    subprocess.run(["mount", "-o", "remount,ro", str(mounted)], check=True)
    assert run(mounted, 3.0).tolist() == [3.0, 3.0, 3.0]  # found and loaded, nothing written
    with pytest.raises(ConfigurationError, match="is not writable"):
        run(mounted, 5.0)  # another folded value: another build, which cannot be made here
