"""Attributes of DaCe replaced by orchestra's stand-ins for the duration of a ``with`` block, put back on leaving.

orchestra's stand-ins (:mod:`.line_info`, :mod:`.inference_symbols`,
:mod:`.control_flow_raising`, :mod:`.descendant_rebase`, :mod:`.symbol_folding`,
:mod:`.function_sharing`, and those :mod:`.cheaper_helpers` enters) give the
answers of the functions they replace with less work. Each module decides
whether the DaCe it finds is the one it was written for (most by :func:`source_digest`: a stand-in is sound only
next to the exact code it was proven against), and holds its own lock where
two blocks could interleave; :func:`standing_in` only replaces and restores,
and :func:`standing_in_once` does it for one attribute under such a lock,
where the DaCe found is recognised and no stand-in is there yet.
:class:`WhileAnyInside` makes a change that any thread may share (an
equivalent function, a collector setting) for as long as any block of any
thread is inside, without holding a lock meanwhile.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import inspect
import threading
from typing import Any, Callable, ContextManager, Iterator, Mapping, Optional


def source_digest(function: Any) -> str:
    """The sha256 of ``function``'s source text; empty where there is none to read (remembered per function:
    ``dace_settings`` asks it of the same few functions on every entry)."""
    try:
        return _remembered_digest(function)
    except TypeError:  # not hashable: read afresh
        return _remembered_digest.__wrapped__(function)


@functools.lru_cache(maxsize=256)
def _remembered_digest(function: Any) -> str:
    try:
        return hashlib.sha256(inspect.getsource(function).encode()).hexdigest()
    except (OSError, TypeError):
        return ""


@contextlib.contextmanager
def standing_in(owner: Any, stand_ins: Mapping[str, Any]) -> Iterator[None]:
    """Inside the block, ``owner.<name>`` is ``stand_ins[name]`` for each name; what was there before, after it."""
    originals = {name: getattr(owner, name) for name in stand_ins}
    for name, stand_in in stand_ins.items():
        setattr(owner, name, stand_in)
    try:
        yield
    finally:
        for name, original in originals.items():
            setattr(owner, name, original)


@contextlib.contextmanager
def standing_in_once(lock: ContextManager, owner: Any, name: str, recognizes: Callable[[Any], bool],
                     make: Callable[[Any], Any]) -> Iterator[None]:
    """Inside the block, ``owner.<name>`` is ``make(original)``, where ``recognizes(original)``.

    Holding ``lock`` for the block (one block at a time replaces the attribute). Inside a block
    that already stands in for it (a nested use), or where the DaCe found is not the one the
    stand-in was written for, the attribute is left as it is.
    """
    with lock:
        original = getattr(owner, name)
        if getattr(original, "__orchestra_stand_in__", False) or not recognizes(original):
            yield
            return
        stand_in = make(original)
        stand_in.__orchestra_stand_in__ = True
        with standing_in(owner, {name: stand_in}):
            yield


def replaced_where_recognized(owners: Any, name: str, recognizes: Callable[[Any], bool],
                              replacement: Any) -> Callable[[], None]:
    """``owner.<name> = replacement`` for each of ``owners`` whose ``<name>`` is recognised; returns the undo."""
    before = {owner: getattr(owner, name) for owner in owners if recognizes(getattr(owner, name, None))}
    for owner in before:
        setattr(owner, name, replacement)

    def undo() -> None:
        for owner, original in before.items():
            setattr(owner, name, original)

    return undo


class WhileAnyInside:
    """A process-wide change made when the first of overlapping blocks begins, undone when the last one ends.

    ``change()`` makes it and returns what undoes it. Blocks may nest and may
    overlap in several threads: none waits for another, so the change must be
    one every thread may meet (an equivalent function, a collector setting).
    """

    def __init__(self, change: Callable[[], Callable[[], None]]) -> None:
        self._change = change
        self._lock = threading.Lock()
        self._inside = 0
        self._undo: Optional[Callable[[], None]] = None

    @contextlib.contextmanager
    def __call__(self) -> Iterator[None]:
        with self._lock:
            if self._inside == 0:
                self._undo = self._change()
            self._inside += 1
        try:
            yield
        finally:
            with self._lock:
                self._inside -= 1
                undo, self._undo = (self._undo, None) if self._inside == 0 else (None, self._undo)
                if undo is not None:
                    undo()
