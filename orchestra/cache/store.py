"""The build store: one folder per build, published atomically, found by key.

Layout under a cache root (names in :mod:`~orchestra.cache.layout`, guide in
``docs/cache.md``)::

    ROOT/<program-slug>/<key[:20]>/      one build
        build/lib<name>.so, program.sdfgz, src/...   what the build step wrote
        manifest.json                    its inputs, library path and checksum
        COMPLETE                         written last: the build is usable
    ROOT/<program-slug>/last_request.json
    ROOT/.staging/                       builds in progress
    ROOT/.locks/<key[:20]>.lock          one lock per key

A build is made in a staging folder and published by :meth:`BuildStore.publish`:
manifest written into the staging folder, folder renamed into place (atomic on
one file system), then the ``COMPLETE`` marker written and flushed. A build
killed at any point leaves a staging folder or an entry without marker;
:meth:`BuildStore.lookup` never returns either, and ``clean`` removes both once
their builder is gone.

The intended use by a builder::

    store = BuildStore(root)
    with store.lock(key, timeout_s=3600):
        found = store.lookup(key, program)
        if found.entry is None:
            staging = store.staging_dir(key)
            ...  # build into staging
            manifest = Manifest.new(key, program, inputs, library, seconds, version)
            entry = store.publish(staging, manifest)
        else:
            entry = found.entry
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import errno
import os
import tempfile
import time
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

from orchestra.cache import durable, locking
from orchestra.cache.entry import BuildEntry, LookupResult, examine, tree_size
from orchestra.cache.errors import CacheError, CacheMiss, CorruptEntry
from orchestra.cache.layout import (
    KEY_PATTERN,
    KEY_PREFIX_LENGTH,
    LAST_REQUEST_NAME,
    LOADED_FILES,
    LOCKS_NAME,
    MANIFEST_NAME,
    MARKER_NAME,
    OBJECTS_NAME,
    STAGING_NAME,
    checked_key,
    default_cache_root,
    host_slug,
    library_path_in,
    program_slug,
    staging_owner,
    staging_prefix,
    trash_prefix,
)
from orchestra.cache.manifest import Manifest, describe_differences
from orchestra.cache.requests import Asked, Request, read_requests, write_requests

_PUBLISH_ATTEMPTS = 5
#: The reason :meth:`BuildStore.clean` gives for a compiled object kept for later builds (not a folder).
OBJECT_REMOVAL = "compiled object kept for later builds"


@dataclasses.dataclass(frozen=True)
class IncompleteFolder:
    """A staging folder or an entry that is not a usable build.

    ``stale`` is False while its builder may still be at work (the folder is
    left alone); stale folders are what ``clean`` removes.
    """

    path: Path
    reason: str
    stale: bool


@dataclasses.dataclass(frozen=True)
class Removal:
    """One folder removed (or, in a dry run, to be removed) by ``clean``."""

    path: Path
    reason: str
    size_bytes: int


class BuildStore:
    """Builds under one cache root (``default_cache_root()`` when ``root`` is None).

    Reading never creates folders; writing creates what it needs.
    """

    def __init__(self, root: Path | str | None = None) -> None:
        self.root = Path(root).absolute() if root is not None else default_cache_root()

    def __repr__(self) -> str:
        return f"BuildStore({str(self.root)!r})"

    # -- layout ---------------------------------------------------------------

    def entry_dir(self, program: str, key: str) -> Path:
        """The folder a complete build of ``program`` with ``key`` lives in."""
        return self.root / program_slug(program) / checked_key(key)[:KEY_PREFIX_LENGTH]

    def lock_path(self, key: str) -> Path:
        """The lock file of ``key``."""
        return self.root / LOCKS_NAME / f"{checked_key(key)[:KEY_PREFIX_LENGTH]}.lock"

    def staging_dir(self, key: str) -> Path:
        """A fresh, empty, uniquely named folder to build ``key`` in."""
        staging = self.root / STAGING_NAME
        staging.mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(prefix=staging_prefix(key), dir=staging))

    def lock(
        self, key: str, timeout_s: float | None = None
    ) -> contextlib.AbstractContextManager[Path]:
        """Exclusive lock on ``key`` across processes and hosts sharing the root.

        Hold it around lookup, build and publish; a second builder of the key
        waits here and then finds the first one's entry. Raises
        ``CacheLockTimeout`` (naming the lock file and its holder) after
        ``timeout_s`` seconds; None waits forever. Not re-entrant.
        """
        return locking.file_lock(self.lock_path(key), timeout_s)

    # -- publish and lookup ---------------------------------------------------

    def publish(self, staging: Path, manifest: Manifest) -> BuildEntry:
        """Publish the build in ``staging`` as the entry of ``manifest.key``.

        Checks (or fills in) the library checksum, writes ``manifest.json``,
        renames ``staging`` into place and writes ``COMPLETE`` last. If a
        usable entry already exists it is kept, ``staging`` is discarded and
        the existing entry is returned; an incomplete or corrupt one is
        replaced. Call it holding :meth:`lock`.
        """
        staging = Path(staging)
        manifest = _checked_manifest(staging, manifest)
        durable.write_durably(staging / MANIFEST_NAME, manifest.to_json())
        final = self.entry_dir(manifest.program, manifest.key)
        final.parent.mkdir(parents=True, exist_ok=True)
        for _ in range(_PUBLISH_ATTEMPTS):
            existing = examine(final, manifest.key)
            if existing.entry is not None:
                self._discard(staging)
                return existing.entry
            if not staging.is_dir():
                time.sleep(0.1)  # renamed by us, then replaced by a concurrent publisher
                continue
            if final.exists():
                self._discard(final)  # incomplete or corrupt: never loaded, safe to replace
            try:
                os.rename(staging, final)
            except OSError as error:
                if error.errno in (errno.ENOTEMPTY, errno.EEXIST):
                    continue  # a concurrent publisher got there first: look again
                if error.errno == errno.EXDEV:
                    raise CacheError(
                        f"cannot publish {staging}: it is not on the file system of {final}; "
                        "build in BuildStore.staging_dir(key)"
                    ) from error
                raise
            durable.fsync_dir(final.parent)
            try:
                _write_marker(final, manifest.key)
            except FileNotFoundError:
                continue
            return BuildEntry(final, manifest)
        raise CacheError(
            f"could not publish {manifest.program} (key {manifest.key[:12]}) to {final} after "
            f"{_PUBLISH_ATTEMPTS} attempts: other jobs publish the same key; hold store.lock(key)"
        )

    def lookup(self, key: str, program: str | None = None) -> LookupResult:
        """The usable entry of ``key``, or why there is none.

        Usable: ``COMPLETE`` marker present, manifest readable with this key,
        library sha256 as in the manifest (hashed once per process and file
        state). Without ``program``, every program's folder is searched.
        """
        if program is not None:
            return examine(self.entry_dir(program, key), key)
        prefix = checked_key(key)[:KEY_PREFIX_LENGTH]
        folders = [folder / prefix for folder in self._program_folders()]
        results = [examine(folder, key) for folder in folders if folder.is_dir()]
        for result in results:
            if result.hit:
                return result
        return results[0] if results else LookupResult(None, f"no build for key {key[:12]}")

    def require(self, program: str, key: str, inputs: Mapping[str, Any]) -> BuildEntry:
        """The usable entry of ``key``, else ``CacheMiss`` (why, and how the closest differs)."""
        found = self.lookup(key, program)
        if found.entry is not None:
            return found.entry
        raise self.miss(program, key, inputs, found)

    def miss(
        self, program: str, key: str, inputs: Mapping[str, Any], found: LookupResult | None = None
    ) -> CacheMiss:
        """The ``CacheMiss`` of ``key``: lookup reason, differences of the closest other build."""
        found = found if found is not None else self.lookup(key, program)
        others = [pair for pair in self.closest(program, inputs) if pair[0].key != key]
        if not others:
            return CacheMiss(program, key, found.reason)
        entry, lines = others[0]
        return CacheMiss(program, key, found.reason, lines, entry.key)

    # -- listing --------------------------------------------------------------

    def entries(self, program: str | None = None) -> list[BuildEntry]:
        """Complete entries (marker present, manifest readable), by program and creation time.

        Library checksums are not verified here; :meth:`lookup` does that.
        """
        found = []
        for folder in self._entry_folders(program):
            result = examine(folder, verify=False)
            if result.entry is not None and program in (None, result.entry.program):
                found.append(result.entry)
        return sorted(found, key=lambda entry: (entry.program, entry.manifest.created, entry.key))

    def incomplete(self, verify: bool = True) -> list[IncompleteFolder]:
        """Staging folders and entries that are not usable builds.

        With ``verify``, complete entries whose library fails its checksum are
        listed too (this hashes every library).
        """
        found = [self._staging_state(folder) for folder in _subfolders(self.root / STAGING_NAME)]
        for folder in self._entry_folders(None):
            result = examine(folder, verify=verify)
            if result.hit:
                continue
            busy = not (folder / MARKER_NAME).exists() and self._key_locked(folder.name)
            reason = "publish in progress" if busy else result.reason
            found.append(IncompleteFolder(folder, reason, stale=not busy))
        return found

    def closest(
        self, program: str, inputs: Mapping[str, Any], other_than: Optional[str] = None
    ) -> list[tuple[BuildEntry, list[str]]]:
        """Complete builds of ``program`` with their differences from ``inputs``, fewest first.

        Differences read "``inputs`` vs the build's inputs"; ties go to the newest build.
        ``other_than``: a key whose build is left out (the one being asked for).
        """
        ranked = [
            (entry, describe_differences(inputs, entry.manifest.inputs))
            for entry in self.entries(program)
            if entry.key != other_than
        ]
        ranked.sort(key=lambda pair: pair[0].manifest.created, reverse=True)
        ranked.sort(key=lambda pair: len(pair[1]))
        return ranked

    # -- requests -------------------------------------------------------------

    def record_requests(self, program: str, asked: Sequence[Asked]) -> Path:
        """Record (atomically, replacing the last run's) what a run asks for, for ``cache explain``."""
        path = self.root / program_slug(program) / LAST_REQUEST_NAME
        write_requests(path, program, [dataclasses.replace(a, key=checked_key(a.key)) for a in asked])
        return path

    def last_requests(self, program: str) -> list[Request]:
        """The requests of the last run of ``program`` (empty if none; ``CorruptEntry`` if bad)."""
        return read_requests(self.root / program_slug(program) / LAST_REQUEST_NAME)

    def requests(self) -> list[Request]:
        """The last run's requests of every program, by program (unreadable records are skipped)."""
        found = []
        for folder in self._program_folders():
            with contextlib.suppress(CorruptEntry):
                found += read_requests(folder / LAST_REQUEST_NAME)
        return sorted(found, key=lambda request: (request.program, request.ranks[:1]))

    # -- removal --------------------------------------------------------------

    def remove(self, entry: BuildEntry | Path) -> None:
        """Remove an entry or folder of this store (atomically out of sight, then deleted)."""
        path = entry.path if isinstance(entry, BuildEntry) else Path(entry)
        if self.root.resolve() not in path.resolve().parents:
            raise CacheError(
                f"refusing to remove {path}: it is not inside the cache root {self.root}"
            )
        self._discard(path)

    def clean(
        self, older_than_days: float | None = None, stale_only: bool = True, dry_run: bool = False
    ) -> list[Removal]:
        """Remove stale folders and, unless ``stale_only``, complete builds too.

        ``older_than_days`` keeps anything younger (by build creation time, or
        the folder's modification time for stale folders). Builds in progress
        are never removed; free lock files are. Returns what was (with
        ``dry_run``: would be) removed.
        """
        cutoff = None if older_than_days is None else time.time() - older_than_days * 86400.0
        candidates = [
            (folder.path, f"stale: {folder.reason}", _mtime(folder.path))
            for folder in self.incomplete()
            if folder.stale
        ]
        if not stale_only:
            candidates += [
                (entry.path, f"build of {entry.program}", _created_seconds(entry))
                for entry in self.entries()
            ]
            candidates += [(path, OBJECT_REMOVAL, _mtime(path))
                           for path in sorted((self.root / OBJECTS_NAME).glob("*/*.o"))]
        removals: list[Removal] = []
        for path, reason, age_reference in candidates:
            too_young = cutoff is not None and age_reference > cutoff
            if too_young or any(removal.path == path for removal in removals):
                continue
            removals.append(Removal(path, reason, tree_size(path) if path.is_dir() else _size(path)))
            if dry_run:
                continue
            if path.is_dir():
                self._discard(path)
            else:  # a kept compiled object: removing the file is atomic
                path.unlink(missing_ok=True)
        if not dry_run:
            for lock_file in sorted((self.root / LOCKS_NAME).glob("*.lock")):
                locking.remove_if_free(lock_file)
        return removals

    # -- internals ------------------------------------------------------------

    def _staging_state(self, folder: Path) -> IncompleteFolder:
        owner = staging_owner(folder.name)
        here = owner.host == host_slug() and owner.pid is not None
        if owner.trash:
            busy = here and _process_alive(owner.pid)
            return IncompleteFolder(folder, "leftover of a removal", stale=not busy)
        if here:
            if _process_alive(owner.pid):
                return IncompleteFolder(folder, f"build in progress (pid {owner.pid})", False)
            return IncompleteFolder(folder, f"build interrupted (pid {owner.pid} is gone)", True)
        if owner.key_prefix is not None and self._key_locked(owner.key_prefix):
            return IncompleteFolder(folder, f"build in progress on host {owner.host}", False)
        return IncompleteFolder(folder, f"build interrupted (host {owner.host}, lock free)", True)

    def _key_locked(self, key_prefix: str) -> bool:
        return locking.is_locked(self.root / LOCKS_NAME / f"{key_prefix}.lock")

    def _discard(self, path: Path) -> None:
        durable.discard_tree(path, self.root / STAGING_NAME, trash_prefix())

    def _program_folders(self) -> list[Path]:
        return [folder for folder in _subfolders(self.root) if not folder.name.startswith(".")]

    def _entry_folders(self, program: str | None) -> list[Path]:
        if program is not None:
            programs = [self.root / program_slug(program)]
        else:
            programs = self._program_folders()
        return [
            folder
            for program_folder in programs
            for folder in _subfolders(program_folder)
            if KEY_PATTERN.fullmatch(folder.name)
        ]


def _checked_manifest(staging: Path, manifest: Manifest) -> Manifest:
    """``manifest`` with the checksum of the library in ``staging`` (flushed to disk)."""
    checked_key(manifest.key)
    try:
        library = library_path_in(staging, manifest.library)
    except ValueError as error:
        raise CacheError(f"cannot publish {staging}: {error}") from error
    if not library.is_file():
        raise CacheError(f"cannot publish {staging}: the library {manifest.library!r} is not there")
    checksum = durable.sha256_file(library)
    if manifest.checksum and manifest.checksum != checksum:
        raise CacheError(
            f"cannot publish {staging}: {manifest.library} does not match the manifest's "
            "checksum (was it changed after the manifest was made?)"
        )
    files = {
        str(path.relative_to(staging)): durable.sha256_file(path)
        for pattern in LOADED_FILES
        for path in sorted(staging.glob(pattern))
        if path.is_file() and path != library
    }
    durable.fsync_tree(staging)
    return dataclasses.replace(manifest.with_checksum(checksum), files=files)


def _write_marker(folder: Path, key: str) -> None:
    """Write the ``COMPLETE`` marker of a published folder: the last step of publishing."""
    durable.write_durably(folder / MARKER_NAME, key + "\n")
    durable.fsync_dir(folder)


def _process_alive(pid: int | None) -> bool:
    if pid is None:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _subfolders(path: Path) -> list[Path]:
    try:
        return sorted(child for child in path.iterdir() if child.is_dir())
    except FileNotFoundError:
        return []


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except FileNotFoundError:
        return 0.0


def _created_seconds(entry: BuildEntry) -> float:
    try:
        return datetime.datetime.fromisoformat(entry.manifest.created).timestamp()
    except ValueError:
        return _mtime(entry.path / MARKER_NAME)
