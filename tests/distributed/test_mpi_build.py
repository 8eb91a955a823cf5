"""The distributed build under real mpirun: who compiles, cache reuse, refusals, failures.

Every job runs ``mpi_build_worker.py`` (an orchestrated model with horizontal
regions on the tile edges the rank touches, 6x6x2 cells per rank); each rank
prints ``RESULT rank=.. class=.. built=.. ran=.. ok=..`` where ``ok`` means
bitwise equal to the same model in ``Python`` mode on the numpy backend.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.mpi_launcher import MPI_ENV, REPO_ROOT, kill_job, mpirun_executable, run_mpi

WORKER = Path(__file__).with_name("mpi_build_worker.py")

pytestmark = pytest.mark.mpi


@pytest.fixture(autouse=True)
def _mpi_environment(monkeypatch):
    # waiting ranks yield their core (2 cores, up to 16 ranks); no limit unless a test sets one
    monkeypatch.setenv("OMPI_MCA_mpi_yield_when_idle", "1")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.delenv("ORCHESTRA_BUILD_TIMEOUT", raising=False)


def results(output: str) -> list[dict[str, str]]:
    """The ``RESULT`` lines of a job, as dicts, by rank."""
    found = []
    for line in output.splitlines():
        if line.startswith("RESULT "):
            found.append(dict(item.split("=", 1) for item in line.split()[1:]))
    return sorted(found, key=lambda result: int(result["rank"]))


def worker(n_ranks: int, root: Path, *args: str, timeout: float = 120, check: bool = True, environment=None):
    """Run the worker on ``n_ranks`` ranks with cache root ``root``; (process, RESULT dicts)."""
    process = run_mpi(n_ranks, WORKER, "--cache-root", str(root), *args, timeout=timeout, check=check,
                      environment=environment)
    return process, results(process.stdout)


def builds_in(root: Path) -> int:
    return len(list(root.glob("*/*/COMPLETE")))


def staging_folders(root: Path) -> list[Path]:
    staging = root / ".staging"
    return list(staging.iterdir()) if staging.is_dir() else []


def assert_all_ran_and_match(found: list[dict[str, str]], n_ranks: int, output: str) -> None:
    assert [int(r["rank"]) for r in found] == list(range(n_ranks)), output[-3000:]
    assert all(r["ran"] == "1" and r["ok"] == "1" for r in found), found


def assert_failed_fast(process, started: float, limit_s: float = 90) -> None:
    assert process.returncode not in (0, -signal.SIGKILL), process.stdout[-3000:]
    assert time.monotonic() - started < limit_s


# --------------------------------------------------------------- build at 3x3, run at 4x4
@pytest.fixture(scope="module")
def build_3x3(tmp_path_factory):
    root = tmp_path_factory.mktemp("cache_3x3")
    process, found = worker(9, root, "--layout", "3x3", "--mode", "Build", timeout=300)
    return root, process, found


def test_3x3_build_compiles_once_per_code_path_class(build_3x3):
    root, process, found = build_3x3
    assert process.returncode == 0
    assert len(found) == 9, process.stdout[-3000:]
    assert all(r["built"] == "1" and r["ran"] == "0" for r in found), found  # Build mode: no run
    assert len({r["class"] for r in found}) == 9
    assert builds_in(root) == 9
    assert "build ready" in process.stdout


def test_4x4_run_from_the_3x3_build_compiles_nothing_and_matches_python_mode(build_3x3):
    root = build_3x3[0]
    process, found = worker(16, root, "--layout", "4x4", "--mode", "Run", timeout=300)
    assert_all_ran_and_match(found, 16, process.stdout)
    assert all(r["built"] == "0" and float(r["load_s"]) > 0 for r in found), found
    assert builds_in(root) == 9
    assert not staging_folders(root)  # nothing was being built
    # `orchestra cache explain` sees every code path of this run: 9 classes, all hits,
    # with 4 corner ranks alone, 2 ranks per edge class and 4 interior ranks
    from orchestra.cache import BuildStore

    requests = BuildStore(root).requests()
    assert len(requests) == 9 and all(BuildStore(root).lookup(r.key).hit for r in requests)
    assert sorted(len(r.ranks) for r in requests) == [1, 1, 1, 1, 2, 2, 2, 2, 4]
    assert sorted(rank for r in requests for rank in r.ranks) == list(range(16))
    assert {r.code_path for r in requests} == {r["class"] for r in found}


@pytest.mark.parametrize("requested", [None, "2"], ids=["unset", "two_threads"])
def test_openmp_threads_are_each_ranks_share_of_the_node_unless_the_user_chose(build_3x3, requested):
    # 9 ranks on this host, unbound (mpirun --oversubscribe): each may run on every core
    cores = len(os.sched_getaffinity(0))
    process, found = worker(9, build_3x3[0], "--layout", "3x3", "--mode", "Run", timeout=300,
                            environment={"OMP_NUM_THREADS": requested})
    assert_all_ran_and_match(found, 9, process.stdout)
    threads = {int(r["threads"]) for r in found}
    if requested is None:  # OpenMP's default would be every core on every rank
        assert threads == {max(1, cores // 9)}, found
        assert process.stdout.count(f"OpenMP: 9 rank(s) share this node's {cores} core(s): each rank's "
                                    f"programs run {max(1, cores // 9)} thread(s)") == (1 if cores > 1 else 0)
    else:  # the user's choice is obeyed, and an oversubscribed node is named once, with the fix
        assert threads == {2}, found
        share = max(1, cores // 9)
        assert process.stdout.count("each asks for 2 thread(s)") == (1 if 2 > share else 0)
        assert f"set OMP_NUM_THREADS={share}" in process.stdout or 2 <= share


# ------------------------------------------------------------------ stale builds refused
@pytest.fixture(scope="module")
def build_1x1(tmp_path_factory):
    root = tmp_path_factory.mktemp("cache_1x1")
    worker(1, root, "--mode", "Build")
    assert builds_in(root) == 1
    return root


@pytest.mark.parametrize(
    "change,difference",
    [
        (["--variant", "b"], "the source of edge_model_generated.EdgeModel.__call__ changed"),
        (["--nx", "8"], "the domain of stencil edge_model_generated.edge_update changed from (6, 6, 2) to (8, 8, 2)"),
        (["--flag"], "self.halve_twice was False when built, is True now"),
    ],
    ids=["source", "domain", "flag"],
)
def test_run_with_a_stale_build_is_refused_naming_the_difference(build_1x1, change, difference):
    process, found = worker(1, build_1x1, "--mode", "Run", *change, check=False)
    assert process.returncode != 0 and not found
    assert "MissingBuildError: FV3_DACEMODE=Run found no usable build of EdgeModel.__call__" in process.stdout
    assert difference in process.stdout, process.stdout[-3000:]
    assert builds_in(build_1x1) == 1 and not staging_folders(build_1x1)  # never compiles


# ------------------------------------------------------------------------ corrupted library
def test_corrupted_library_is_refused_by_run_and_rebuilt_by_build_and_run(tmp_path):
    root = tmp_path / "cache"
    worker(1, root, "--mode", "Build")
    (library,) = [path for path in root.glob("*/*/build/lib*.so") if "dacestub" not in path.name]
    with open(library, "r+b") as stream:
        stream.truncate(library.stat().st_size // 2)
    process, _ = worker(1, root, "--mode", "Run", check=False)
    assert process.returncode != 0
    assert "library checksum mismatch: file corrupted or truncated" in process.stdout, process.stdout[-3000:]
    process, found = worker(1, root, "--mode", "BuildAndRun")
    assert found[0]["built"] == "1" and found[0]["ok"] == "1"
    assert builds_in(root) == 1
    assert "is not usable (library checksum mismatch: file corrupted or truncated); building it again" in (
        process.stdout), process.stdout[-3000:]  # the rebuild says why


# -------------------------------------------------------------------- concurrent jobs
def test_two_concurrent_jobs_on_one_key_build_once(tmp_path):
    root = tmp_path / "cache"
    command = [mpirun_executable(), "-n", "2", "--allow-run-as-root", "--oversubscribe", sys.executable,
               str(WORKER), "--layout", "2x1", "--mode", "BuildAndRun", "--cache-root", str(root)]
    jobs = []
    for name in ("a", "b"):
        env = dict(os.environ, **MPI_ENV, PYTHONPATH=str(REPO_ROOT))
        env["GT_CACHE_ROOT"] = str(tmp_path / f"gt_cache_{name}")  # gt4py's own cache is not multi-job safe
        jobs.append(subprocess.Popen(command, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, start_new_session=True))
    outputs = []
    try:
        for job in jobs:
            outputs.append(job.communicate(timeout=240)[0])
    finally:
        for job in jobs:
            if job.poll() is None:
                kill_job(job.pid)  # its ranks too: they run outside mpirun's process group
    assert [job.returncode for job in jobs] == [0, 0], "\n".join(output[-2000:] for output in outputs)
    found = [result for output in outputs for result in results(output)]
    assert len(found) == 4 and all(r["ok"] == "1" for r in found), found
    built = sorted(r["class"] for r in found if r["built"] == "1")
    assert built == ["bottom+top-left", "bottom+top-right"]  # each of the two keys built once in total
    assert builds_in(root) == 2


# ------------------------------------------------------------------- failures end the job
def test_a_rank_failing_to_build_ends_the_job_with_its_message(tmp_path):
    started = time.monotonic()
    process, found = worker(2, tmp_path / "cache", "--layout", "1x2", "--broken-class", "top-left+right",
                            check=False)
    assert_failed_fast(process, started)
    assert "building EdgeModel.__call__ failed on 1 rank(s) (1); rank 1: BuildError: parsing" in process.stdout, (
        process.stdout[-3000:]
    )
    assert not found  # no rank went on to run
    assert builds_in(tmp_path / "cache") <= 1


@pytest.mark.parametrize("how,n_ranks,layout", [("env", 4, "2x2"), ("config", 1, "1x1")])
def test_a_build_over_the_time_limit_ends_the_job(tmp_path, monkeypatch, how, n_ranks, layout):
    args = ["--layout", layout]
    if how == "env":
        monkeypatch.setenv("ORCHESTRA_BUILD_TIMEOUT", "0.5")
    else:
        args += ["--build-timeout", "0.5"]
    started = time.monotonic()
    process, found = worker(n_ranks, tmp_path / "cache", *args, check=False)
    assert_failed_fast(process, started)
    assert "took longer than the build time limit of 0.5 s" in process.stdout, process.stdout[-3000:]
    assert not found and builds_in(tmp_path / "cache") == 0


# --------------------------------------------------- decomposition-dependent scalar trap
def test_scalar_differing_within_a_class_is_caught_before_building(tmp_path):
    """4x1: ranks 1 and 2 share a code path but fold in self.scale = 1 + i_index."""
    started = time.monotonic()
    process, found = worker(4, tmp_path / "cache", "--layout", "4x1", "--scalar", "rank", check=False)
    assert_failed_fast(process, started)
    assert "RankDisagreementError: ranks 2 and 1 have the same code path" in process.stdout, process.stdout[-3000:]
    assert "scalars['self.scale']: 3.0 vs 2.0" in process.stdout
    assert not found and builds_in(tmp_path / "cache") == 0


def test_scalar_depending_on_the_layout_is_not_reused_on_another_layout(tmp_path):
    """self.scale = 1 + 1/layout: built at 3x1, refused at 4x1 (same per-rank domain)."""
    root = tmp_path / "cache"
    _, found = worker(3, root, "--layout", "3x1", "--scalar", "layout", "--mode", "Build")
    assert sum(r["built"] == "1" for r in found) == 3
    process, found = worker(4, root, "--layout", "4x1", "--scalar", "layout", "--mode", "Run", check=False)
    assert process.returncode != 0 and not found
    assert "self.scale was 1.3333333333333333 when built, is 1.25 now" in process.stdout, process.stdout[-3000:]
    assert builds_in(root) == 3


# -------------------------------------------------------------------------- cubed sphere
def test_cubed_sphere_1x1_compiles_on_rank_0_only_while_waiting_ranks_lower_its_stencils(tmp_path, monkeypatch):
    # gt4py's cache of this job alone, cold: the stencils' lowering is the builder's largest part
    monkeypatch.setenv("GT_CACHE_ROOT", str(tmp_path / "gt_cache"))
    monkeypatch.setenv("ORCHESTRA_LOG_LEVEL", "DEBUG")
    monkeypatch.setenv("ORCHESTRA_BUILD_PROCESSES", "0")  # the ranks alone lower (on a node with idle cores too)
    root = tmp_path / "cache"
    # the builder reaches its first stencil 8 s late, as a slow one would: on a fast machine it otherwise
    # lowered both stencils before a waiting rank had started (a race the test lost on a quiet day)
    process, found = worker(6, root, "--cube", "--layout", "1x1", "--mode", "BuildAndRun", "--builder-delay", "8",
                            timeout=180)
    assert_all_ran_and_match(found, 6, process.stdout)
    assert [r["built"] for r in found] == ["1", "0", "0", "0", "0", "0"]
    assert builds_in(root) == 1
    # two stencils, two helpers (ranks 1 and 2, the lowest waiting ranks), each its own: the one the
    # builder reaches last (halve) is lowered ahead; the builder may take edge_update's lock first
    lowered = re.findall(r"\[rank (\d)\] lowered FrozenStencil\((\w+),", process.stdout)
    assert ("2", "halve") in lowered, process.stdout[-3000:]
    assert set(lowered) <= {("1", "edge_update"), ("2", "halve")}, lowered
    assert len(lowered) == len(set(lowered))  # each once: found done by the others
    assert list((tmp_path / "gt_cache").rglob("*_orchestra_arguments.json"))

    # the same job with no helper, from another empty gt4py cache: the same key and the same generated code
    monkeypatch.setenv("GT_CACHE_ROOT", str(tmp_path / "gt_cache_alone"))
    monkeypatch.setenv("ORCHESTRA_LOWERING_HELPERS", "0")
    alone = tmp_path / "cache_alone"
    process, found = worker(6, alone, "--cube", "--layout", "1x1", "--mode", "BuildAndRun", timeout=180)
    assert_all_ran_and_match(found, 6, process.stdout)
    assert "ahead of the build" not in process.stdout
    helped, unhelped = (sorted(folder.glob("*/*/src/cpu/*.cpp")) for folder in (root, alone))
    assert len(helped) == len(unhelped) == 1 and helped[0].parent.parent.parent.name == unhelped[0].parent.parent.parent.name

    def normalized(path: Path) -> str:  # gt4py names symbols after object addresses: __k_140711570045648
        return re.sub(r"_\d{9,}", "_<id>", path.read_text())

    assert normalized(helped[0]) == normalized(unhelped[0])


# --------------------------------------------------------------- split builds under mpirun
def test_a_split_build_builds_the_inner_component_once_per_key_and_runs_the_outer_body_in_python(tmp_path):
    """``Outer`` (orchestrated) calls ``EdgeModel``; at split depth 1 Outer's body is Python on every rank."""
    root = tmp_path / "cache"
    process, found = worker(6, root, "--cube", "--layout", "1x1", "--outer", "--split-depth", "1", timeout=240)
    assert_all_ran_and_match(found, 6, process.stdout)
    # one key, obtained by each rank alone inside the Python body: one rank builds it under the key's lock
    assert sorted(r["built"] for r in found) == ["0", "0", "0", "0", "0", "1"]
    assert sorted(path.parent.parent.name for path in root.glob("*/*/COMPLETE")) == ["EdgeModel.__call__"]
    assert process.stdout.count(": split build (") == 1, process.stdout[-3000:]  # said once, by rank 0

    # Run mode loads that build on every rank and compiles nothing; the same model as one program is another key
    process, found = worker(6, root, "--cube", "--layout", "1x1", "--outer", "--split-depth", "1", "--mode", "Run")
    assert_all_ran_and_match(found, 6, process.stdout)
    assert builds_in(root) == 1
    process, found = worker(6, root, "--cube", "--layout", "1x1", "--outer", "--mode", "BuildAndRun", timeout=240)
    assert_all_ran_and_match(found, 6, process.stdout)
    assert sorted(path.parent.parent.name for path in root.glob("*/*/COMPLETE")) == [
        "EdgeModel.__call__", "Outer.__call__",
    ]


def test_a_split_body_that_calls_a_component_on_some_ranks_only_neither_hangs_nor_mispairs(tmp_path):
    """Outer's Python body calls EdgeModel on even ranks only: the odd ranks never obtain its program."""
    root = tmp_path / "cache"
    divergent = ("--cube", "--layout", "1x1", "--outer", "--split-depth", "1", "--even-ranks-call-inner")
    process, found = worker(6, root, *divergent, timeout=240)
    assert_all_ran_and_match(found, 6, process.stdout)
    assert sorted(r["built"] for r in found) == ["0", "0", "0", "0", "0", "1"]
    assert sorted(r["rank"] for r in found if r["load_s"] != "-1.000") == ["0", "2", "4"]  # the callers loaded it
    # rank 0's summary counts the build whichever rank won the lock (its manifest is newer than rank 0's process)
    assert process.stdout.count("Outer.__call__: first call ") == 1, process.stdout[-3000:]
    assert "built 1 of 1 program (EdgeModel.__call__), found 0 in the cache" in process.stdout
    process, found = worker(6, root, *divergent, "--mode", "Run")  # found by the callers, nothing built
    assert_all_ran_and_match(found, 6, process.stdout)
    assert builds_in(root) == 1
    assert "built 0 of 1 program, found 1 in the cache" in process.stdout


def test_split_at_edited_agrees_on_every_rank_and_splits_only_after_an_edit_inside_the_component(tmp_path):
    """The whole Outer first; the compile-time flag of EdgeModel changed: Outer's body runs as Python, EdgeModel builds."""
    root = tmp_path / "cache"
    edited = ("--cube", "--layout", "1x1", "--outer", "--split-at", "edited")
    process, found = worker(6, root, *edited, timeout=240)
    assert_all_ran_and_match(found, 6, process.stdout)
    assert sorted(path.parent.parent.name for path in root.glob("*/*/COMPLETE")) == ["Outer.__call__"]
    assert process.stdout.count("split_at edited: one program, as there is no earlier build") == 1

    process, found = worker(6, root, *edited, "--flag", timeout=240)  # EdgeModel's folded flag: an edit inside it
    assert_all_ran_and_match(found, 6, process.stdout)
    assert sorted(path.parent.parent.name for path in root.glob("*/*/COMPLETE")) == [
        "EdgeModel.__call__", "Outer.__call__",
    ]
    assert process.stdout.count("Outer.__call__: split build (split_at edited) at EdgeModel") == 1, process.stdout[-3000:]

    # Run mode finds no whole program of the edited model and runs the split: EdgeModel's program is loaded
    process, found = worker(6, root, *edited, "--flag", "--mode", "Run")
    assert_all_ran_and_match(found, 6, process.stdout)
    assert builds_in(root) == 2
