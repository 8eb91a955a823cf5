"""Trust before load: a build is loaded only from files nobody else could have replaced.

Loading a build runs its code (``dlopen``). A cache root, build folder or
loaded file that every user may write, or that belongs to another user, could
hold a library someone else put there. :func:`check_trusted` refuses both,
with the command that fixes it. Folders above the cache root (``/tmp``, a
project directory) are not checked: the root itself is the boundary.

Shared, admin-published caches: list the owners to trust in
``ORCHESTRA_TRUSTED_OWNERS`` (user names or numeric ids, comma-separated).
``root`` is always trusted (it can replace any file anyway). Group-writable
files are accepted: on HPC systems the group is commonly the team that
shares the cache.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Iterable

from orchestra.cache.errors import CacheError

TRUSTED_OWNERS_VARIABLE = "ORCHESTRA_TRUSTED_OWNERS"


class UntrustedCacheError(CacheError):
    """A build would be loaded from a place others can write, or another user owns."""


def trusted_owners() -> set[int]:
    """The user ids whose files are loaded: this user, root, and ``ORCHESTRA_TRUSTED_OWNERS``."""
    owners = {os.getuid(), 0}
    for item in os.environ.get(TRUSTED_OWNERS_VARIABLE, "").split(","):
        item = item.strip()
        if not item:
            continue
        if item.isdigit():
            owners.add(int(item))
            continue
        try:
            import pwd

            owners.add(pwd.getpwnam(item).pw_uid)
        except KeyError as error:
            raise UntrustedCacheError(
                f"{TRUSTED_OWNERS_VARIABLE} names the user {item!r}, which does not exist on this machine"
            ) from error
    return owners


def check_trusted(root: Path, entry: Path, files: Iterable[Path]) -> None:
    """Raise :class:`UntrustedCacheError` unless every path from ``root`` to each file is trusted."""
    owners = trusted_owners()
    root = Path(root).resolve()
    entry = Path(entry).resolve()
    paths = [root]
    for parent in reversed(entry.relative_to(root).parents):  # folders between root and entry
        paths.append(root / parent)
    paths.append(entry)
    for path in files:
        path = Path(path).resolve()
        paths.extend(p for p in reversed(path.parents) if entry in p.parents)  # e.g. entry/build
        paths.append(path)
    seen = set()
    for path in paths:
        if path in seen:
            continue
        seen.add(path)
        _check_one(path, owners)


def _check_one(path: Path, owners: set[int]) -> None:
    status = path.lstat()
    if stat.S_ISLNK(status.st_mode):
        raise UntrustedCacheError(
            f"refusing to load a build through the symbolic link {path}: replace it with the file or folder itself"
        )
    if status.st_mode & stat.S_IWOTH:
        raise UntrustedCacheError(
            f"refusing to load a build from {path}: every user may write it, so anyone could have replaced "
            f"the library. Fix: chmod o-w '{path}' (and the folders of the cache: chmod -R o-w CACHE_ROOT)"
        )
    if status.st_uid not in owners:
        raise UntrustedCacheError(
            f"refusing to load a build from {path}: it belongs to user id {status.st_uid}, not to you. If "
            f"that user publishes builds for your team, trust them with {TRUSTED_OWNERS_VARIABLE}="
            f"<their user name>; otherwise build your own (FV3_DACEMODE=BuildAndRun with your own cache root)"
        )
