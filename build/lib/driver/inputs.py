"""A run's inputs, read and checked before the model is built, with one verdict for all ranks.

Every rank reads the configuration (with ``--namelist`` and ``--set``) and the
restart file itself, and the ranks then agree (one ``allgather``): if any rank
failed, every rank raises the same :class:`InputError`, which ``python -m
driver`` prints once, from rank 0, before exiting with status 2 on every rank.
A file only some ranks can read is reported with the rank that could not.
No rank is left waiting in a collective and no traceback is printed.

:func:`prepare_output_directory` (called once every other input is known to
be good, so a failed start leaves no empty folder): rank 0 alone picks the
output folder (never one holding an earlier run:
:func:`driver.output.fresh_directory`), creates it and checks that it can
write there, so a bad ``output.directory`` is reported now, not after the
first steps.

Each message starts with what it is about: ``configuration error:``,
``restart error:`` or ``output error:``.
"""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path
from typing import Any, Optional, Sequence

from driver.config import ConfigError, RunConfig, load_config, parse_overrides
from driver.output import fresh_directory
from driver.restart import Restart, RestartError, load_restart


class InputError(Exception):
    """A run input that cannot be used; the message is one line, the same on every rank."""


@dataclasses.dataclass(frozen=True)
class RunInputs:
    """What a run starts from: its configuration and, if given, a checked restart."""

    config: RunConfig
    restart: Optional[Restart]


def read_inputs(
    world: Any, config_path: str, namelist: Optional[str] = None, settings: Sequence[str] = (),
    restart_path: Optional[str] = None,
) -> RunInputs:
    """Read and check the inputs on every rank of ``world`` (collective); raise :class:`InputError` on all.

    ``settings`` are ``--set FIELD=VALUE`` items.
    """
    outcome: Any
    try:
        config = load_config(config_path, namelist, overrides=parse_overrides(list(settings)))
        if world.Get_size() != config.total_ranks:
            raise ConfigError(
                f"{config_path}: layout {config.layout} needs {config.total_ranks} ranks "
                f"(6 * layout**2), but the job has {world.Get_size()}; "
                f"run with mpirun -n {config.total_ranks} or change 'layout'"
            )
        restart = None if restart_path is None else load_restart(restart_path, config)
        outcome = RunInputs(config, restart)
    except ConfigError as error:
        outcome = f"configuration error: {error}"
    except RestartError as error:
        outcome = f"restart error: {error}"
    agree_on_error(world, outcome if isinstance(outcome, str) else None)
    return outcome


def agree_on_error(world: Any, message: Optional[str]) -> None:
    """Raise the first rank's message on every rank if any rank has one (collective)."""
    messages = world.allgather(message)
    failed = [rank for rank, text in enumerate(messages) if text is not None]
    if not failed:
        return
    first = failed[0]
    text = messages[first]
    if messages[0] is None:  # rank 0 read the inputs: say which rank could not
        kind, _, detail = text.partition(": ")
        text = f"{kind} (on rank {first}; rank 0 could read it): {detail}"
    raise InputError(text)


def prepare_output_directory(world: Any, config: RunConfig) -> RunConfig:
    """``config`` with the output folder rank 0 chose, created and checked (collective; InputError on all)."""
    verdict = world.bcast(_choose_output_directory(config) if world.Get_rank() == 0 else None, root=0)
    if isinstance(verdict, str):
        raise InputError(verdict)
    if verdict == Path(config.output.directory):
        return config
    if world.Get_rank() == 0:
        print(f"[driver] {config.output.directory} holds an earlier run: writing to {verdict} instead "
              "(--set output.overwrite=true writes into the same folder)", flush=True)
    return dataclasses.replace(config, output=dataclasses.replace(config.output, directory=str(verdict)))


def _choose_output_directory(config: RunConfig) -> "Path | str":
    """On rank 0: a fresh output folder that exists and is writable, or an ``output error`` line."""
    requested = Path(config.output.directory)
    chosen = fresh_directory(requested, config.output.overwrite)
    try:
        chosen.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=chosen):
            pass
    except OSError as error:
        reason = error.strerror or str(error)
        blocker = next((p for p in (chosen, *chosen.parents) if p.exists() and not p.is_dir()), None)
        if blocker is not None:
            reason = f"{blocker} is a file, not a folder"
        return (
            f"output error: {chosen}: cannot write the run's output there ({reason}); "
            "choose another folder with --set output.directory=PATH"
        )
    return chosen
