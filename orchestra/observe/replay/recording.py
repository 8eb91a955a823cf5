"""The on-disk format of a recording, its settings, and the checks that refuse a damaged one.

::

    <folder>/manifest.json          what was recorded (see :func:`new_manifest`)
    <folder>/before/<name>.npy      every array and scalar argument before the call
    <folder>/after/<name>.npy       ... and after it
    <folder>/callbacks/<i>_<what>.npy  the contents a callback invocation left in an array

Arrays are stored C-ordered; their strides (in elements) in the library's
layout are in the manifest. Nothing here imports DaCe or gt4py.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Optional

import numpy as np

FORMAT_VERSION = 1
MANIFEST_NAME = "manifest.json"
RECORD_VARIABLE = "ORCHESTRA_RECORD"
RECORD_CALL_VARIABLE = "ORCHESTRA_RECORD_CALL"
DEFAULT_RECORD_CALL = 2
#: What a recorded argument is.
ARRAY, SCALAR, CALLBACK = "array", "scalar", "callback"


class RecordingError(ValueError):
    """A recording that cannot be replayed (missing, partial, damaged, or of another format)."""


def record_from_environment() -> Optional[Path]:
    """``ORCHESTRA_RECORD`` as a folder, None when unset or empty."""
    value = os.environ.get(RECORD_VARIABLE, "").strip()
    return Path(value).expanduser().absolute() if value else None


def record_call_from_environment() -> int:
    """``ORCHESTRA_RECORD_CALL`` (which call to record, counting from 1), default 2."""
    value = os.environ.get(RECORD_CALL_VARIABLE, "").strip()
    if not value:
        return DEFAULT_RECORD_CALL
    if not value.isdigit() or int(value) < 1:
        raise RecordingError(f"{RECORD_CALL_VARIABLE}={value!r}: expected a call number >= 1 (1 is the first call)")
    return int(value)


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def save_array(folder: Path, relative: str, value: np.ndarray, files: dict[str, str]) -> str:
    """Write ``value`` to ``folder/relative`` and note its checksum in ``files``; returns ``relative``."""
    path = folder / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    np.save(path, value if value.flags.c_contiguous else np.ascontiguousarray(value), allow_pickle=False)
    files[relative] = sha256(path)
    return relative


def write_manifest(folder: Path, manifest: dict[str, Any]) -> None:
    (folder / MANIFEST_NAME).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")


_FIX = "record the call again (ORCHESTRA_RECORD=DIR, see docs/debugging.md)"


def read_manifest(folder: Path) -> dict[str, Any]:
    """The manifest of the recording in ``folder``, after checking the format and every file's checksum."""
    folder = Path(folder)
    if not folder.is_dir():
        raise RecordingError(f"no recording at {folder}: the folder does not exist (give DIR/<program>[/rank<R>])")
    path = folder / MANIFEST_NAME
    if not path.is_file():
        nested = sorted(p.parent.name for p in folder.glob(f"*/{MANIFEST_NAME}"))
        hint = f"; it holds recordings in {', '.join(nested)}: give one of them" if nested else f"; {_FIX}"
        raise RecordingError(f"{folder} is not a recording: it has no {MANIFEST_NAME}{hint}")
    try:
        manifest = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise RecordingError(f"the manifest {path} is unreadable ({error}); {_FIX}") from error
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT_VERSION:
        found = manifest.get("format") if isinstance(manifest, dict) else None
        raise RecordingError(
            f"the recording {folder} has format version {found!r}, this orchestra reads version {FORMAT_VERSION}; "
            f"replay it with the orchestra that recorded it, or {_FIX}"
        )
    missing = [key for key in ("program", "build", "arguments", "callbacks", "files") if key not in manifest]
    if missing:
        raise RecordingError(f"the manifest {path} lacks {', '.join(missing)} (edited or damaged); {_FIX}")
    try:
        _check_files(folder, manifest)
    except (KeyError, TypeError, AttributeError) as error:
        raise RecordingError(f"the manifest {path} is malformed (at {error!r}: edited or damaged); {_FIX}") from error
    return manifest


def _check_files(folder: Path, manifest: dict[str, Any]) -> None:
    files: dict[str, str] = manifest["files"]
    arrays = [a for a in manifest["arguments"] if a["kind"] != CALLBACK]
    referenced = {a["before"] for a in arrays} | {a["after"] for a in arrays}
    for invocation in manifest["callbacks"]:
        referenced |= set(invocation["changed"].values())
        if invocation["returned"].get("file"):
            referenced.add(invocation["returned"]["file"])
    unlisted = sorted(referenced - set(files))
    if unlisted:
        raise RecordingError(f"the manifest in {folder} names {unlisted[0]} but has no checksum of it (edited); {_FIX}")
    for relative, expected in files.items():
        path = folder / relative
        if not path.is_file():
            raise RecordingError(f"the recording {folder} is incomplete: {relative} is missing; {_FIX}")
        if sha256(path) != expected:
            raise RecordingError(
                f"the recording {folder} is damaged: {relative} does not match its sha256 in the manifest "
                f"(truncated or changed since it was recorded); {_FIX}"
            )


def load_array(folder: Path, relative: str, dtype: str, shape: list[int]) -> np.ndarray:
    """A recorded array, checked against the dtype and shape the manifest gives."""
    try:
        value = np.load(folder / relative, allow_pickle=False)
    except (OSError, ValueError) as error:
        raise RecordingError(f"the recording {folder} is damaged: {relative} is unreadable ({error}); {_FIX}") from error
    if value.dtype != np.dtype(dtype) or list(value.shape) != list(shape):
        raise RecordingError(
            f"the recording {folder} is inconsistent: {relative} holds {value.dtype} {list(value.shape)} but the "
            f"manifest says {dtype} {list(shape)} (edited); {_FIX}"
        )
    return value
