"""Compiled objects kept between builds: a rebuild compiles only the files whose input changed.

An edit of one stencil changes the generated C++ of the functions that run
it and of nothing else (the other functions come out byte for byte the same).
With the program in several files (:mod:`orchestra.toolchain.translation_units`),
most files of the rebuild are those of the build before. While orchestra
compiles, CMake runs the C++ compiler through
:mod:`orchestra.toolchain.compile_launcher`, which reuses the object of a file
whose preprocessed text, flags and compiler are those of an object compiled
before, and keeps every new one, under ``<cache root>/.objects``.

``ORCHESTRA_OBJECT_CACHE_MB``: the most megabytes kept there (default
:data:`DEFAULT_LIMIT_MB`; the least recently used go first); ``0``: no objects
kept or reused, and the program split only as the cores ask. The folder may
be deleted at any time. Objects are reused only from a folder owned by this
user, root or ``ORCHESTRA_TRUSTED_OWNERS`` that not everyone may write, and
each only if its content matches the digest in its name.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import os
import re
import sys
from pathlib import Path
from typing import Iterator

from orchestra.toolchain import compile_launcher

log = logging.getLogger("orchestra")

LIMIT_VARIABLE = "ORCHESTRA_OBJECT_CACHE_MB"
DEFAULT_LIMIT_MB = 2048
#: What may stand unquoted in the launcher's CMake list and in the shell command DaCe runs CMake with.
_PLAIN_PATH = re.compile(r"[A-Za-z0-9_./+-]+")
_CMAKE_ARGS = ("compiler", "extra_cmake_args")

_reusing: contextvars.ContextVar[bool] = contextvars.ContextVar("orchestra_objects_reused", default=False)


def limit_mb() -> int:
    """``ORCHESTRA_OBJECT_CACHE_MB`` as a number of megabytes (:data:`DEFAULT_LIMIT_MB` when unset)."""
    value = os.environ.get(LIMIT_VARIABLE, "").strip()
    if not value:
        return DEFAULT_LIMIT_MB
    try:
        number = int(value)
    except ValueError:
        number = -1
    if number < 0:
        from orchestra.errors import ConfigurationError

        raise ConfigurationError(f"{LIMIT_VARIABLE}={value!r} is not a number of megabytes; give the most compiled "
                                 f"objects to keep for later builds (0: none), or unset it ({DEFAULT_LIMIT_MB})")
    return number


def reusing() -> bool:
    """Whether the compile under way keeps and reuses objects (then the program is split finer)."""
    return _reusing.get()


def launcher_argument(folder: Path, limit: int, owners: set[int]) -> str:
    """The CMake argument that runs the C++ compiler through the launcher, quoted for DaCe's shell command.

    DaCe splits ``compiler.extra_cmake_args`` like a shell, then runs CMake
    through one: the single quotes are taken off by the first, the double
    quotes by the second, so CMake gets the list whole.
    """
    items = [sys.executable, "-I", compile_launcher.__file__, "--store", str(folder), "--limit-mb", str(limit),
             "--owners", ",".join(str(uid) for uid in sorted(owners)), "--"]
    return "'\"-DCMAKE_CXX_COMPILER_LAUNCHER=" + ";".join(items) + "\"'"


@contextlib.contextmanager
def objects_kept_in(cache_root: Path) -> Iterator[bool]:
    """While compiling: objects reused from and kept in ``<cache_root>/.objects``; yields whether they are.

    Not where ``ORCHESTRA_OBJECT_CACHE_MB`` is 0, where a path would need
    quoting in DaCe's CMake command, or where the folder cannot be made or is
    not trusted (then with a warning: the build is only slower).
    """
    from dace.config import Config

    from orchestra.cache.layout import OBJECTS_NAME
    from orchestra.cache.trust import UntrustedCacheError, check_trusted, trusted_owners

    limit = limit_mb()
    folder = Path(cache_root) / OBJECTS_NAME
    paths = (folder, sys.executable, compile_launcher.__file__)
    quoted = [path for path in paths if not _PLAIN_PATH.fullmatch(str(path))]
    if limit == 0 or quoted:
        if quoted:
            log.info("compiled objects are not reused between builds: %s would need quoting in DaCe's CMake command",
                     quoted[0])
        yield False
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
        check_trusted(Path(cache_root), folder, [])
    except (OSError, UntrustedCacheError) as error:
        log.warning("compiled objects are not reused between builds: %s", error)
        yield False
        return
    before = Config.get(*_CMAKE_ARGS)
    Config.set(*_CMAKE_ARGS, value=f"{before} {launcher_argument(folder, limit, trusted_owners())}".strip())
    token = _reusing.set(True)
    try:
        yield True
    finally:
        _reusing.reset(token)
        Config.set(*_CMAKE_ARGS, value=before)


def objects_summary(build_folder: Path) -> str:
    """How many of the compiled files were reused (the launcher's record in ``build_folder``); '' if none ran."""
    record = Path(build_folder) / compile_launcher.RECORD_NAME
    try:
        outcomes = [line.split(" ", 1)[0] for line in record.read_text().splitlines()]
    except OSError:
        return ""
    reused = outcomes.count("reused")
    return f"{reused} of {len(outcomes)} file(s) reused from earlier builds" if outcomes else ""
