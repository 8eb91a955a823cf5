"""Exclusive file locks (``fcntl.flock``) that serialize builders of one key.

A lock is a file; holding it means holding an exclusive ``flock`` on an open
descriptor of that file. The kernel drops the lock when the holder exits, even
on ``kill -9``, so a crashed builder never leaves a lock behind. After taking
the lock the holder checks that the path still names the file it locked, so a
lock file may be deleted (by ``orchestra cache clean``) without two jobs ever
holding "the same" lock. The holder writes who it is into the file, for the
message of a waiter that times out.

``flock`` works across processes on one host and, on Linux NFS clients, across
hosts (the client maps it onto POSIX byte-range locks).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import socket
import time
from pathlib import Path
from typing import Iterator

from orchestra.cache.errors import CacheLockTimeout

# Polling interval bounds while waiting with a timeout (seconds).
_FIRST_POLL_S = 0.01
_LONGEST_POLL_S = 0.5


@contextlib.contextmanager
def file_lock(path: Path, timeout_s: float | None = None) -> Iterator[Path]:
    """Hold an exclusive lock on ``path`` for the duration of the ``with`` block.

    ``timeout_s=None`` waits forever; otherwise waiting longer raises
    :class:`CacheLockTimeout` naming the lock file and its holder. Yields ``path``.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = _acquire(path, timeout_s)
    try:
        _write_holder(descriptor)
        yield path
    finally:
        os.close(descriptor)


def is_locked(path: Path) -> bool:
    """True if some process holds the lock on ``path`` right now (False if no such file)."""
    try:
        descriptor = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as error:
        if error.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return True
        raise
    finally:
        os.close(descriptor)
    return False


def remove_if_free(path: Path) -> bool:
    """Delete the lock file ``path`` if nobody holds it; True if it was deleted."""
    try:
        descriptor = _try_acquire_once(path)
    except FileNotFoundError:
        return False
    if descriptor is None:
        return False
    try:
        path.unlink(missing_ok=True)
    finally:
        os.close(descriptor)
    return True


def holder_of(path: Path) -> str:
    """The holder description written in the lock file ('' if unknown)."""
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return ""


def _acquire(path: Path, timeout_s: float | None) -> int:
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    poll_s = _FIRST_POLL_S
    while True:
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            if deadline is None:
                fcntl.flock(descriptor, fcntl.LOCK_EX)
                locked = True
            else:
                locked = _flock_nonblocking(descriptor)
            if locked and _still_names(path, descriptor):
                return descriptor
        except BaseException:
            os.close(descriptor)
            raise
        os.close(descriptor)
        if locked:
            continue  # the file was deleted or replaced while we waited: lock the new one
        if deadline is not None and time.monotonic() >= deadline:
            raise CacheLockTimeout(path, timeout_s or 0.0, holder_of(path))
        time.sleep(poll_s)
        poll_s = min(poll_s * 2, _LONGEST_POLL_S)


def _try_acquire_once(path: Path) -> int | None:
    descriptor = os.open(path, os.O_RDWR)
    if _flock_nonblocking(descriptor) and _still_names(path, descriptor):
        return descriptor
    os.close(descriptor)
    return None


def _flock_nonblocking(descriptor: int) -> bool:
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as error:
        if error.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return False
        raise
    return True


def _still_names(path: Path, descriptor: int) -> bool:
    """True if ``path`` still is the file open as ``descriptor`` (not deleted or replaced)."""
    try:
        on_disk = os.stat(path)
    except FileNotFoundError:
        return False
    opened = os.fstat(descriptor)
    return (on_disk.st_dev, on_disk.st_ino) == (opened.st_dev, opened.st_ino)


def _write_holder(descriptor: int) -> None:
    since = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    text = f"pid {os.getpid()} on host {socket.gethostname()} since {since}\n"
    os.ftruncate(descriptor, 0)
    os.pwrite(descriptor, text.encode(), 0)
