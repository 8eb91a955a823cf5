"""The build coordinator's communication under real mpirun: fixed per rank on the common path, details on failure.

Runs ``mpi_agreement_worker.py`` (no DaCe, no build) at 1, 4, 6, 9 and 24
ranks and reads each rank's :attr:`BuildCoordinator.traffic`: on the common
path every rank's bytes depend on the number of code-path classes, never on
the number of ranks, and disagreements and failures still raise the same
error on every rank.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestra.comm import CubedSpherePartitioner, TilePartitioner
from orchestra.distributed.coordinator import class_representatives, code_path_class
from tests.mpi_launcher import run_mpi

WORKER = Path(__file__).with_name("mpi_agreement_worker.py")

pytestmark = pytest.mark.mpi

#: job name -> (layout, cubed sphere)
JOBS = {
    "tile-1x1": ("1x1", False),  # 1 rank, 1 class
    "cube-1x1": ("1x1", True),  # 6 ranks, 1 class
    "tile-2x2": ("2x2", False),  # 4 ranks, 4 classes
    "cube-2x2": ("2x2", True),  # 24 ranks, 4 classes
    "tile-3x3": ("3x3", False),  # 9 ranks, 9 classes
}

COMMON = ("per-class", "shared", "one-makes")


def partitioner_of(job: str):
    layout, cube = JOBS[job]
    ni, _, nj = layout.partition("x")
    tile = TilePartitioner((int(ni), int(nj)))
    return CubedSpherePartitioner(tile) if cube else tile


@pytest.fixture(scope="module")
def jobs() -> dict[str, list[dict]]:
    """Every job's RESULT per rank (the jobs run once for the whole module)."""
    found = {}
    for job, (layout, cube) in JOBS.items():
        size = partitioner_of(job).total_ranks
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("OMPI_MCA_mpi_yield_when_idle", "1")  # up to 24 ranks on 2 cores
            process = run_mpi(size, WORKER, layout, *(["--cube"] if cube else []), timeout=180)
        lines = [json.loads(line[7:]) for line in process.stdout.splitlines() if line.startswith("RESULT ")]
        assert sorted(line["rank"] for line in lines) == list(range(size)), process.stdout[-3000:]
        found[job] = [line["scenarios"] for line in sorted(lines, key=lambda line: line["rank"])]
    return found


def collectives(n_classes: int) -> list[list]:
    """What every rank spends in collectives on the common path: key outcome, keys, record, build, load."""
    board = 64 * n_classes + 128
    return [
        ["Allreduce", "outcome", 8, 8],
        ["Allreduce", "keys", board, board],
        ["Allreduce", "outcome", 8, 8],
        ["Iallreduce", "build outcome", 8, 8],
        ["Allreduce", "outcome", 8, 8],
    ]


def role(partitioner, rank: int) -> str:
    """Rank 0, the builder of a class (named), or a waiting rank: what decides a rank's traffic."""
    if rank == 0:
        return "root"
    if rank in class_representatives(partitioner).values():
        return f"builder of {code_path_class(partitioner, rank).name}"
    return "waiting"


def traffic_by_role(job: str, found: list[dict], scenario: str) -> dict[str, list]:
    partitioner = partitioner_of(job)
    by_role: dict[str, list] = {}
    for rank, scenarios in enumerate(found):
        traffic = scenarios[scenario]["traffic"]
        assert by_role.setdefault(role(partitioner, rank), traffic) == traffic, (job, rank)
    return by_role


def spent(traffic: list[list]) -> int:
    return sum(sent + received for _operation, _step, sent, received in traffic)


@pytest.mark.parametrize("job", sorted(JOBS))
@pytest.mark.parametrize("scenario", COMMON)
def test_common_path_costs_fixed_collectives_and_one_message_per_builder(jobs, job, scenario):
    partitioner = partitioner_of(job)
    n_classes = len(class_representatives(partitioner))
    builders = sorted(class_representatives(partitioner).values()) if scenario != "shared" else [0]
    for rank, scenarios in enumerate(jobs[job]):
        traffic = scenarios[scenario]["traffic"]
        assert [t for t in traffic if t[0] not in ("Send", "Recv")] == collectives(n_classes), (rank, traffic)
        messages = [t[0] for t in traffic if t[0] in ("Send", "Recv")]
        if rank == 0:
            assert messages == ["Recv"] * (len(builders) - 1)
        else:
            assert messages == (["Send"] if rank in builders else [])


@pytest.mark.parametrize("small, large", [("tile-1x1", "cube-1x1"), ("tile-2x2", "cube-2x2")])
@pytest.mark.parametrize("scenario", COMMON)
def test_bytes_per_rank_do_not_grow_with_the_ranks(jobs, small, large, scenario):
    """With the same classes, every role spends the same bytes at 1 and 6, at 4 and 24 ranks."""
    few = traffic_by_role(small, jobs[small], scenario)
    many = traffic_by_role(large, jobs[large], scenario)
    for name, traffic in few.items():
        assert many[name] == traffic, name
    n_classes = len(class_representatives(partitioner_of(small)))
    assert many.get("waiting", collectives(n_classes)) == collectives(n_classes)
    assert max(map(spent, few.values())) == max(map(spent, many.values()))


@pytest.mark.parametrize("job", sorted(JOBS))
def test_builders_are_the_class_representatives_and_rank_zero_records_each_class(jobs, job):
    partitioner = partitioner_of(job)
    representatives = class_representatives(partitioner)
    size = partitioner.total_ranks
    for rank, scenarios in enumerate(jobs[job]):
        assert scenarios["per-class"]["builders"] == sorted(representatives.values())
        assert scenarios["per-class"]["built"] == (rank in representatives.values())
        assert scenarios["shared"]["builders"] == [0]
        assert scenarios["shared"]["built"] == (rank == 0)
        assert not scenarios["per-class"]["made"] and not scenarios["shared"]["made"]  # every build found
        assert scenarios["one-makes"]["made"]  # made by one builder, known on every rank
    asked = jobs[job][0]["per-class"]["asked"]
    expected = [
        [code_path.name, [r for r in range(size) if code_path_class(partitioner, r) == code_path]]
        for code_path, _ in sorted(representatives.items(), key=lambda item: item[1])
    ]
    assert [[name, ranks] for name, ranks, _inputs in asked] == expected
    assert all(inputs["class"] == name for name, _ranks, inputs in asked)
    assert [ranks for _name, ranks, _inputs in jobs[job][0]["shared"]["asked"]] == [list(range(size))]
    assert all(not scenarios["per-class"]["asked"] for scenarios in jobs[job][1:])


@pytest.mark.parametrize("job", ["cube-1x1", "cube-2x2"])
def test_a_disagreement_in_one_class_raises_on_every_rank_naming_the_input(jobs, job):
    partitioner = partitioner_of(job)
    last = partitioner.total_ranks - 1
    reference = min(r for r in range(last) if code_path_class(partitioner, r) == code_path_class(partitioner, last))
    errors = [scenarios["disagree"] for scenarios in jobs[job]]
    assert {error["kind"] for error in errors} == {"RankDisagreementError"}
    assert len({error["message"] for error in errors}) == 1
    message = errors[0]["message"]
    assert message.startswith(f"ranks {last} and {reference} have the same code path but different build inputs")
    assert f"Differences (rank {last} vs rank {reference}): scalars['self.scale']: 3.0 vs 2.0" in message


@pytest.mark.parametrize("job", sorted(JOBS))
def test_a_failure_on_one_rank_raises_the_same_error_on_every_rank(jobs, job):
    partitioner = partitioner_of(job)
    failing = max(partitioner.total_ranks - 2, 0)
    builder = max(class_representatives(partitioner).values())
    expected = {
        "step-fails": (
            "BuildError",
            f"computing the build key of Model.__call__ failed on 1 rank(s) ({failing}); rank {failing}: "
            f"ValueError: no key on rank {failing}\nTraceback",
        ),
        "build-fails": (
            "BuildError",
            f"building Model.__call__ failed on 1 rank(s) ({builder}); rank {builder}: "
            "RuntimeError: compiler exited with 1\nTraceback",
        ),
        "build-missing": ("MissingBuildError", "no usable build of Model"),
    }
    for scenario, (kind, start) in expected.items():
        errors = [scenarios[scenario] for scenarios in jobs[job]]
        assert {error["kind"] for error in errors} == {kind}, scenario
        assert len({error["message"] for error in errors}) == 1, scenario
        assert errors[0]["message"].startswith(start), errors[0]["message"]
        assert all(error["collective"] for error in errors), scenario
