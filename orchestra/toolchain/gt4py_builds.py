"""One process builds a gt4py stencil, the others wait and load it: a lock per stencil in gt4py's cache.

gt4py builds a stencil (its generated module, its C++ extension, the
``.cacheinfo`` that says the build is complete) into its cache without
locking: MPI ranks building the same stencil into one ``GT_CACHE_ROOT`` at
once compile into the same folder and copy the same ``.so``, and a rank
imports another's half-copied extension (``ImportError: ..._pyext...so: file
too short``, six ranks of one plain ``gtscript.stencil(backend="dace:cpu")``
on a fresh cache). :func:`lock_gt4py_builds` wraps gt4py's
``StencilBuilder.build`` (load from the cache, or generate) in an exclusive
file lock of that one stencil (:func:`stencil_build_lock`, beside its files):
the first process generates, the others wait and then find it in the cache.
Different stencils build at once. It covers every stencil built by a process
that imported orchestra (gt4py's ``gtscript.stencil`` and ``lazy_stencil``
alike, FrozenStencils too); a process that never imports orchestra keeps
gt4py's unlocked builds.

The lock is re-entrant within a thread (a FrozenStencil lowering or calling
its stencil holds it around gt4py's build) and is the lock
:func:`orchestra.stencils.stencil_cache.stencil_lock` takes, so lowering a
stencil and building it exclude each other too.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import sys
import threading
from pathlib import Path
from typing import Any, Iterator, Optional

from orchestra.cache.errors import CacheLockTimeout
from orchestra.cache.locking import file_lock

#: gt4py's module holding ``StencilBuilder``; patched when loaded.
BUILDER_MODULE = "gt4py.cartesian.stencil_builder"

_held = threading.local()  #: lock paths this thread holds, with their depth


def build_lock_path(builder: Any) -> Path:
    """The lock file of one stencil (all its origins and domains), beside its files in gt4py's cache."""
    return Path(f"{Path(builder.module_path).with_suffix('')}_orchestra.lock")


@contextlib.contextmanager
def stencil_build_lock(builder: Any, wait: bool = True) -> Iterator[bool]:
    """Hold the exclusive lock of ``builder``'s stencil; yields False without it when ``wait`` is False and it is held.

    Re-entrant within a thread; other threads and processes wait (or, with
    ``wait=False``, get False at once).
    """
    path = str(build_lock_path(builder))
    depths: dict[str, int] = _held.__dict__.setdefault("depths", {})
    if depths.get(path):
        depths[path] += 1
        try:
            yield True
        finally:
            depths[path] -= 1
        return
    try:
        holding = file_lock(Path(path), None if wait else 0.0)
        holding.__enter__()
    except CacheLockTimeout:
        yield False
        return
    depths[path] = 1
    try:
        yield True
    finally:
        depths.pop(path, None)
        holding.__exit__(None, None, None)


def lock_gt4py_builds() -> None:
    """Make every gt4py stencil build of this process hold :func:`stencil_build_lock` (now, or once gt4py loads)."""
    module = sys.modules.get(BUILDER_MODULE)
    if module is not None:
        _patch(module)
    elif not any(isinstance(finder, _PatchOnImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _PatchOnImport())


def _patch(module: Any) -> None:
    builder_class = module.StencilBuilder
    original = builder_class.build
    if getattr(original, "__orchestra_locked__", False):
        return

    def build(self: Any) -> Any:
        with stencil_build_lock(self):
            return original(self)

    build.__orchestra_locked__ = True  # type: ignore[attr-defined]
    build.__doc__ = original.__doc__
    builder_class.build = build


class _PatchOnImport(importlib.abc.MetaPathFinder):
    """Patches gt4py's ``StencilBuilder`` right after its module is first executed (gt4py is not imported early)."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Optional[importlib.machinery.ModuleSpec]:
        if name != BUILDER_MODULE:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return None
        spec.loader = _PatchingLoader(spec.loader)
        return spec


class _PatchingLoader(importlib.abc.Loader):
    def __init__(self, loader: Any) -> None:
        self.loader = loader

    def create_module(self, spec: Any) -> Any:
        return self.loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self.loader.exec_module(module)
        _patch(module)

    def __getattr__(self, name: str) -> Any:  # get_source, get_filename...: the wrapped loader's
        return getattr(self.loader, name)
