"""Compiled objects kept and reused between builds (orchestra.toolchain.compile_launcher, object_cache)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from orchestra import DaceConfig
from orchestra.errors import ConfigurationError
from orchestra.toolchain import compile_launcher
from orchestra.toolchain.object_cache import LIMIT_VARIABLE, limit_mb, objects_summary

SOURCE = """#include <cmath>
double scaled(double x) { return SCALE * std::sqrt(x) + OFFSET; }
"""


def _compile(folder: Path, store: Path, *flags: str, limit: int = 100, source: str = SOURCE) -> int:
    """One compile through the launcher, run where Ninja would run it (the build folder)."""
    (folder / "unit.cpp").write_text(source)
    command = ["c++", "-O2", "--param", "max-inline-insns-single=2000", *flags, "-DOFFSET=1.0",
               "-MD", "-MT", "unit.o", "-MF", "unit.o.d", "-o", "unit.o", "-c", "unit.cpp"]
    return subprocess.run(_launcher(store, limit) + command, cwd=folder).returncode


def _launcher(store: Path, limit: int = 100) -> list[str]:
    """The launcher's command line as CMake runs it, up to the compiler."""
    return [sys.executable, "-I", compile_launcher.__file__, "--store", str(store), "--limit-mb", str(limit),
            "--owners", str(os.getuid()), "--"]


def _outcomes(folder: Path) -> list[str]:
    return (folder / compile_launcher.RECORD_NAME).read_text().split()[0::2]


def _stored(store: Path) -> list[Path]:
    return sorted(store.glob("*/*.o"))


@pytest.fixture
def folders(tmp_path):
    store, build = tmp_path / "objects", tmp_path / "build"
    store.mkdir()
    build.mkdir()
    return store, build


def test_the_same_input_is_compiled_once_and_its_object_reused_with_a_dependency_file(folders):
    store, build = folders
    assert _compile(build, store, "-DSCALE=2.0") == 0
    first = (build / "unit.o").read_bytes()
    (build / "unit.o").unlink()
    (build / "unit.o.d").unlink()
    assert _compile(build, store, "-DSCALE=2.0", "-DUNUSED=7") == 0  # a macro nothing reads: the same input
    assert _outcomes(build) == ["compiled", "reused"]
    assert (build / "unit.o").read_bytes() == first
    assert "unit.cpp" in (build / "unit.o.d").read_text()  # Ninja reads it after every compile
    assert len(_stored(store)) == 1


@pytest.mark.parametrize("change", [("-DSCALE=3.0",), ("-DSCALE=2.0", "-O1"), ("-DSCALE=2.0", "-ffast-math")],
                         ids=["a macro the code reads", "the optimization level", "a math flag"])
def test_a_different_input_or_flag_is_compiled_again(folders, change):
    store, build = folders
    assert _compile(build, store, "-DSCALE=2.0") == 0
    assert _compile(build, store, *change) == 0
    assert _outcomes(build) == ["compiled", "compiled"]
    assert len(_stored(store)) == 2


def test_an_object_with_debug_information_names_its_folder_and_is_not_kept(folders):
    store, build = folders
    assert _compile(build, store, "-DSCALE=2.0", "-g") == 0
    assert _compile(build, store, "-DSCALE=2.0", "-g") == 0
    assert _outcomes(build) == ["compiled", "compiled"]
    assert _stored(store) == []


def test_another_builders_object_being_written_is_left_alone(folders):
    store, build = folders
    assert _compile(build, store, "-DSCALE=2.0") == 0
    (stored,) = _stored(store)
    partial = stored.with_name(stored.name + ".4711.partial")
    partial.write_bytes(b"half an object")
    assert _compile(build, store, "-DSCALE=2.0") == 0
    assert _outcomes(build) == ["compiled", "reused"] and partial.exists()


def test_a_damaged_object_in_the_store_is_removed_and_the_file_compiled(folders):
    store, build = folders
    assert _compile(build, store, "-DSCALE=2.0") == 0
    good = (build / "unit.o").read_bytes()
    (stored,) = _stored(store)
    stored.write_bytes(b"\0" * 64)
    assert _compile(build, store, "-DSCALE=2.0") == 0
    assert _outcomes(build) == ["compiled", "compiled"]
    assert (build / "unit.o").read_bytes() == good
    (again,) = _stored(store)
    assert again.read_bytes() == good


def test_a_store_everyone_may_write_is_not_used(folders):
    store, build = folders
    store.chmod(0o777)
    assert _compile(build, store, "-DSCALE=2.0") == 0
    assert _compile(build, store, "-DSCALE=2.0") == 0
    assert _outcomes(build) == ["compiled", "compiled"]
    assert _stored(store) == []


def test_the_store_keeps_the_most_recently_used_objects_within_its_limit(folders):
    store, build = folders
    padding = "static const char pad[%d] = {1};\nconst char* keep() { return pad; }\n" % 400_000
    for scale in range(4):
        assert _compile(build, store, f"-DSCALE={scale}.0", limit=1, source=SOURCE + padding) == 0
    assert sum(path.stat().st_size for path in _stored(store)) <= 1024 * 1024
    assert 0 < len(_stored(store)) < 4


def test_what_is_not_a_plain_compile_runs_unchanged(folders):
    store, build = folders
    assert _compile(build, store, "-DSCALE=2.0", "-fPIC") == 0
    launcher = _launcher(store)
    linked = subprocess.run(launcher + ["c++", "-shared", "-o", "libunit.so", "unit.o"], cwd=build)
    assert linked.returncode == 0 and (build / "libunit.so").exists()
    failing = subprocess.run(launcher + ["c++", "-c", "missing.cpp", "-o", "missing.o"], cwd=build,
                             capture_output=True, text=True)
    assert failing.returncode != 0 and "missing.cpp" in failing.stderr
    assert _outcomes(build) == ["compiled"]  # the link is not a compile, the failed one compiled nothing
    assert len(_stored(store)) == 1


def test_the_summary_counts_reused_files(tmp_path):
    assert objects_summary(tmp_path) == ""
    (tmp_path / compile_launcher.RECORD_NAME).write_text("reused a.cpp\ncompiled b.cpp\nreused c.cpp\n")
    assert objects_summary(tmp_path) == "2 of 3 file(s) reused from earlier builds"


def test_the_limit_is_read_from_the_environment_and_a_bad_one_refused_when_the_model_is_configured(monkeypatch):
    monkeypatch.setenv(LIMIT_VARIABLE, "0")
    assert limit_mb() == 0
    monkeypatch.setenv(LIMIT_VARIABLE, "lots")
    with pytest.raises(ConfigurationError, match=LIMIT_VARIABLE):
        limit_mb()
    with pytest.raises(ConfigurationError, match=LIMIT_VARIABLE):
        DaceConfig(None, backend="dace:cpu", orchestration="BuildAndRun")
