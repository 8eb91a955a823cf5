"""The load step of an MPI job through node-local staging (see the package docstring).

Collective over the job: every rank calls :func:`load_through_node` at the
same point. Communication: one allgather of keys inside each node (its size
is the node's rank count, not the job's), one more inside the node for the
readers' results, the job-wide outcome of the load
(:meth:`~orchestra.distributed.coordinator.BuildCoordinator.collectively`) and a barrier
inside the node before the staged copies are removed.
"""

from __future__ import annotations

import dataclasses
import errno
import logging
from pathlib import Path
from typing import Any, Callable, Optional

from orchestra.cache.durable import replace_atomically
from orchestra.cache.entry import BuildEntry, examine
from orchestra.cache.layout import MANIFEST_NAME, library_path_in
from orchestra.cache.manifest import Manifest
from orchestra.cache.store import BuildStore
from orchestra.cache.trust import check_trusted
from orchestra.errors import MissingBuildError
from orchestra.pipeline.stages import LoadedProgram, load
from orchestra.distributed.staging.area import NODE_LOCAL_DIR_VARIABLE, StagingArea
from orchestra.distributed.staging.copy import StagingError, copy_verified, damage_of, files_to_stage
from orchestra.distributed.staging.nodes import node_communicator, ranks_per_node_from_environment

log = logging.getLogger("orchestra")


@dataclasses.dataclass
class _Staged:
    """What a node's reader did with one key: the staged folder, or the error it met."""

    key: str
    folder: Optional[Path] = None
    error: Optional[BaseException] = None
    users: Optional[int] = None  #: descriptor of the shared "in use" lock (StagingArea.start_using)
    unusable: Optional[str] = None  #: why the area cannot take a copy: the node loads from the cache

    def public(self) -> tuple[str, tuple[Optional[str], Optional[str]]]:
        """What the other ranks of the node need (small, picklable): the key, the folder or why there is none."""
        return self.key, (None if self.folder is None else str(self.folder), self.unusable)


def load_through_node(
    keyed: Any,
    store: BuildStore,
    coordinator: Any,
    area: StagingArea,
    missing_message: Callable[[BuildStore, Any, str], str],
    load_shared: Callable[[], tuple[BuildEntry, LoadedProgram]],
) -> tuple[BuildEntry, LoadedProgram]:
    """Collectively: each rank loads the build of its own key from its node's staged copy.

    ``keyed`` is the rank's :class:`~orchestra.pipeline.request.KeyedRequest`;
    ``missing_message(store, keyed, reason)`` words the error of a build that
    is missing or damaged in the shared cache. A reader that fails raises its
    error inside the job-wide outcome, so the message is the one a rank
    loading from the shared cache would have given. When the node-local area
    cannot take a copy (no space, not writable, its folder missing), the
    reader logs why and the node's ranks load from the cache itself
    (``load_shared``), as without staging.
    """
    node = node_communicator(coordinator.comm)
    keys = node.allgather(keyed.key)
    reads = keys.index(keyed.key) == node.Get_rank()  # the node's lowest rank with this key reads it
    if ranks_per_node_from_environment():  # pretend nodes share a machine: give each its own area
        area = area.for_pretend_node(node.bcast(coordinator.rank, root=0))
    staged = _stage(keyed, store, area, coordinator.timeout_s, missing_message) if reads else None
    results = node.allgather(None if staged is None else staged.public())
    folder, unusable = dict(item for item in results if item is not None).get(keyed.key, (None, None))

    def load_staged() -> tuple[BuildEntry, LoadedProgram]:
        if staged is not None and staged.error is not None:
            raise staged.error
        if unusable is not None:
            return load_shared()
        if folder is None:
            raise _ReaderFailed(f"the reader of {keyed.key[:12]} on this node failed")
        return _load_from(Path(folder), keyed, store, area)

    try:
        return coordinator.collectively(load_staged, f"loading {keyed.label}")
    finally:
        node.Barrier()  # every rank of the node has loaded (or failed alike): the copy may go
        if staged is not None and staged.users is not None:
            _release(staged, keyed.label, area, coordinator.timeout_s)


#: errno values of a node-local area that cannot take a copy (full, read-only, missing): load from the cache.
_AREA_UNUSABLE = frozenset(
    {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOENT, errno.ENOTDIR}
)


class _ReaderFailed(Exception):
    """This rank's reader failed; the job-wide outcome reports the reader's own error."""


def _stage(
    keyed: Any, store: BuildStore, area: StagingArea, timeout_s: Optional[float], missing_message: Any
) -> _Staged:
    """As the node's reader of ``keyed.key``: a verified copy in ``area``, or the error that prevents one.

    On success the copy is marked in use (:meth:`StagingArea.start_using`)
    until :func:`_release`. Never raises: the error is returned, to be raised
    inside the job-wide outcome.
    """
    key = keyed.key
    try:
        area.prepare()
        check_trusted(area.root, area.root, [])  # nothing is written into a folder others may change
        with area.copying(key, timeout_s):
            folder = _verified_copy(keyed, store, area, missing_message)
            return _Staged(key, folder, users=area.start_using(key))
    except OSError as error:
        if error.errno not in _AREA_UNUSABLE:
            return _Staged(key, error=error)
        reason = f"{type(error).__name__}: {error}"
        log.warning(
            "%s: the node-local area %s cannot take a copy (%s); the ranks of this node load from the cache "
            "itself. Point %s at a node-local folder with space, or set it to none",
            keyed.label, area.root, reason, NODE_LOCAL_DIR_VARIABLE,
        )
        return _Staged(key, unusable=reason)
    except Exception as error:  # raised on this rank inside the job-wide outcome
        return _Staged(key, error=error)


def _verified_copy(keyed: Any, store: BuildStore, area: StagingArea, missing_message: Any) -> Path:
    """The staged folder of ``keyed.key``: a copy left there if it verifies, else a new copy."""
    key = keyed.key
    shared = store.entry_dir(keyed.label, key)
    found = examine(shared, key, verify=False)  # marker, manifest, files present; sha256 below
    if found.entry is None:
        raise MissingBuildError(missing_message(store, keyed, found.reason))
    manifest = found.entry.manifest
    files = files_to_stage(manifest)
    check_trusted(store.root, shared, [library_path_in(shared, name) for name in files])
    target = area.entry_dir(key)
    if target.exists():
        damage = damage_of(target, manifest)
        if damage is None:
            return target
        log.warning("%s: the node-local copy %s is damaged (%s); staging it again", keyed.label, target, damage)
        area.discard(target)
    copy = area.temporary_dir(key)
    try:
        copy_verified(shared, files, copy, manifest.library)
        replace_atomically(copy / MANIFEST_NAME, manifest.to_json())
    except StagingError as error:
        area.discard(copy)
        raise MissingBuildError(missing_message(store, keyed, error.reason)) from error
    except BaseException:
        area.discard(copy)
        raise
    copy.rename(target)
    return target


def _release(staged: _Staged, label: str, area: StagingArea, timeout_s: Optional[float]) -> None:
    """After the node loaded: stop using the copy, removing it if no other node uses it; never raises."""
    try:
        with area.copying(staged.key, timeout_s):
            area.stop_using(staged.key, staged.users)
        area.remove_copy_lock(staged.key)
        area.remove_if_empty()
    except Exception as error:  # the job has loaded; a leftover copy is verified before any reuse
        log.warning("%s: could not remove the node-local copy %s: %s", label, staged.folder, error)


def _load_from(folder: Path, keyed: Any, store: BuildStore, area: StagingArea) -> tuple[BuildEntry, LoadedProgram]:
    """Load the staged copy ``folder`` of ``keyed.key`` once it is trusted; the entry names the shared build."""
    manifest = Manifest.read(folder / MANIFEST_NAME)
    if manifest.key != keyed.key:
        raise MissingBuildError(f"the node-local copy {folder} holds key {manifest.key[:12]}, not {keyed.key[:12]}")
    files = files_to_stage(manifest)
    check_trusted(area.root, folder, [folder / MANIFEST_NAME, *(library_path_in(folder, name) for name in files)])
    return BuildEntry(store.entry_dir(keyed.label, keyed.key), manifest), load(folder)
