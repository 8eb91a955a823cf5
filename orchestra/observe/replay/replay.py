"""Replaying a recorded call standalone: ``orchestra replay DIR [--repeat N] [--check]``.

The library is found in the cache by the recorded key (its checksums and
ownership checked as for any load), the arguments are allocated with the
recorded layout and filled from ``before/``, and each callback is replaced by
a :class:`CallbackReplayer`: its k-th invocation must be the k-th recorded
one (else the replay diverged), writes the recorded contents into the arrays
that invocation changed (its own array arguments and the library's
arguments) and returns the recorded value. No model object is needed.
"""

from __future__ import annotations

import statistics
import time
import warnings
from pathlib import Path
from typing import Any, Optional, TextIO

import numpy as np

from orchestra.cache.layout import default_cache_root
from orchestra.cache.store import BuildStore
from orchestra.cache.trust import check_trusted
from orchestra.cache.versions import toolchain_versions
from orchestra.observe.replay.recording import ARRAY, CALLBACK, RecordingError, load_array, read_manifest


def allocate(dtype: str, shape: list[int], strides: list[int]) -> np.ndarray:
    """An array of ``shape`` with ``strides`` (elements), 64-byte aligned, as the library was built for."""
    dtype_ = np.dtype(dtype)
    span = 1 + sum((n - 1) * s for n, s in zip(shape, strides)) if all(n > 0 for n in shape) else 0
    buffer = np.empty(max(span, 1) * dtype_.itemsize + 64, dtype=np.uint8)
    offset = (-buffer.ctypes.data) % 64
    return np.ndarray(shape, dtype_, buffer=buffer[offset:], strides=[s * dtype_.itemsize for s in strides])


class CallbackReplayer:
    """Stands in for every callback: replays the recorded invocations in order."""

    def __init__(self, folder: Path, invocations: list[dict[str, Any]], arrays: dict[str, np.ndarray]) -> None:
        self._arrays = arrays
        self._invocations = invocations
        self._effects = [
            {key: np.load(folder / relative, allow_pickle=False) for key, relative in item["changed"].items()}
            for item in invocations
        ]
        self._returns = [_returned_value(folder, item["returned"]) for item in invocations]
        self.position = 0
        #: why the replay diverged (an exception raised in a callback does not cross the library)
        self.diverged: Optional[str] = None

    def for_callback(self, name: str) -> Any:
        def replayed(*args: Any, **kwargs: Any) -> Any:
            return self._replay(name, args)

        return replayed

    def _replay(self, name: str, args: tuple) -> Any:
        position = self.position
        if position >= len(self._invocations) or self._invocations[position]["callback"] != name:
            expected = self._invocations[position]["callback"] if position < len(self._invocations) else "none"
            if self.diverged is None:
                self.diverged = f"callback invocation {position} is {name}, the recording has {expected}"
            self.position += 1
            return None
        self.position += 1
        for key, contents in self._effects[position].items():
            kind, _, which = key.partition(":")
            target = args[int(which)] if kind == "arg" else self._arrays[which]
            np.copyto(target, contents)
        return self._returns[position]


def _returned_value(folder: Path, returned: dict[str, Any]) -> Any:
    kind = returned["kind"]
    if kind == "none":
        return None
    if kind == "array":
        return load_array(folder, returned["file"], returned["dtype"], returned["shape"])
    if kind == "number":
        value = returned["value"]
        return {"float": float, "int": int, "bool": bool}.get(returned.get("python"), float)(value)
    raise RecordingError(f"a callback returned a {returned.get('type')}, which a recording cannot replay")


def _find_build(manifest: dict[str, Any], root: Optional[str]) -> Path:
    """The trusted, verified entry folder of the recorded build."""
    build = manifest["build"]
    if root is None:
        recorded = Path(build.get("cache_root", ""))
        root = str(recorded) if build.get("cache_root") and recorded.is_dir() else str(default_cache_root())
    store = BuildStore(root)
    found = store.lookup(build["key"], manifest["program"])
    if found.entry is None:
        raise RecordingError(
            f"the build of {manifest['program']} this recording ran (key {build['key'][:20]}, recorded in "
            f"{build.get('entry')}) is not usable in the cache {store.root}: {found.reason}; give its cache with "
            "--root (copy the entry folder into ROOT/<program>/ on another machine)"
        )
    entry = found.entry
    check_trusted(store.root, entry.path, [entry.library_path, *(entry.path / n for n in entry.manifest.files)])
    return entry.path


class Replay:
    """A recording loaded and ready to call."""

    def __init__(self, folder: Path, root: Optional[str] = None) -> None:
        from orchestra.pipeline.stages import load
        from orchestra.toolchain import dace_settings

        self.folder = Path(folder)
        self.manifest = read_manifest(self.folder)
        self.entry = _find_build(self.manifest, root)
        arguments = self.manifest["arguments"]
        self.before = {a["name"]: load_array(self.folder, a["before"], a["dtype"], a["shape"])
                       for a in arguments if a["kind"] != CALLBACK}
        self.after = {a["name"]: load_array(self.folder, a["after"], a["dtype"], a["shape"])
                      for a in arguments if a["kind"] != CALLBACK}
        self.arrays = {a["name"]: allocate(a["dtype"], a["shape"], a["strides"]) for a in arguments if a["kind"] == ARRAY}
        self.replayer = CallbackReplayer(self.folder, self.manifest["callbacks"], self.arrays)
        keywords: dict[str, Any] = dict(self.arrays)
        for a in arguments:
            if a["kind"] == CALLBACK:
                keywords[a["name"]] = self.replayer.for_callback(a["name"])
            elif a["kind"] != ARRAY:
                keywords[a["name"]] = self.before[a["name"]][()]
        self.restore()
        with dace_settings():
            self.compiled = load(self.entry).compiled_sdfg
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message="Return value")
                self._args = self.compiled.construct_arguments(**keywords)

    def restore(self) -> None:
        """Every array back to its recorded ``before`` contents; callbacks from the first invocation."""
        for name, array in self.arrays.items():
            np.copyto(array, self.before[name])
        self.replayer.position = 0
        self.replayer.diverged = None

    def call(self) -> float:
        """One call of the library; its seconds."""
        start = time.perf_counter()
        self.compiled.fast_call(*self._args)
        seconds = time.perf_counter() - start
        if self.replayer.diverged is not None:
            raise RecordingError(f"the replay diverged from the recording: {self.replayer.diverged}")
        if self.replayer.position != len(self.manifest["callbacks"]):
            raise RecordingError(
                f"the replay diverged: the library made {self.replayer.position} callback invocations, "
                f"the recording has {len(self.manifest['callbacks'])}"
            )
        return seconds

    def differences(self) -> list[str]:
        """One line per array whose contents differ from the recorded ``after`` (empty: bitwise equal)."""
        lines = []
        for name, array in self.arrays.items():
            expected = self.after[name]
            got = np.ascontiguousarray(array)
            if got.size == 0:
                continue
            bits = got.reshape(-1).view(np.uint8).reshape(got.size, -1) != expected.reshape(-1).view(np.uint8).reshape(got.size, -1)
            differing = np.flatnonzero(bits.any(axis=1))
            if differing.size:
                first = np.unravel_index(differing[0], got.shape)
                index = tuple(int(i) for i in first)
                lines.append(
                    f"{name}: {differing.size} of {got.size} elements differ, first at {list(index)}: "
                    f"replayed {got[index]!r}, recorded {expected[index]!r}; max |difference| "
                    f"{_max_difference(got, expected)}"
                )
        return lines


def _max_difference(got: np.ndarray, expected: np.ndarray) -> str:
    try:
        return f"{np.nanmax(np.abs(got.astype(np.float64) - expected.astype(np.float64))):.3g}"
    except (TypeError, ValueError):
        return "n/a"


def replay(folder: Path, repeat: int, check: bool, root: Optional[str], out: TextIO) -> int:
    """Run the recording in ``folder`` ``repeat`` times; with ``check`` compare it; the exit status."""
    if repeat < 1:
        raise RecordingError(f"--repeat must be at least 1, not {repeat}")
    try:
        session = Replay(folder, root)
    except (KeyError, TypeError, IndexError) as error:
        raise RecordingError(
            f"the manifest of {folder} is malformed (at {error!r}: edited or damaged); record the call again"
        ) from error
    manifest = session.manifest
    if manifest.get("versions") != toolchain_versions():
        print(f"note: recorded with {manifest.get('versions')}, replayed with {toolchain_versions()}", file=out)
    times, failed = [], []
    for run in range(repeat):
        session.restore()
        times.append(session.call())
        if check and not failed:
            failed = [f"run {run + 1}: {line}" for line in session.differences()]
    print(
        f"replayed {manifest['program']} (call {manifest.get('call')}, build {manifest['build']['key'][:12]}, "
        f"{len(manifest['callbacks'])} callback invocations): {repeat} call(s), "
        f"min {min(times) * 1e3:.3f} ms, median {statistics.median(times) * 1e3:.3f} ms",
        file=out,
    )
    if not check:
        return 0
    if failed:
        print(f"check: {len(failed)} array(s) differ from the recording:", file=out)
        for line in failed:
            print(f"  {line}", file=out)
        return 1
    print(f"check: all {len(session.arrays)} arrays equal the recording bit for bit", file=out)
    return 0
