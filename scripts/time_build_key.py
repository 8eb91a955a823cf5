"""Time the dycore's first-call cache key on every rank (no build, no parse).

The key is computed on every rank at the first call of an orchestrated
program (closure resolution over the whole call tree, source digests,
fingerprint). Run under MPI with the rank count of the configuration::

    mpirun -n 6 python scripts/time_build_key.py configs/c24_case2.yaml [--one-at-a-time]

Extra arguments are configuration overrides (``days=1``); with
``--one-at-a-time`` the ranks take turns, so that on a machine with fewer
cores than ranks a rank's wall time is its own. Prints, on rank 0,
the number of call-tree nodes, the fastest and slowest rank's first key time
(wall clock, and CPU time of the rank: with more ranks than cores the wall
time counts the others' turns) and the median over ranks of the best of two
repeats (a repeat makes a fresh DaCe program, as a first call does, but finds
Python's caches warm).
"""

from __future__ import annotations

import sys
import time

from mpi4py import MPI

from driver.config import load_config, parse_overrides
from driver.model import Model
from orchestra import DaceConfig
from orchestra.key.inputs import collect_build_inputs
from orchestra.cache.fingerprint import fingerprint
from orchestra.comm import Communicator, CubedSpherePartitioner, TilePartitioner
from orchestra.toolchain import dace_settings

REPEATS = 3


def key_seconds(program: object, one_at_a_time: bool) -> tuple[float, float, int]:
    """Wall and CPU seconds to compute the key of ``program`` (an OrchestratedProgram), and its node count.

    Each call starts from a fresh DaCe program, as a first call does. All
    ranks start together, or with ``one_at_a_time`` take turns (each rank's
    wall time then counts no other rank's work, as with a core per rank).
    """
    program._program = None  # what a first call sees: no resolved closure yet
    dace_program = program.dace_program(())
    world = MPI.COMM_WORLD
    turns = range(world.size) if one_at_a_time else [world.rank]
    for turn in turns:
        world.barrier()
        if turn == world.rank:
            measured = _timed_key(program, dace_program)
    world.barrier()
    return measured


def _timed_key(program: object, dace_program: object) -> tuple[float, float, int]:
    start, cpu_start = time.perf_counter(), time.process_time()
    with dace_settings():
        inputs = collect_build_inputs(dace_program, program.function, (), {}, backend="dace:cpu", pipeline={})
    fingerprint(inputs)
    return time.perf_counter() - start, time.process_time() - cpu_start, len(inputs["call_tree"])


def main() -> None:
    one_at_a_time = "--one-at-a-time" in sys.argv
    arguments = [argument for argument in sys.argv[1:] if argument != "--one-at-a-time"]
    config = load_config(arguments[0], None, overrides=parse_overrides(arguments[1:]))
    communicator = Communicator.world(CubedSpherePartitioner(TilePartitioner((config.layout, config.layout))))
    dace_config = DaceConfig(communicator, backend="dace:cpu", orchestration="BuildAndRun")
    program = Model(config, communicator, dace_config).dycore.__orchestra_programs__["__call__"]
    timings = [key_seconds(program, one_at_a_time) for _ in range(REPEATS)]
    gathered = MPI.COMM_WORLD.gather(timings, root=0)
    if MPI.COMM_WORLD.rank == 0:
        first_wall = [rank[0][0] for rank in gathered]
        first_cpu = [rank[0][1] for rank in gathered]
        repeat_cpu = sorted(min(cpu for _, cpu, _ in rank[1:]) for rank in gathered)
        print(
            f"build key of DynamicalCore.__call__ ({timings[0][2]} call-tree nodes), {len(gathered)} ranks"
            f"{' one at a time' if one_at_a_time else ''}: "
            f"first call {min(first_wall):.2f}-{max(first_wall):.2f} s wall, "
            f"{min(first_cpu):.2f}-{max(first_cpu):.2f} s CPU per rank; "
            f"best repeat {repeat_cpu[len(repeat_cpu) // 2]:.2f} s CPU (median over ranks)"
        )


if __name__ == "__main__":
    main()
