"""``python -m driver CONFIG [--namelist input.nml] [--restart FILE]``, under ``mpirun -n 6*layout**2``.

The orchestration mode comes from ``FV3_DACEMODE`` (``Python`` when unset).
Exit codes: 0 success, 2 configuration error (reported once, by rank 0),
1 any other error (the job is aborted on all ranks).
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Optional, Sequence


def parse_arguments(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m driver", description="Cubed-sphere shallow-water model run.")
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

    from driver.config import ConfigError, load_config, parse_overrides

    world = MPI.COMM_WORLD
    try:
        config = load_config(arguments.config, arguments.namelist, overrides=parse_overrides(arguments.set))
        if world.Get_size() != config.total_ranks:
            raise ConfigError(
                f"{arguments.config}: layout {config.layout} needs {config.total_ranks} ranks "
                f"(6 * layout**2), but the job has {world.Get_size()}; "
                f"run with mpirun -n {config.total_ranks} or change 'layout'"
            )
    except ConfigError as error:
        if world.Get_rank() == 0:
            print(f"configuration error: {error}", file=sys.stderr, flush=True)
        return 2

    from orchestra import ConfigurationError, DaceConfig
    from orchestra.comm import Communicator, CubedSpherePartitioner, TilePartitioner

    communicator = Communicator.world(CubedSpherePartitioner(TilePartitioner((config.layout, config.layout))))
    try:
        dace_config = DaceConfig(communicator, backend=config.backend)
    except ConfigurationError as error:
        if world.Get_rank() == 0:
            print(f"configuration error: {arguments.config}: {error}", file=sys.stderr, flush=True)
        return 2
    with communicator.abort_on_exception():
        from driver.model import Model
        from driver.simulation import Simulation

        config = _with_fresh_output(config, communicator)
        started = time.perf_counter()
        model = Model(config, communicator, dace_config)
        Simulation(model, restart=arguments.restart, setup_seconds=time.perf_counter() - started).run()
    return 0


def _with_fresh_output(config, communicator):
    """The configuration with an output folder that holds no earlier run (unless output.overwrite)."""
    import dataclasses
    from pathlib import Path

    from driver.output import fresh_directory

    requested = Path(config.output.directory)
    chosen = communicator.bcast(fresh_directory(requested, config.output.overwrite) if communicator.rank == 0 else None)
    if chosen == requested:
        return config
    if communicator.rank == 0:
        print(f"[driver] {requested} holds an earlier run: writing to {chosen} instead "
              "(--set output.overwrite=true writes into the same folder)", flush=True)
    return dataclasses.replace(config, output=dataclasses.replace(config.output, directory=str(chosen)))


if __name__ == "__main__":
    sys.exit(main())
