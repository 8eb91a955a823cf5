"""Fault injection: every file a load reads is verified and trusted; a read-only cache runs.

A real build of a small program, then, in a copy of its cache for each case:
each loaded file truncated in turn, permissions opened to everyone, another
owner, and the cache mounted read-only.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from orchestra import DaceConfig, FrozenStencil, MissingBuildError, orchestrate_function
from orchestra.cache.store import BuildStore
from orchestra.cache.trust import TRUSTED_OWNERS_VARIABLE, UntrustedCacheError
from orchestra.examples.diffusion import apply_tendency, initial_state

BACKEND = "dace:cpu"
SHAPE = (8, 7, 2)
LOADED = ["library", "stub", "signature.sdfgz", "program.sdfgz"]


def loaded_file(entry: Path, kind: str) -> str:
    """The path (relative to the entry) of one kind of loaded file."""
    libraries = sorted(path.name for path in (entry / "build").glob("lib*.so"))
    if kind == "stub":
        return "build/" + next(name for name in libraries if name.startswith("libdacestub_"))
    if kind == "library":
        return "build/" + next(name for name in libraries if not name.startswith("libdacestub_"))
    return kind


def make_step(mode: str, cache: Path):
    tendency = FrozenStencil(apply_tendency, backend=BACKEND, origin=(1, 1, 0), domain=(6, 5, 2))

    def step(q, lap):
        tendency(q, lap, 0.5)

    return orchestrate_function(DaceConfig(None, backend=BACKEND, orchestration=mode, cache_root=cache))(step)


def run(mode: str, cache: Path):
    step = make_step(mode, cache)
    q, lap = initial_state(SHAPE, BACKEND)
    lap[...] = 2.0
    step(q, lap)
    return np.asarray(q).copy(), step


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, np.ndarray]:
    cache = tmp_path_factory.mktemp("loaded_files") / "cache"
    result, _ = run("BuildAndRun", cache)
    return cache, result


def copy_of(cache: Path, tmp_path: Path) -> tuple[Path, Path]:
    copy = tmp_path / "cache"
    shutil.copytree(cache, copy)
    (entry,) = BuildStore(copy).entries()
    return copy, entry.path


def test_the_manifest_covers_every_loaded_file(built):
    cache, _ = built
    (entry,) = BuildStore(cache).entries()
    expected = sorted(loaded_file(entry.path, kind) for kind in LOADED)
    assert sorted([entry.manifest.library, *entry.manifest.files]) == expected


@pytest.mark.parametrize("name", LOADED)
def test_a_truncated_file_is_a_miss_refused_in_run_and_rebuilt_in_build_and_run(built, tmp_path, name):
    cache, expected = built
    copy, entry = copy_of(cache, tmp_path)
    target = entry / loaded_file(entry, name)
    target.write_bytes(target.read_bytes()[: target.stat().st_size // 2])
    damaged = BuildStore(copy).incomplete()
    assert [folder.path for folder in damaged] == [entry] and "checksum mismatch" in damaged[0].reason
    file_named = "library" if name == "library" else loaded_file(entry, name)
    with pytest.raises(MissingBuildError, match=f"{file_named}.* checksum mismatch"):
        run("Run", copy)
    result, step = run("BuildAndRun", copy)  # rebuilt over the damaged entry
    assert np.array_equal(result, expected)
    assert step.built_here


def test_programs_of_one_build_in_one_process_are_independent_and_leave_the_entry_unchanged(built, tmp_path):
    """Two live programs of one build: the second opens a private copy of the library, not one in the cache."""
    cache, _ = built
    copy, entry = copy_of(cache, tmp_path)
    files_before = sorted(str(path.relative_to(entry)) for path in entry.rglob("*"))
    first, second = make_step("Run", copy), make_step("Run", copy)
    (q1, lap1), (q2, lap2) = initial_state(SHAPE, BACKEND), initial_state(SHAPE, BACKEND)
    lap1[...], lap2[...] = 2.0, -1.0
    want1, want2 = np.asarray(q1).copy(), np.asarray(q2).copy()
    interior = (slice(1, 7), slice(1, 6), slice(0, 2))  # the stencil's origin and domain
    first(q1, lap1)
    second(q2, lap2)
    first(q1, lap1)  # marshalled arguments are each program's own: this call must not see q2
    for _ in range(2):
        want1[interior] = want1[interior] + 0.5 * 2.0
    want2[interior] = want2[interior] + 0.5 * -1.0
    assert np.array_equal(np.asarray(q1), want1) and np.array_equal(np.asarray(q2), want2)
    assert sorted(str(path.relative_to(entry)) for path in entry.rglob("*")) == files_before


def test_world_writable_entry_is_not_loaded(built, tmp_path):
    cache, expected = built
    copy, entry = copy_of(cache, tmp_path)
    os.chmod(entry, 0o777)
    with pytest.raises(UntrustedCacheError, match=r"every user may write it.*chmod o-w"):
        run("Run", copy)
    os.chmod(entry, 0o755)
    assert np.array_equal(run("Run", copy)[0], expected)


def test_a_library_owned_by_another_user_needs_to_be_trusted(built, tmp_path, monkeypatch):
    if os.getuid() != 0:
        pytest.skip("changing a file's owner needs root")  # CI and development run as root here
    cache, expected = built
    copy, entry = copy_of(cache, tmp_path)
    os.chown(entry / loaded_file(entry, "library"), 12345, -1)
    monkeypatch.setattr(os, "getuid", lambda: 4242)  # act as an ordinary user: root is trusted anyway
    with pytest.raises(UntrustedCacheError, match=f"user id 12345.*{TRUSTED_OWNERS_VARIABLE}"):
        run("Run", copy)
    monkeypatch.setenv(TRUSTED_OWNERS_VARIABLE, "12345")
    assert np.array_equal(run("Run", copy)[0], expected)


def test_run_mode_works_from_a_read_only_cache(built, tmp_path):
    cache, expected = built
    copy, _ = copy_of(cache, tmp_path)
    read_only = tmp_path / "read_only"
    read_only.mkdir()
    mounted = subprocess.run(["mount", "--bind", str(copy), str(read_only)], capture_output=True).returncode == 0
    if not mounted:
        pytest.skip("cannot bind-mount here (needs root): the read-only cache test needs a read-only file system")
    try:
        subprocess.run(["mount", "-o", "remount,ro,bind", str(read_only)], check=True, capture_output=True)
        with pytest.raises(OSError):
            (read_only / "probe").write_text("")
        result, step = run("Run", read_only)
        assert np.array_equal(result, expected) and not step.built_here
        # a second program of the same build, while the first holds its library open: DaCe would copy
        # the library beside itself, in the cache, which fails here
        second, other_step = run("Run", read_only)
        assert np.array_equal(second, expected) and other_step is not step
    finally:
        subprocess.run(["umount", "--lazy", str(read_only)], capture_output=True)  # its library stays loaded here
