"""Fixtures of the build-cache tests: a store in a temporary folder, fake builds,
and an environment for child processes.

(Test modules take these as fixtures rather than importing from this file: the
module name ``conftest`` is shared with other test folders.)
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Mapping

import pytest

from orchestra.cache import BuildEntry, BuildStore, Manifest, fingerprint

REPOSITORY = Path(__file__).resolve().parents[2]
LIBRARY = "build/libprogram.so"
PROGRAM = "DynamicalCore.__call__"


@pytest.fixture
def child_env() -> dict[str, str]:
    """Environment for a child Python that imports orchestra from this checkout."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPOSITORY), env.get("PYTHONPATH")]))
    return env


@pytest.fixture
def store(tmp_path: Path) -> BuildStore:
    return BuildStore(tmp_path / "cache")


def _example_inputs(**changes: Any) -> dict[str, Any]:
    inputs: dict[str, Any] = {
        "backend": "dace:cpu",
        "per_rank_domain": (24, 24, 4),
        "scalars": {"da_min": 1.2e6, "n_split": 3},
        "source": {"Acoustics.__call__": "def __call__(self, u, v):\n    ...\n" * 4},
        "debug_checks": False,
    }
    inputs.update(changes)
    return inputs


@pytest.fixture
def example_inputs() -> Callable[..., dict[str, Any]]:
    """``example_inputs(**changes)``: a typical set of build inputs, with changes."""
    return _example_inputs


@pytest.fixture
def make_build(store: BuildStore) -> Callable[..., BuildEntry]:
    """``make_build(inputs=None, program=..., content=...)``: build and publish a fake library."""

    def build(
        inputs: Mapping[str, Any] | None = None,
        program: str = PROGRAM,
        content: bytes = b"\x7fELF fake library " * 64,
    ) -> BuildEntry:
        inputs = _example_inputs() if inputs is None else inputs
        key = fingerprint(inputs)
        staging = store.staging_dir(key)
        (staging / "build").mkdir()
        (staging / LIBRARY).write_bytes(content)
        (staging / "program.sdfgz").write_bytes(b"sdfg")
        manifest = Manifest.new(
            key, program, inputs, LIBRARY, build_seconds=1.5, orchestra_version="0.1.0"
        )
        return store.publish(staging, manifest)

    return build
