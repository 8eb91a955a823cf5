"""File operations the cache relies on for crash safety.

Writes that another process may read concurrently go through a temporary
file and ``os.replace`` (readers see the old or the new content, never half of
it); data that a later step depends on is ``fsync``-ed, and so is the folder
holding a renamed or created name, so a power loss cannot reorder them.
Folders are removed by first renaming them out of sight, so nobody ever sees
a half-deleted build.
"""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
import tempfile
from pathlib import Path

_CHUNK = 1 << 20


def sha256_file(path: Path) -> str:
    """sha256 hex digest of a file's content."""
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        while chunk := stream.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def fsync_file(path: Path) -> None:
    """Flush a file's content to disk."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def fsync_dir(path: Path) -> None:
    """Flush a folder's list of names to disk (after a create or rename in it)."""
    descriptor = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def fsync_tree(path: Path) -> None:
    """Flush every file and folder under ``path`` to disk."""
    for folder, _, files in os.walk(path):
        for name in files:
            file_path = Path(folder, name)
            if not file_path.is_symlink():
                fsync_file(file_path)
        fsync_dir(Path(folder))


def write_durably(path: Path, text: str) -> None:
    """Write ``text`` to a new file ``path`` and flush it (for files nobody reads yet)."""
    with open(path, "w", encoding="utf-8") as stream:
        stream.write(text)
        stream.flush()
        os.fsync(stream.fileno())


def replace_atomically(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` so that readers see the old or new file, never a mix."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def discard_tree(path: Path, trash_parent: Path, trash_prefix: str) -> bool:
    """Remove the folder ``path``: rename it into ``trash_parent``, then delete it.

    The rename is atomic, so the folder vanishes from its place at once even if
    the deletion is interrupted (the remains are stale trash in
    ``trash_parent``). Returns False if ``path`` did not exist.
    """
    trash_parent.mkdir(parents=True, exist_ok=True)
    trash = Path(tempfile.mkdtemp(prefix=trash_prefix, dir=trash_parent))
    try:
        os.rename(path, trash / "discarded")
    except FileNotFoundError:
        trash.rmdir()
        return False
    except OSError as error:
        trash.rmdir()
        if error.errno != errno.EXDEV:
            raise
        shutil.rmtree(path)  # another file system: no atomic way out of sight
        return True
    shutil.rmtree(trash, ignore_errors=True)
    return True
