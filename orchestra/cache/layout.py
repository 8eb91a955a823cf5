"""Names on disk: where a cache root keeps builds, staging folders, locks and requests.

::

    ROOT/<program-slug>/<key[:20]>/                       one build (see ``store``)
    ROOT/<program-slug>/last_request.json                 the inputs the last run asked for (per code path)
    ROOT/.staging/<key[:20]>--<host>--<pid>--<random>/    a build in progress
    ROOT/.staging/trash--<host>--<pid>--<random>/         a folder being deleted
    ROOT/.locks/<key[:20]>.lock                           the lock of a key
    ROOT/.objects/<digest[:2]>/<digest>.<content>.o       a compiled file kept for later builds

A staging folder's name says who made it, so ``clean`` can tell a build in
progress from one whose process died.
"""

from __future__ import annotations

import hashlib
import os
import re
import socket
from pathlib import Path
from typing import NamedTuple

ENV_VAR = "ORCHESTRA_CACHE_DIR"
DEFAULT_FOLDER = ".orchestra_cache"
MANIFEST_NAME = "manifest.json"
MARKER_NAME = "COMPLETE"
#: Files a load reads besides the library (checksummed in the manifest's ``files``).
LOADED_FILES = ("build/libdacestub_*.so", "signature.sdfgz", "program.sdfgz")
LAST_REQUEST_NAME = "last_request.json"
STAGING_NAME = ".staging"
LOCKS_NAME = ".locks"
OBJECTS_NAME = ".objects"
KEY_PREFIX_LENGTH = 20

KEY_PATTERN = re.compile(r"[0-9a-f]{%d,}" % KEY_PREFIX_LENGTH)
_SLUG_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_SEPARATOR = "--"
_TRASH = "trash"


def default_cache_root() -> Path:
    """``$ORCHESTRA_CACHE_DIR`` if set and not empty, else ``./.orchestra_cache``."""
    configured = os.environ.get(ENV_VAR, "")
    if configured:
        return Path(configured).expanduser().absolute()
    return Path.cwd() / DEFAULT_FOLDER


def program_slug(program: str) -> str:
    """A folder name for ``program``: itself if safe, else a cleaned name plus a short hash.

    >>> program_slug("DynamicalCore.__call__")
    'DynamicalCore.__call__'
    >>> program_slug("a/b")
    'a_b-c14cddc0'
    """
    cleaned = _SLUG_UNSAFE.sub("_", program).lstrip(".")[:80] or "program"
    if cleaned == program:
        return cleaned
    return f"{cleaned}-{hashlib.sha256(program.encode()).hexdigest()[:8]}"


def checked_key(key: str) -> str:
    """``key`` itself if it looks like a cache key (at least 20 lowercase hex digits)."""
    if not isinstance(key, str) or not KEY_PATTERN.fullmatch(key):
        raise ValueError(
            f"invalid cache key {key!r}: expected at least {KEY_PREFIX_LENGTH} lowercase hex digits"
        )
    return key


def library_path_in(folder: Path, library: str) -> Path:
    """The library ``library`` (a path relative to ``folder``) inside ``folder``."""
    relative = Path(library)
    if relative.is_absolute() or ".." in relative.parts or not relative.parts:
        raise ValueError(f"library path {library!r} must be relative to the build folder")
    return folder / relative


def staging_prefix(key: str) -> str:
    """Name prefix of a staging folder made by this process for ``key``."""
    return _SEPARATOR.join(
        [checked_key(key)[:KEY_PREFIX_LENGTH], host_slug(), str(os.getpid()), ""]
    )


def trash_prefix() -> str:
    """Name prefix of a folder this process is deleting."""
    return _SEPARATOR.join([_TRASH, host_slug(), str(os.getpid()), ""])


class StagingOwner(NamedTuple):
    """Who made a staging folder, read from its name."""

    key_prefix: str | None  # None for trash and unknown names
    host: str
    pid: int | None
    trash: bool


def staging_owner(name: str) -> StagingOwner:
    """Parse a staging folder's name (see :func:`staging_prefix`)."""
    head, _, rest = name.partition(_SEPARATOR)
    owner, _, _token = rest.rpartition(_SEPARATOR)
    host, _, pid = owner.rpartition(_SEPARATOR)
    key = head if KEY_PATTERN.fullmatch(head) else None
    return StagingOwner(key, host, int(pid) if pid.isdigit() else None, head == _TRASH)


def host_slug() -> str:
    """This host's name, safe in a folder name and free of the separator."""
    return _SLUG_UNSAFE.sub("_", socket.gethostname()).replace(_SEPARATOR, "_") or "host"
