"""A build's library opened again in one process is opened from a private copy, never copied into the cache.

The dynamic loader opens a file once per process: a second ``dlopen`` of the
same path returns the first handle, with its program state. So when DaCe is
asked to load a library this process already has loaded, it copies the file
to ``lib<name>.so_<n>`` beside it and loads that, which writes into a
published cache entry (which nothing may change once published) and fails on
a read-only cache. That happens whenever two objects run the same build in
one process: two instances of one orchestrated class with equal arguments,
a stencil called from several Python bodies of a split build (one
one-stencil program), a test that builds a model twice.

:func:`library_to_open` answers the path to load: the build's own library if
no live program of this process has it open, else a copy in a folder of this
process's own (under the system's temporary folder, removed when the process
ends), made from the build's verified files. :func:`opened` records which
program holds which path open (the build's or a copy); a program that is
garbage collected closes its library (DaCe's ``CompiledSDFG.__del__``) and
frees that path for the next.
"""

from __future__ import annotations

import atexit
import itertools
import shutil
import tempfile
import threading
import weakref
from pathlib import Path
from typing import Any, Optional

_lock = threading.Lock()
_holders: dict[str, weakref.WeakSet] = {}  # resolved library path -> the live programs that opened it
_private_folder: Optional[Path] = None
_numbers = itertools.count()


def library_to_open(library: Path) -> Path:
    """``library``, or a private copy of its folder's libraries when a live program of this process has it open."""
    library = Path(library).resolve()
    with _lock:
        holders = _holders.get(str(library))
        if not holders:
            return library
        copy_folder = _private() / str(next(_numbers))
    copy_folder.mkdir()
    for shared_object in library.parent.glob("*.so"):  # the library and DaCe's stub beside it
        shutil.copy2(shared_object, copy_folder / shared_object.name)
    return copy_folder / library.name


def opened(library: Path, program: Any) -> None:
    """Record that ``program`` (a DaCe ``CompiledSDFG``) holds ``library`` open until it is collected."""
    with _lock:
        _holders.setdefault(str(Path(library).resolve()), weakref.WeakSet()).add(program)


def _private() -> Path:
    """This process's folder of library copies (made on first use, removed at exit)."""
    global _private_folder
    if _private_folder is None:
        _private_folder = Path(tempfile.mkdtemp(prefix="orchestra_open_libraries_"))
        atexit.register(shutil.rmtree, _private_folder, True)
    return _private_folder
