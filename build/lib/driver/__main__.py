"""``python -m driver CONFIG [--namelist input.nml] [--restart FILE]``, under ``mpirun -n 6*layout**2``.

The orchestration mode comes from ``FV3_DACEMODE`` (``Python`` when unset).
Exit codes: 0 success; 2 a configuration, namelist, restart or output-folder
error (one line, printed once by rank 0: :mod:`driver.inputs`); 1 any other
error (the job is aborted on all ranks).
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import IO, TYPE_CHECKING, Any, Optional, Sequence

if TYPE_CHECKING:
    from driver.config import RunConfig


class _OneRankParser(argparse.ArgumentParser):
    """An argument parser whose usage, help and errors are printed by rank 0 only (every rank exits 2)."""

    def _print_message(self, message: str, file: Optional[IO[str]] = None) -> None:
        from mpi4py import MPI

        if MPI.COMM_WORLD.Get_rank() == 0:
            super()._print_message(message, file)


def parse_arguments(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    parser = _OneRankParser(prog="python -m driver", description="Cubed-sphere shallow-water model run.")
    parser.add_argument("config", help="run configuration (YAML), e.g. configs/c24_case2.yaml")
    parser.add_argument("--namelist", help="FV3 namelist whose shared fields override the configuration")
    parser.add_argument("--restart", help="restart file to continue from (restart_step<N>.npz)")
    parser.add_argument(
        "--set", action="append", default=[], metavar="FIELD=VALUE",
        help="override a configuration field (YAML value; output fields as output.FIELD), e.g. --set days=1",
    )
    return parser.parse_args(argv)


def main(argv: Optional[Sequence[str]] = None) -> int:
    arguments = parse_arguments(argv)
    from mpi4py import MPI

    from driver.inputs import InputError, prepare_output_directory, read_inputs

    world = MPI.COMM_WORLD
    try:
        inputs = read_inputs(world, arguments.config, arguments.namelist, arguments.set, arguments.restart)
        communicator, dace_config = _orchestration(arguments.config, inputs.config)
        config = prepare_output_directory(world, inputs.config)
    except InputError as error:
        if world.Get_rank() == 0:
            print(error, file=sys.stderr, flush=True)
        return 2
    with communicator.abort_on_exception():
        from orchestra import abstract_device_storage, builds_without_device

        from driver.model import Model
        from driver.simulation import Simulation

        if builds_without_device(dace_config):
            # A GPU `Build` job (a login node: nvcc, no GPU): the state is allocated as abstract
            # device arrays, the first step builds (or finds) the library, and every rank exits.
            with abstract_device_storage():
                Model(config, communicator, dace_config).dycore()
            return 0
        started = time.perf_counter()
        model = Model(config, communicator, dace_config)
        simulation = Simulation(model, restart=inputs.restart, setup_seconds=time.perf_counter() - started)
        del inputs  # the restart's fields of the whole cube are in the state now
        simulation.run()
    return 0


def _orchestration(path: str, config: "RunConfig") -> tuple[Any, Any]:
    """The job's communicator and DaceConfig; a bad orchestra setting (``FV3_DACEMODE``, ...) is an InputError."""
    from orchestra import ConfigurationError, DaceConfig
    from orchestra.comm import Communicator, CubedSpherePartitioner, TilePartitioner

    from driver.inputs import InputError

    communicator = Communicator.world(CubedSpherePartitioner(TilePartitioner((config.layout, config.layout))))
    try:
        return communicator, DaceConfig(communicator, backend=config.backend)
    except ConfigurationError as error:  # read from the environment: the same on every rank
        raise InputError(f"configuration error: {path}: {error}") from error


if __name__ == "__main__":
    sys.exit(main())
