"""Restart files (``restart_step<N>.npz``): their format, and reading one with every defect named.

A restart file is an ``.npz`` archive of plain arrays (no pickles) holding

- ``metadata``: JSON ``{"step": N, "config": {...}, "initial_invariants": {...} or null}``,
  where ``config`` holds the fields of :data:`RESTART_FIELDS` of the run that wrote it;
- ``h``, ``u``, ``v``: the prognostic fields of the whole cube, ``[tile, i, j, k]``.

Every rank reads the whole file and keeps its own subdomain, so a restart
may use another layout. :func:`load_restart` refuses, with one
:class:`RestartError` line naming the file, a file that is missing, not a
file, truncated or otherwise not a zip archive, a bare ``.npy`` array, a
pickle (never loaded: unpickling runs code), an archive of other arrays,
damaged metadata, one written by a run of another configuration, fields of
the wrong shape or type or holding NaN/inf, and a step this run cannot
continue from.
"""

from __future__ import annotations

import dataclasses
import json
import zipfile
from pathlib import Path
from typing import Any, Mapping, Optional, Union

import numpy as np

from driver.host_copies import set_from_host
from driver.state import PROGNOSTIC_NAMES

#: Configuration fields a restart must agree on.
RESTART_FIELDS = ("resolution", "nz", "test_case", "alpha_degrees", "dt")

#: The invariants a restart records of the run's initial state.
INVARIANT_NAMES = ("mass", "energy", "enstrophy")


class RestartError(ValueError):
    """A restart file that cannot continue this run; the message is one line naming the file."""


def save_restart(
    target: Path, step: int, config: Any, initial: Optional[Mapping[str, float]], fields: Mapping[str, np.ndarray]
) -> None:
    """Write a restart file to ``target`` (a temporary path: see :func:`driver.output.atomic_write`)."""
    metadata = {
        "step": step,
        "config": {name: getattr(config, name) for name in RESTART_FIELDS},
        "initial_invariants": None if initial is None else dict(initial),
    }
    with open(target, "wb") as handle:
        np.savez(handle, metadata=json.dumps(metadata), **{name: fields[name] for name in PROGNOSTIC_NAMES})


@dataclasses.dataclass(frozen=True)
class Restart:
    """A checked restart file: its step, the initial invariants it recorded, the global fields."""

    path: Path
    step: int
    initial_invariants: Optional[dict[str, float]]
    fields: Mapping[str, np.ndarray]

    def fill(self, state: Any, geometry: Any) -> None:
        """Copy this rank's subdomain of the fields into ``state``'s compute domain."""
        s = geometry.subdomain
        for name in PROGNOSTIC_NAMES:
            piece = self.fields[name][s.tile, s.i_start : s.i_start + s.nx, s.j_start : s.j_start + s.ny]
            set_from_host(getattr(state, name), s.compute, piece)


def load_restart(path: Union[str, Path], config: Any) -> Restart:
    """Read the restart file at ``path`` and check that it can continue a run of ``config``."""
    path = Path(path)
    metadata, fields = _read_archive(path)
    step, initial = _check_metadata(path, metadata, config)
    _check_fields(path, fields, config)
    return Restart(path=path, step=step, initial_invariants=initial, fields=fields)


def _read_archive(path: Path) -> tuple[Any, dict[str, np.ndarray]]:
    """The parsed metadata and the fields of the archive at ``path``."""
    if not path.exists():
        raise RestartError(f"{path}: no such restart file")
    if not path.is_file():
        raise RestartError(f"{path}: not a file; give a restart_step<N>.npz file written by the driver")
    try:
        with open(path, "rb") as stream:
            _check_kind(path, stream.read(len(_NPY_START)))
        data = np.load(path, allow_pickle=False)
        if not isinstance(data, np.lib.npyio.NpzFile):
            raise RestartError(f"{path}: a single array (.npy), not a restart archive (restart_step<N>.npz)")
        with data:
            missing = [name for name in ("metadata", *PROGNOSTIC_NAMES) if name not in data.files]
            if missing:
                raise RestartError(
                    f"{path}: not a restart file of this driver: the archive lacks {', '.join(missing)} "
                    f"(it holds {', '.join(data.files) or 'nothing'})"
                )
            text = str(data["metadata"])
            fields = {name: data[name] for name in PROGNOSTIC_NAMES}
    except RestartError:
        raise
    except ValueError as error:
        if "Object arrays cannot be loaded" in str(error):
            raise _pickled(path) from error
        raise _unreadable(path, error) from error
    except (zipfile.BadZipFile, EOFError, OSError) as error:
        raise _unreadable(path, error) from error
    try:
        return json.loads(text), fields
    except ValueError as error:
        raise RestartError(f"{path}: its metadata is damaged (not JSON: {error})") from error


#: How files start: a zip archive (``.npz``), a ``.npy`` array, a pickle (protocol 2 and later).
_ZIP_START, _NPY_START, _PICKLE_START = b"PK", b"\x93NUMPY", b"\x80"


def _check_kind(path: Path, head: bytes) -> None:
    """Refuse a file that is no numpy file from its first bytes (``np.load`` would call it a pickle)."""
    if not head:
        raise RestartError(f"{path}: the file is empty (a restart written by the driver is never empty)")
    if head.startswith(_PICKLE_START):
        raise _pickled(path)
    if not head.startswith((_ZIP_START, _NPY_START)):
        raise RestartError(
            f"{path}: not a restart file: it is no .npz archive (it starts with {head!r}); "
            "give a restart_step<N>.npz file written by the driver"
        )


def _pickled(path: Path) -> RestartError:
    return RestartError(
        f"{path}: holds pickled Python objects, which the driver never loads (unpickling runs code); "
        "give a restart_step<N>.npz file written by the driver"
    )


def _unreadable(path: Path, error: BaseException) -> RestartError:
    detail = " ".join(str(error).split())[:160] or type(error).__name__
    return RestartError(
        f"{path}: not a readable restart file (truncated, or not a restart_step<N>.npz written by the driver): "
        f"{detail}"
    )


def _check_metadata(path: Path, metadata: Any, config: Any) -> tuple[int, Optional[dict[str, float]]]:
    """The step and initial invariants of valid ``metadata`` written by a run of ``config``'s kind."""
    def damaged(what: str) -> RestartError:
        return RestartError(f"{path}: its metadata is damaged: {what}")

    if not isinstance(metadata, dict):
        raise damaged(f"expected a JSON object, got {type(metadata).__name__}")
    step, written, initial = metadata.get("step"), metadata.get("config"), metadata.get("initial_invariants")
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        raise damaged(f"'step' should be a whole number >= 0, got {step!r}")
    if not isinstance(written, dict):
        raise damaged(f"'config' should be an object, got {written!r}")
    for name in RESTART_FIELDS:
        if name not in written:
            raise damaged(f"'config' lacks '{name}'")
        if written[name] != getattr(config, name):
            raise RestartError(
                f"{path}: written by a run with {name}={written[name]!r}, but this run has "
                f"{name}={getattr(config, name)!r}; restart with the configuration that wrote it"
            )
    if initial is not None and (
        not isinstance(initial, dict) or sorted(initial) != sorted(INVARIANT_NAMES)
        or not all(isinstance(initial[name], (int, float)) for name in INVARIANT_NAMES)
    ):
        raise damaged(f"'initial_invariants' should be null or numbers {', '.join(INVARIANT_NAMES)}")
    if step >= config.n_steps:
        days = config.n_steps * config.dt / 86400.0
        raise RestartError(
            f"{path}: the file is at step {step}, but this run ends at step {config.n_steps} "
            f"({days:g} days): nothing is left to run; raise 'days' (e.g. --set days=...)"
        )
    return step, None if initial is None else {name: float(initial[name]) for name in INVARIANT_NAMES}


def _check_fields(path: Path, fields: Mapping[str, np.ndarray], config: Any) -> None:
    expected = (6, config.resolution, config.resolution, config.nz)
    for name, field in fields.items():
        if field.shape != expected:
            raise RestartError(
                f"{path}: field {name} has shape {field.shape}, but this run needs {expected} "
                "[tile, i, j, k]"
            )
        if field.dtype.kind != "f":
            raise RestartError(f"{path}: field {name} holds {field.dtype} values, not floating-point numbers")
        bad = int(np.size(field) - np.count_nonzero(np.isfinite(field)))
        if bad:
            raise RestartError(f"{path}: field {name} holds {bad} NaN or infinite value(s); it cannot be continued")

