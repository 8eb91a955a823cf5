"""Recording the N-th call of an orchestrated program (see :mod:`orchestra.observe.replay`).

:class:`RecordPlan` belongs to one :class:`~orchestra.orchestrate.OrchestratedProgram`
(created only when ``DaceConfig.record`` is set): it counts the program's
calls and hands the N-th to :meth:`orchestra.calls.fast_path.FastCaller.record_call`
with a :class:`CallRecorder`. The recorder snapshots every argument before
and after the library call, wraps each callback to note the arrays an
invocation changed (every argument array and the callback's own array
arguments, compared bit for bit before and after it) and its return value,
and writes the recording atomically.
"""

from __future__ import annotations

import datetime
import logging
import numbers
import os
import shutil
import socket
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np

from orchestra.cache.layout import program_slug
from orchestra.cache.versions import toolchain_versions
from orchestra.observe.replay.recording import ARRAY, CALLBACK, FORMAT_VERSION, SCALAR, save_array, write_manifest

log = logging.getLogger("orchestra")


def host_copy(value: Any) -> np.ndarray:
    """A C-ordered host copy of an array-like (numpy, gt4py storage, container, cupy)."""
    if hasattr(value, "__cuda_array_interface__"):
        import cupy

        return cupy.asnumpy(cupy.asarray(value))
    return np.array(value, copy=True, order="C")


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Bitwise equality (NaNs with the same payload are equal, -0.0 differs from 0.0)."""
    return a.shape == b.shape and a.dtype == b.dtype and a.reshape(-1).view(np.uint8).tobytes() == b.reshape(-1).view(np.uint8).tobytes()


class RecordPlan:
    """Which call of one program to record, and where."""

    def __init__(self, root: Path, call: int, label: str, rank: Optional[int]) -> None:
        self.root, self.call, self.label, self.rank = Path(root), call, label, rank
        self.calls = 0

    @property
    def folder(self) -> Path:
        folder = self.root / program_slug(self.label)
        return folder if self.rank is None else folder / f"rank{self.rank}"

    def __call__(self, caller: Any, args: tuple, kwargs: dict) -> tuple[Any, bool]:
        """Run the call through ``caller``, recording it if it is the chosen one; (result, whether recorded)."""
        self.calls += 1
        if self.calls != self.call:
            return caller(args, kwargs), False
        recorder = CallRecorder(self.folder, self.label, self.call, self.rank)
        return caller.record_call(args, kwargs, recorder), True


class CallRecorder:
    """The recording of one library call, written atomically by :meth:`finish`."""

    def __init__(self, folder: Path, label: str, call: int, rank: Optional[int]) -> None:
        self.folder, self.label, self.call, self.rank = folder, label, call, rank
        folder.parent.mkdir(parents=True, exist_ok=True)
        self.staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}.tmp-", dir=folder.parent))
        self.files: dict[str, str] = {}
        self.arguments: list[dict[str, Any]] = []
        self.invocations: list[dict[str, Any]] = []
        self._arrays: dict[str, Any] = {}  # name -> the live array the library uses
        self._counts: dict[str, int] = {}
        self._start = time.perf_counter()

    # ------------------------------------------------------------ callbacks
    def wrap(self, name: str, function: Callable) -> Callable:
        """``function`` noting, per invocation, the arrays it changed and what it returned."""

        def recorded(*args: Any, **kwargs: Any) -> Any:
            own = {f"arg:{i}": a for i, a in enumerate(args) if isinstance(a, np.ndarray)}
            watched = {f"array:{n}": a for n, a in self._arrays.items()} | own
            before = {key: host_copy(a) for key, a in watched.items()}
            result = function(*args, **kwargs)
            self._note(name, watched, before, result)
            return result

        recorded.__wrapped__ = function  # type: ignore[attr-defined]
        return recorded

    def _note(self, name: str, watched: dict[str, Any], before: dict[str, np.ndarray], result: Any) -> None:
        number = len(self.invocations)
        index = self._counts.get(name, 0)
        self._counts[name] = index + 1
        changed = {}
        for key, array in watched.items():
            now = host_copy(array)
            if not same_bits(now, before[key]):
                changed[key] = save_array(self.staging, f"callbacks/{number}_{key.replace(':', '_')}.npy", now, self.files)
        self.invocations.append(
            {"callback": name, "index": index, "changed": changed, "returned": self._returned(number, result)}
        )

    def _returned(self, number: int, result: Any) -> dict[str, Any]:
        if result is None:
            return {"kind": "none"}
        if isinstance(result, np.ndarray):
            path = save_array(self.staging, f"callbacks/{number}_return.npy", result, self.files)
            return {"kind": "array", "file": path, "dtype": str(result.dtype), "shape": list(result.shape)}
        if isinstance(result, (numbers.Number, np.generic)) and not isinstance(result, complex):
            dtype = result.dtype if isinstance(result, np.generic) else np.result_type(type(result))
            value = result.item() if isinstance(result, np.generic) else result
            return {"kind": "number", "dtype": str(dtype), "python": type(value).__name__, "value": value}
        return {"kind": "unsupported", "type": type(result).__name__}

    # ------------------------------------------------------------ the call
    def before(self, keywords: dict[str, Any], descriptors: dict[str, Any], callbacks: set[str]) -> None:
        """Snapshot every argument of the library (in signature order) before the call."""
        for name, desc in descriptors.items():
            value = keywords.get(name)
            if name in callbacks or _is_callback(desc):
                self.arguments.append({"name": name, "kind": CALLBACK})
                continue
            scalar = type(desc).__name__ == "Scalar"
            dtype = desc.dtype.as_numpy_dtype()
            data = np.asarray(value, dtype=dtype) if scalar else host_copy(value)
            entry = {
                "name": name, "kind": SCALAR if scalar else ARRAY, "dtype": str(data.dtype), "shape": list(data.shape),
                "strides": [] if scalar else [int(s) for s in desc.strides],
                "before": save_array(self.staging, f"before/{name}.npy", data, self.files),
            }
            if not scalar:
                self._arrays[name] = value
            self.arguments.append(entry)

    def after(self, keywords: dict[str, Any]) -> None:
        """Snapshot every argument after the call."""
        for entry in self.arguments:
            if entry["kind"] == CALLBACK:
                continue
            value = keywords.get(entry["name"])
            data = np.asarray(value, dtype=entry["dtype"]) if entry["kind"] == SCALAR else host_copy(value)
            entry["after"] = save_array(self.staging, f"after/{entry['name']}.npy", data, self.files)

    def finish(self, origin: dict[str, Any], library_seconds: float) -> Path:
        """Write the manifest and move the recording into place; returns its folder."""
        manifest = {
            "format": FORMAT_VERSION,
            "program": self.label,
            "call": self.call,
            "rank": self.rank,
            "build": origin,
            "versions": toolchain_versions(),
            "arguments": self.arguments,
            "callbacks": self.invocations,
            "files": self.files,
            "recorded": {
                "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                "host": socket.gethostname(),
                "pid": os.getpid(),
                "library_seconds": library_seconds,
                "record_seconds": time.perf_counter() - self._start,
            },
        }
        write_manifest(self.staging, manifest)
        folder = _free_name(self.folder)
        os.rename(self.staging, folder)  # atomic; fails rather than replace a folder made meanwhile
        if folder != self.folder:
            log.info("%s: %s holds an earlier recording (kept); this one is %s", self.label, self.folder, folder)
        log.info("%s: call %d recorded in %s", self.label, self.call, folder)
        return folder

    def abandon(self) -> None:
        """Remove the unfinished recording (the call raised)."""
        shutil.rmtree(self.staging, ignore_errors=True)


def _free_name(folder: Path) -> Path:
    """``folder``, or ``folder.2``, ``folder.3``... if taken: an earlier recording is never replaced."""
    candidate, number = folder, 1
    while candidate.exists():
        number += 1
        candidate = folder.with_name(f"{folder.name}.{number}")
    return candidate


def _is_callback(desc: Any) -> bool:
    return type(desc.dtype).__name__ == "callback"
