"""The node-local area: where a node's reader puts the builds its ranks load.

::

    <base>/orchestra-<uid>/                       the area (mode 0700), made on first use
    <base>/orchestra-<uid>/<key[:20]>/            a staged build: the files a load reads
    <base>/orchestra-<uid>/<key[:20]>.lock        copy lock: held while a reader verifies or copies
    <base>/orchestra-<uid>/<key[:20]>.users       shared lock of every reader whose node is loading it
    <base>/orchestra-<uid>/.tmp-<key[:20]>-...    a copy in progress (renamed into place when verified)

``<base>`` is ``ORCHESTRA_NODE_LOCAL_DIR``, by default ``/dev/shm`` (memory,
private to the node) when it is a writable folder, else ``$TMPDIR`` or
``/tmp``. A staged copy is removed by the last reader that used it, once its
node has loaded (the libraries stay mapped). The area belongs to one user; its owner and permissions are checked
before anything in it is loaded (:func:`orchestra.cache.trust.check_trusted`),
so a folder of that name made by someone else is refused, not used.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from pathlib import Path
from typing import Iterator, Optional

from orchestra.cache.durable import discard_tree
from orchestra.cache.layout import KEY_PREFIX_LENGTH, checked_key, trash_prefix
from orchestra.cache.locking import file_lock, remove_if_free

NODE_LOCAL_DIR_VARIABLE = "ORCHESTRA_NODE_LOCAL_DIR"

#: Values of ``ORCHESTRA_NODE_LOCAL_DIR`` that turn staging off.
DISABLED = ("none", "off")

_SHARED_MEMORY = Path("/dev/shm")


def default_base() -> Path:
    """``/dev/shm`` if it is a folder this process may write, else the temporary folder."""
    if _SHARED_MEMORY.is_dir() and os.access(_SHARED_MEMORY, os.W_OK | os.X_OK):
        return _SHARED_MEMORY
    return Path(tempfile.gettempdir())


def staging_area_from_environment() -> Optional[StagingArea]:
    """The area ``ORCHESTRA_NODE_LOCAL_DIR`` names (default :func:`default_base`); None if staging is off."""
    text = os.environ.get(NODE_LOCAL_DIR_VARIABLE, "").strip()
    if text.lower() in DISABLED:
        return None
    base = Path(text).expanduser().absolute() if text else default_base()
    return StagingArea(base / f"orchestra-{os.getuid()}")


class StagingArea:
    """One user's node-local area (see the module docstring for the layout)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def __repr__(self) -> str:
        return f"StagingArea({str(self.root)!r})"

    def for_pretend_node(self, first_rank: int) -> StagingArea:
        """The area of the pretend node whose lowest rank is ``first_rank`` (``ORCHESTRA_RANKS_PER_NODE``).

        Pretend nodes on one machine would otherwise share one area, which real nodes never do.
        """
        return StagingArea(self.root.with_name(f"{self.root.name}-node{first_rank}"))

    def prepare(self) -> None:
        """Make the area (mode 0700) if it does not exist; its parent must exist."""
        self.root.mkdir(mode=0o700, exist_ok=True)

    def entry_dir(self, key: str) -> Path:
        """Where the build of ``key`` is staged."""
        return self.root / _stem(key)

    def lock_path(self, key: str) -> Path:
        """The copy lock of ``key``."""
        return self.root / f"{_stem(key)}.lock"

    def temporary_dir(self, key: str) -> Path:
        """A new empty folder in the area for a copy of ``key`` in progress."""
        return Path(tempfile.mkdtemp(prefix=f".tmp-{_stem(key)}-{os.getpid()}-", dir=self.root))

    @contextlib.contextmanager
    def copying(self, key: str, timeout_s: Optional[float]) -> Iterator[None]:
        """Hold the copy lock of ``key``: one process at a time verifies, copies, starts or ends using it.

        Held only for those short steps, never across a collective, so ranks of
        one job on one node (pretend nodes) cannot wait on each other through it.
        """
        with file_lock(self.lock_path(key), timeout_s):
            yield

    def start_using(self, key: str) -> int:
        """Take a shared lock saying "a node is loading this copy"; call under :meth:`copying`. Returns its descriptor."""
        descriptor = os.open(self._users_path(key), os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(descriptor, fcntl.LOCK_SH)
        return descriptor

    def stop_using(self, key: str, descriptor: int) -> bool:
        """Release a :meth:`start_using` lock; if no other process uses the copy, remove it. Call under :meth:`copying`.

        Returns True if the staged copy was removed.
        """
        os.close(descriptor)
        users = self._users_path(key)
        if not remove_if_free(users):
            return False  # another node (another job, or a pretend node of this one) still loads it
        self.discard(self.entry_dir(key))
        return True

    def remove_copy_lock(self, key: str) -> None:
        """Delete the copy lock file of ``key`` unless someone holds it."""
        with contextlib.suppress(FileNotFoundError):
            remove_if_free(self.lock_path(key))

    def _users_path(self, key: str) -> Path:
        return self.root / f"{_stem(key)}.users"

    def discard(self, folder: Path) -> bool:
        """Remove a staged (or half-copied) folder of this area; False if it did not exist."""
        return discard_tree(folder, self.root, trash_prefix())

    def remove_if_empty(self) -> None:
        """Remove the area itself when nothing is left in it (another job may still use it: then keep it)."""
        with contextlib.suppress(OSError):
            self.root.rmdir()


def _stem(key: str) -> str:
    """The name every file of ``key``'s copy in the area starts with (the store's key prefix)."""
    return checked_key(key)[:KEY_PREFIX_LENGTH]
