"""gt4py's stencil builds hold a lock per stencil once orchestra is imported (issue 56, item 2).

:mod:`orchestra.toolchain.gt4py_builds` wraps gt4py's ``StencilBuilder.build``
in an exclusive file lock beside the stencil's files: the lock is the one
FrozenStencils take to lower (re-entrant in a thread), another process
waits for it (or, asking not to wait, is told it is held), and a plain
``gtscript.stencil`` build takes it. Six MPI ranks building one plain
stencil into a fresh cache at once: ``tests/stencils/test_gt4py_cache_mpi.py``.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
from gt4py.cartesian import config as gt_config
from gt4py.cartesian import gtscript
from gt4py.cartesian.gtscript import PARALLEL, Field, computation, interval
from gt4py.cartesian.stencil_builder import StencilBuilder

import orchestra  # noqa: F401  (patches gt4py's builds)
from orchestra.stencils.stencil_cache import stencil_lock
from orchestra.toolchain.gt4py_builds import build_lock_path, stencil_build_lock
from tests.mpi_launcher import REPO_ROOT


def copy_field(a: Field[np.float64], out: Field[np.float64]):
    with computation(PARALLEL), interval(...):
        out = a


def _builder() -> StencilBuilder:
    return gtscript.lazy_stencil(backend="numpy", definition=copy_field, check_syntax=False).builder


def test_gt4py_builds_are_locked_once_orchestra_is_imported():
    assert getattr(StencilBuilder.build, "__orchestra_locked__", False)


def test_a_new_process_importing_orchestra_before_gt4py_locks_its_builds_too():
    code = textwrap.dedent("""
        import sys
        import orchestra
        assert "gt4py.cartesian.stencil_builder" not in sys.modules  # orchestra does not import gt4py early
        from gt4py.cartesian.stencil_builder import StencilBuilder
        print(getattr(StencilBuilder.build, "__orchestra_locked__", False))
    """)
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"


def test_the_lock_is_re_entrant_and_the_lowering_lock_is_the_same(tmp_path, monkeypatch):
    monkeypatch.setitem(gt_config.cache_settings, "root_path", str(tmp_path))
    builder = _builder()
    with stencil_lock(builder), stencil_build_lock(builder) as held, stencil_build_lock(builder, wait=False) as again:
        assert held and again
        assert build_lock_path(builder).exists()


def test_another_process_waits_or_is_told_the_lock_is_held(tmp_path, monkeypatch):
    monkeypatch.setitem(gt_config.cache_settings, "root_path", str(tmp_path))
    builder = _builder()
    probe = textwrap.dedent(f"""
        import fcntl, os, sys
        descriptor = os.open({str(build_lock_path(builder))!r}, os.O_RDWR)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            print("free")
        except OSError:
            print("held")
    """)
    with stencil_build_lock(builder):
        held = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    free = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert (held.strip(), free.strip()) == ("held", "free")


def test_a_plain_gt4py_stencil_builds_under_its_lock(tmp_path, monkeypatch):
    monkeypatch.setitem(gt_config.cache_settings, "root_path", str(tmp_path))
    seen = []
    from orchestra.toolchain import gt4py_builds

    real = gt4py_builds.file_lock

    def recording(path, timeout_s=None):
        seen.append(path.name)
        return real(path, timeout_s)

    monkeypatch.setattr(gt4py_builds, "file_lock", recording)
    stencil = gtscript.stencil(backend="numpy", definition=copy_field)
    a, out = np.arange(24.0).reshape(2, 3, 4), np.zeros((2, 3, 4))
    stencil(a, out)
    assert np.array_equal(a, out)
    assert any(name.endswith("_orchestra.lock") and "copy_field" in name for name in seen), seen
