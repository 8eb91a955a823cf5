"""MPI worker: the build coordinator's agreement, request and outcome steps, without building anything.

Every rank runs :class:`orchestra.distributed.coordinator.BuildCoordinator`'s steps in the
order :func:`orchestra.pipeline.obtain.ensure_built` and ``load_entry`` use
them, with a synthetic sha256 key per code-path class (or one key for all),
through several scenarios in one job, and prints one line per rank::

    RESULT {"rank": 3, "scenarios": {"per-class": {...}, "disagree": {...}, ...}}

Scenarios: ``per-class`` and ``shared`` (the common path: traffic, builders,
requests), ``disagree`` (the last rank folds in another ``self.scale``; only
where its class has other ranks), ``step-fails`` (computing the key raises on
one rank), ``build-fails`` and ``build-missing`` (the last builder's build
raises). Usage: ``mpi_agreement_worker.py LAYOUT [--cube]``, e.g. ``2x2 --cube``.
"""

from __future__ import annotations

import hashlib
import json
import sys
from typing import Any, Callable

from orchestra.comm import Communicator, CubedSpherePartitioner, TilePartitioner
from orchestra.distributed.coordinator import BuildCoordinator, class_representatives, code_path_class
from orchestra.errors import MissingBuildError

LABEL = "Model.__call__"


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def first_call(communicator: Communicator, key: str, inputs: dict, build: Callable[[], None]) -> dict[str, Any]:
    """The coordinator's steps of a first call; what this rank saw."""
    coordinator = BuildCoordinator(communicator)
    rank = communicator.rank
    partitioner = communicator.partitioner
    code_path, tile = code_path_class(partitioner, rank), partitioner.tile_index(rank)
    coordinator.collectively(lambda: key, f"computing the build key of {LABEL}")
    table = coordinator.check_agreement(key, inputs, code_path, tile)
    asked = coordinator.gather_requests(table, inputs, code_path)
    coordinator.collectively(lambda: None, f"recording the builds {LABEL} asks for")
    built = coordinator.run(table, key, build, LABEL)
    coordinator.collectively(lambda: None, f"loading {LABEL}")
    return {
        "built": built.builder_here,
        "made": built.built_anywhere,
        "builders": table.builder_ranks,
        "asked": [[item.code_path, list(item.ranks), item.inputs] for item in asked],
        "traffic": [[t.operation, t.step, t.sent, t.received] for t in coordinator.traffic],
    }


def failure(run: Callable[[], Any]) -> dict[str, Any]:
    """The error ``run`` raised (it must raise)."""
    try:
        run()
    except Exception as error:  # the scenario's expected error
        return {"kind": type(error).__name__, "message": str(error), "collective": getattr(error, "collective", False)}
    return {"kind": None}


def scenarios(communicator: Communicator) -> dict[str, Any]:
    rank, size = communicator.rank, communicator.size
    partitioner = communicator.partitioner
    name = code_path_class(partitioner, rank).name
    inputs = {"scalars": {"self.scale": 2.0}, "class": name}
    nothing = lambda: None  # noqa: E731
    found: dict[str, Any] = {
        "per-class": first_call(communicator, sha(f"model/{name}"), inputs, nothing),
        "shared": first_call(communicator, sha("model"), {"scalars": {"self.scale": 2.0}}, nothing),
    }
    last_builder = max(class_representatives(partitioner).values())
    # only the last class's builder makes a build; the others find theirs: every rank hears of it
    found["one-makes"] = first_call(communicator, sha(f"model/{name}/2"), inputs, lambda: rank == last_builder)

    last = size - 1
    last_class = code_path_class(partitioner, last)
    if sum(code_path_class(partitioner, r) == last_class for r in range(size)) > 1:
        odd = {**inputs, "scalars": {"self.scale": 3.0}} if rank == last else inputs
        odd_key = sha(json.dumps(odd, sort_keys=True))
        found["disagree"] = failure(lambda: first_call(communicator, odd_key, odd, nothing))

    failing = max(size - 2, 0)

    def key_step() -> str:
        if rank == failing:
            raise ValueError(f"no key on rank {rank}")
        return sha("model")

    coordinator = BuildCoordinator(communicator)
    found["step-fails"] = failure(lambda: coordinator.collectively(key_step, f"computing the build key of {LABEL}"))

    def failing_build(error: Exception) -> Callable[[], None]:
        def build() -> None:
            if rank == last_builder:
                raise error

        return build

    key = sha(f"model/{name}")
    found["build-fails"] = failure(
        lambda: first_call(communicator, key, inputs, failing_build(RuntimeError("compiler exited with 1")))
    )
    found["build-missing"] = failure(
        lambda: first_call(communicator, key, inputs, failing_build(MissingBuildError("no usable build of Model")))
    )
    return found


def main(argv: list[str]) -> None:
    ni, _, nj = argv[0].partition("x")
    tile = TilePartitioner((int(ni), int(nj or ni)))
    communicator = Communicator.world(CubedSpherePartitioner(tile) if "--cube" in argv else tile)
    with communicator.abort_on_exception():
        found = scenarios(communicator)
    print("RESULT " + json.dumps({"rank": communicator.rank, "scenarios": found}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
