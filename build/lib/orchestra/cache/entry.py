"""One build folder: what it holds, and whether it is a usable build.

A folder is a usable build of a key when its ``COMPLETE`` marker exists, its
manifest reads back with that key, and the sha256 of its library and of every
other file a load reads (``files``: DaCe's stub library, the signature and
program SDFGs) matches the manifest. Library checksums are cached per process by file state (path,
inode, size, modification time): a truncated or rewritten library is hashed
again.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from pathlib import Path

from orchestra.cache import durable
from orchestra.cache.errors import CorruptEntry
from orchestra.cache.layout import MANIFEST_NAME, MARKER_NAME, library_path_in
from orchestra.cache.manifest import Manifest

# Checksums computed in this process, by (path, device, inode, size, mtime).
_CHECKSUMS: dict[tuple[str, int, int, int, int], str] = {}


@dataclasses.dataclass(frozen=True)
class BuildEntry:
    """A complete build in the store."""

    path: Path
    manifest: Manifest

    @property
    def library_path(self) -> Path:
        """The shared library of this build."""
        return self.path / self.manifest.library

    @property
    def key(self) -> str:
        return self.manifest.key

    @property
    def program(self) -> str:
        return self.manifest.program

    def size_bytes(self) -> int:
        """Total size of the files of this build."""
        return tree_size(self.path)


@dataclasses.dataclass(frozen=True)
class LookupResult:
    """A usable entry, or why there is none (``reason``; "hit" for a usable entry)."""

    entry: BuildEntry | None
    reason: str
    path: Path | None = None  # the folder examined, if one exists

    @property
    def hit(self) -> bool:
        return self.entry is not None


def examine(folder: Path, key: str | None = None, verify: bool = True) -> LookupResult:
    """Whether ``folder`` holds a usable build (of ``key``, else of its folder name).

    ``verify=False`` skips the library checksum.
    """
    expected = key if key is not None else folder.name
    if not folder.is_dir():
        return LookupResult(None, f"no build for key {expected[:12]}")
    if not (folder / MARKER_NAME).is_file():
        return LookupResult(
            None, "entry incomplete (no COMPLETE marker): interrupted build?", folder
        )
    try:
        manifest = Manifest.read(folder / MANIFEST_NAME)
    except CorruptEntry as error:
        return LookupResult(None, f"manifest unreadable: {error.detail}", folder)
    if not manifest.key.startswith(expected) or not manifest.key.startswith(folder.name):
        reason = f"entry {folder.name} holds key {manifest.key[:12]}, not {expected[:12]}"
        return LookupResult(None, reason, folder)
    try:
        library = library_path_in(folder, manifest.library)
    except ValueError as error:
        return LookupResult(None, f"manifest invalid: {error}", folder)
    if not library.is_file():
        return LookupResult(None, f"library missing: {manifest.library}", folder)
    if verify and checksum(library) != manifest.checksum:
        return LookupResult(None, "library checksum mismatch: file corrupted or truncated", folder)
    for name, expected_sum in sorted(manifest.files.items()):
        try:
            path = library_path_in(folder, name)
        except ValueError as error:
            return LookupResult(None, f"manifest invalid: {error}", folder)
        if not path.is_file():
            return LookupResult(None, f"{name} missing", folder)
        if verify and checksum(path) != expected_sum:
            return LookupResult(None, f"{name} checksum mismatch: file corrupted or truncated", folder)
    return LookupResult(BuildEntry(folder, manifest), "hit", folder)


def checksum(library: Path) -> str:
    """sha256 of ``library``, computed once per process and file state."""
    status = library.stat()
    state = (str(library), status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns)
    if state not in _CHECKSUMS:
        _CHECKSUMS[state] = durable.sha256_file(library)
    return _CHECKSUMS[state]


def tree_size(path: Path) -> int:
    """Total size of the files under ``path``."""
    total = 0
    for folder, _, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(folder, name)).st_size
    return total
