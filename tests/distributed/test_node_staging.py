"""Node-local staging under real mpirun: one shared-folder read per (pretend) node and key.

Ranks are grouped into pretend nodes of 3 consecutive ranks
(``ORCHESTRA_RANKS_PER_NODE=3``); the node-local area is a test folder
(``ORCHESTRA_NODE_LOCAL_DIR``). Every job runs ``mpi_build_worker.py``, whose
ranks compare their results with ``Python`` mode (``ok=1``). Opens of the
shared cache are counted with ``strace`` on every rank, so what is counted is
what the kernel saw, not what orchestra says it did.
"""

from __future__ import annotations

import os
import re
import shutil
from collections import Counter
from pathlib import Path

import pytest

from orchestra.cache.manifest import Manifest
from orchestra.distributed.staging import StagingArea
from orchestra.distributed.staging.copy import copy_verified, files_to_stage
from tests.distributed.test_mpi_build import assert_all_ran_and_match, results
from tests.mpi_launcher import run_mpi

WORKER = Path(__file__).with_name("mpi_build_worker.py")
RANKS_PER_NODE = 3

pytestmark = pytest.mark.mpi


@pytest.fixture(autouse=True)
def _pretend_nodes(monkeypatch, tmp_path):
    monkeypatch.setenv("OMPI_MCA_mpi_yield_when_idle", "1")
    monkeypatch.setenv("ORCHESTRA_RANKS_PER_NODE", str(RANKS_PER_NODE))
    monkeypatch.setenv("ORCHESTRA_NODE_LOCAL_DIR", str(tmp_path / "node_local"))
    (tmp_path / "node_local").mkdir()
    monkeypatch.delenv("ORCHESTRA_BUILD_TIMEOUT", raising=False)


def area_of(tmp_path: Path, first_rank: int = 0) -> StagingArea:
    """The node-local area of the pretend node whose lowest rank is ``first_rank``."""
    return StagingArea(tmp_path / "node_local" / f"orchestra-{os.getuid()}").for_pretend_node(first_rank)


def left_in_node_local(tmp_path: Path) -> list[str]:
    return sorted(str(path.relative_to(tmp_path)) for path in (tmp_path / "node_local").rglob("*"))


def job(n_ranks: int, root: Path, *args: str, wrapper=(), check: bool = True, timeout: float = 300):
    process = run_mpi(
        n_ranks, WORKER, "--cache-root", str(root), *args, timeout=timeout, check=check, wrapper=wrapper
    )
    return process, results(process.stdout)


@pytest.fixture(scope="module")
def cube_build(tmp_path_factory):
    """One build serving a 6-rank cubed sphere (layout 1x1: one key on every rank)."""
    root = tmp_path_factory.mktemp("staging_cache")
    run_mpi(6, WORKER, "--cache-root", str(root), "--cube", "--mode", "Build", timeout=300)
    (entry,) = [path.parent for path in root.glob("*/*/COMPLETE")]
    return root, entry


def leave_copy(area: StagingArea, entry: Path, manifest: Manifest) -> Path:
    """A staged copy of ``entry`` in ``area``, as a job killed before its clean-up leaves it."""
    area.prepare()
    staged = area.entry_dir(manifest.key)
    copy_verified(entry, files_to_stage(manifest), staged, manifest.library)
    (staged / "manifest.json").write_text(manifest.to_json())
    return staged


def traced_openat(traces: Path) -> list[str]:
    """A wrapper running each rank under ``strace``, writing ``traces/trace.<rank>``."""
    if shutil.which("strace") is None:
        pytest.skip("counting file opens needs strace (apt-get install strace; docker/Dockerfile.cpu has it)")
    command = 'exec strace -f -qq -e trace=openat -o "$0.$OMPI_COMM_WORLD_RANK" "$@"'
    return ["sh", "-c", command, str(traces / "trace")]


def shared_library_opens(traces: Path, root: Path) -> Counter:
    """Per trace file (one per rank), how many times a library in the shared cache was opened."""
    pattern = re.compile(r'openat\([^"]*"' + re.escape(str(root)) + r'/[^"]*\.so"')
    return Counter({trace.name: len(pattern.findall(trace.read_text(errors="replace"))) for trace in traces.iterdir()})


def test_one_shared_read_per_pretend_node_and_results_match(cube_build, tmp_path):
    root, entry = cube_build
    traces = tmp_path / "traces"
    traces.mkdir()
    process, found = job(6, root, "--cube", "--mode", "Run", wrapper=traced_openat(traces), timeout=600)
    assert_all_ran_and_match(found, 6, process.stdout)
    opens = shared_library_opens(traces, root)
    # two pretend nodes of three ranks: each node's reader (ranks 0 and 3) opens the library and
    # its stub once to copy them; the builder of the key (rank 0) opens both once more, to verify
    # the entry before deciding there is nothing to build
    assert opens == {"trace.0": 4, "trace.1": 0, "trace.2": 0, "trace.3": 2, "trace.4": 0, "trace.5": 0}, opens
    assert left_in_node_local(tmp_path) == [], "the staged copies must be removed once the nodes loaded"


def test_damaged_node_local_copy_is_detected_and_replaced(cube_build, tmp_path):
    root, entry = cube_build
    manifest = Manifest.read(entry / "manifest.json")
    staged = leave_copy(area_of(tmp_path), entry, manifest)  # what a killed job would have left behind
    with open(staged / manifest.library, "r+b") as stream:
        stream.seek(100)
        stream.write(b"\xff" * 8)
    process, found = job(6, root, "--cube", "--mode", "Run")
    assert_all_ran_and_match(found, 6, process.stdout)
    assert "is damaged" in process.stdout and "differs from the shared build" in process.stdout, process.stdout[-3000:]
    assert left_in_node_local(tmp_path) == []


def test_intact_leftover_copy_is_reused_without_reading_the_shared_library(cube_build, tmp_path):
    root, entry = cube_build
    manifest = Manifest.read(entry / "manifest.json")
    for first_rank in (0, RANKS_PER_NODE):  # left on both pretend nodes by a killed job
        leave_copy(area_of(tmp_path, first_rank), entry, manifest)
    traces = tmp_path / "traces"
    traces.mkdir()
    process, found = job(6, root, "--cube", "--mode", "Run", wrapper=traced_openat(traces), timeout=600)
    assert_all_ran_and_match(found, 6, process.stdout)
    # the readers verify the leftovers against the shared manifest only; the builder's check remains
    assert sorted(shared_library_opens(traces, root).items()) == [(f"trace.{rank}", 2 * (rank == 0)) for rank in range(6)]
    assert left_in_node_local(tmp_path) == []


def test_edge_dependent_builds_are_staged_once_per_node_and_key(tmp_path):
    root = tmp_path / "cache"
    job(9, root, "--layout", "3x3", "--mode", "Build")
    process, found = job(9, root, "--layout", "3x3", "--mode", "Run")
    assert_all_ran_and_match(found, 9, process.stdout)
    assert len({r["class"] for r in found}) == 9
    assert left_in_node_local(tmp_path) == []


def test_damaged_shared_build_ends_the_job_with_one_message(cube_build, tmp_path):
    root = tmp_path / "cache"
    shutil.copytree(cube_build[0], root, symlinks=True)  # the module's build, copied: damaged here alone
    (library,) = root.glob("*/*/build/lib[!d]*.so")
    with open(library, "r+b") as stream:
        stream.truncate(library.stat().st_size // 2)
    process, found = job(6, root, "--cube", "--mode", "Run", check=False)
    assert process.returncode != 0
    assert found == []
    message = "library checksum mismatch: file corrupted or truncated"
    assert process.stdout.count("orchestra: MissingBuildError") == 1, process.stdout[-3000:]
    assert message in process.stdout
    assert left_in_node_local(tmp_path) == []


def test_an_untrusted_area_on_one_node_ends_the_job_with_one_message(cube_build, tmp_path):
    root, _ = cube_build
    area = area_of(tmp_path, RANKS_PER_NODE)  # the second pretend node's area: anyone may write it
    area.root.mkdir()
    area.root.chmod(0o777)
    process, found = job(6, root, "--cube", "--mode", "Run", check=False)
    assert process.returncode != 0 and found == []
    assert process.stdout.count("orchestra: BuildError: loading EdgeModel.__call__ failed on 3 rank(s) (3, 4, 5)") == 1, (
        process.stdout[-3000:]
    )
    assert f"refusing to load a build from {area.root}: every user may write it" in process.stdout
    assert [path.name for path in (tmp_path / "node_local").rglob("*")] == [area.root.name]  # nothing staged


def test_an_unusable_area_falls_back_to_loading_from_the_cache(cube_build, tmp_path, monkeypatch):
    root, _ = cube_build
    monkeypatch.setenv("ORCHESTRA_NODE_LOCAL_DIR", str(tmp_path / "missing" / "folder"))
    process, found = job(6, root, "--cube", "--mode", "Run")
    assert_all_ran_and_match(found, 6, process.stdout)
    assert "cannot take a copy (FileNotFoundError" in process.stdout, process.stdout[-3000:]
    assert "the ranks of this node load from the cache itself" in process.stdout
    assert not (tmp_path / "missing").exists()
