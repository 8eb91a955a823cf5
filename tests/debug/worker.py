"""Runs the test model once with debug checks, in its own process (a failing check ends it).

Usage: python -m tests.debug.worker CACHE_ROOT CHECKS CASE [--mpi]

With ``--mpi`` every rank runs; only rank 0 gets the bad inputs, the others
wait in a barrier after their call (the job must still end).
"""

from __future__ import annotations

import sys

from orchestra import DaceConfig
from orchestra.passes.debug import DebugChecks
from tests.debug.programs import ThicknessModel, inputs, run


def main(cache_root: str, checks: str, case: str, use_mpi: bool) -> None:
    rank = 0
    if use_mpi:
        from mpi4py import MPI

        rank = MPI.COMM_WORLD.Get_rank()
        case = case if rank == 0 else "clean"
    config = DaceConfig(
        None, backend="dace:cpu", orchestration="BuildAndRun", cache_root=cache_root,
        debug_checks=DebugChecks.parse(checks),
    )
    model = ThicknessModel(config)
    print(f"rank {rank}: calling the model", flush=True)
    run(model, inputs(case, "dace:cpu"))
    if use_mpi:
        MPI.COMM_WORLD.Barrier()
    print(f"rank {rank}: finished", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], "--mpi" in sys.argv[4:])
