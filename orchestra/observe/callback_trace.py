"""Where a verified call first departs from ``Python`` mode: its callbacks, traced in both modes.

When ``ORCHESTRA_VERIFY`` finds an array that differs (:mod:`.verify`), it
runs the call once more in each mode from the same inputs with a
:class:`CallbackTrace` active. Every call of a ``dace_inhibitor`` function
(a halo exchange, a getter: the places where the compiled program hands
control back to Python) is then recorded as a :class:`CallbackEvent`: which
function, with which arguments (named by the access path of the model's
array or object they are, ``self.inner.b``), what it returned, and a
fingerprint of every reachable array on entry and on exit.

:func:`first_departure` walks the two traces side by side and names the
first place they part:

* the callback calls differ (another function, a different number of
  calls): the program calls other callbacks than Python mode;
* the same callback ran with other arguments (``self.a`` where Python mode
  passed ``self.inner.b``): a callback bound to the wrong array;
* the arrays differ on entry to a callback though they agreed when the
  previous one returned: the compiled code between the two computed
  something else (the stencils there);
* the arrays agree on entry and the arguments are the same, but differ when
  it returns: the callback itself acts differently on its second run (a
  counter, a clock);
* every callback agrees: the difference arises after the last one.

The callbacks traced are those the model decorates with orchestra's
``dace_inhibitor`` (orchestra's own halo updaters and communicator too);
the callbacks are named as Python mode called them (function and line).
"""

from __future__ import annotations

import contextlib
import dataclasses
import sys
import zlib
from typing import Any, Callable, Iterator, Optional

import numpy as np

from orchestra.key.array_like import array_layout

#: The trace being recorded, if any (one per process: verification runs one call at a time).
_ACTIVE: Optional["CallbackTrace"] = None


@dataclasses.dataclass
class CallbackEvent:
    """One call of a traced callback."""

    function: str  #: qualified name of the decorated function
    site: str  #: ``file:line`` of the call in Python code (the compiled program's callbacks have none)
    arguments: tuple[str, ...]  #: each argument named by access path, or described
    result: str
    entry: dict[str, int]  #: access path -> fingerprint of every reachable array on entry
    exit: dict[str, int]  #: ... and on return


@dataclasses.dataclass
class CallbackTrace:
    """The callbacks of one run of a call, with the arrays and objects it can reach by access path."""

    arrays: dict[str, Any]
    objects: dict[int, str]
    events: list[CallbackEvent] = dataclasses.field(default_factory=list)
    final: dict[str, int] = dataclasses.field(default_factory=dict)

    def record(self, function: Callable, args: tuple, kwargs: dict) -> Any:
        """Call ``function`` as the traced callback it is, recording the call."""
        caller = sys._getframe(2)  # the decorated wrapper's caller: model code, or the compiled program's trampoline
        site = f"{caller.f_code.co_filename.rsplit('/', 1)[-1]}:{caller.f_lineno}"
        entry = fingerprints(self.arrays)
        described = tuple(self._describe(value) for value in (*args, *kwargs.values()))
        result = function(*args, **kwargs)
        self.events.append(CallbackEvent(function.__qualname__, site, described, _short(result), entry,
                                         fingerprints(self.arrays)))
        return result

    def _describe(self, value: Any) -> str:
        if id(value) in self.objects:
            return self.objects[id(value)]
        if hasattr(value, "__array_interface__") or hasattr(value, "__cuda_array_interface__"):
            return _array_path(value, self.arrays)
        return _short(value)


@contextlib.contextmanager
def tracing(trace: CallbackTrace) -> Iterator[CallbackTrace]:
    """Record the callbacks called inside the block into ``trace`` (and the arrays after it in ``trace.final``)."""
    global _ACTIVE
    previous, _ACTIVE = _ACTIVE, trace
    try:
        yield trace
    finally:
        _ACTIVE = previous
        trace.final = fingerprints(trace.arrays)


def active() -> Optional[CallbackTrace]:
    """The trace being recorded, or None (the common case: one global read per callback call)."""
    return _ACTIVE


def fingerprints(arrays: dict[str, Any]) -> dict[str, int]:
    """Access path -> CRC-32 of the array's bytes (with its shape)."""
    found = {}
    for path, array in arrays.items():
        host = np.ascontiguousarray(host_array(array))
        found[path] = zlib.crc32(host.view(np.uint8).reshape(-1), zlib.crc32(repr(host.shape).encode()))
    return found


def first_departure(python: CallbackTrace, orchestrated: CallbackTrace) -> str:
    """Where the orchestrated trace first parts from Python mode's, as a sentence (see the module)."""
    previous = "the start of the call"
    for number, (expected, got) in enumerate(zip(python.events, orchestrated.events), start=1):
        name = f"callback call {number}, {expected.function} (called at {expected.site} in Python mode)"
        if got.function != expected.function:
            return (f"callback call {number} is {got.function} orchestrated and {expected.function} (at "
                    f"{expected.site}) in Python mode: the program calls other callbacks than Python mode")
        changed = _differing(expected.entry, got.entry)
        if changed:
            return f"the arrays {changed} differ on entry to {name}, after {previous}: the compiled code in between computed them differently"
        if got.arguments != expected.arguments:
            return (f"{name} ran with ({', '.join(got.arguments)}) orchestrated and with "
                    f"({', '.join(expected.arguments)}) in Python mode: a callback bound to other arguments")
        changed = _differing(expected.exit, got.exit)
        if changed or got.result != expected.result:
            what = f"left {changed} different" if changed else f"returned {got.result} (Python mode: {expected.result})"
            return f"{name} {what} though it was called alike: the callback acts differently when called again"
        previous = name
    if len(python.events) != len(orchestrated.events):
        return (f"the program made {len(orchestrated.events)} callback call(s), Python mode "
                f"{len(python.events)}; the first {min(len(python.events), len(orchestrated.events))} agree")
    changed = _differing(python.final, orchestrated.final)
    where = f"after the last {previous}" if python.events else "in compiled code (no traced callback ran)"
    return f"the arrays {changed or 'compared'} first differ {where}"


def _differing(expected: dict[str, int], got: dict[str, int]) -> str:
    paths = [path for path, stamp in expected.items() if got.get(path) != stamp]
    return ", ".join(paths[:4]) + (f" (and {len(paths) - 4} more)" if len(paths) > 4 else "")


def _array_path(value: Any, arrays: dict[str, Any]) -> str:
    """The access path of the reachable array ``value`` is, or the one it views into (by memory)."""
    mine = array_layout(value)
    if mine is None:
        return f"an array of shape {tuple(np.shape(value))}"
    layouts = {path: array_layout(array) for path, array in arrays.items()}
    for path, other in layouts.items():
        if other is not None and (other.pointer, other.shape, other.strides, other.dtype) == (
                mine.pointer, mine.shape, mine.strides, mine.dtype):
            return path
    for path, other in layouts.items():
        span = other.byte_range() if other is not None else None
        if span is not None and mine.pointer is not None and span[0] <= mine.pointer < span[1]:
            return f"a view into {path}"
    return f"an array of shape {mine.shape} the model does not hold"


def _short(value: Any) -> str:
    text = repr(value) if isinstance(value, (int, float, complex, bool, str, type(None), np.generic)) else type(value).__name__
    return text if len(text) <= 40 else text[:37] + "..."


def host_array(array: Any) -> np.ndarray:
    """``array`` as a NumPy array (a device array copied to the host)."""
    if hasattr(array, "__cuda_array_interface__") and hasattr(array, "get"):
        return array.get()
    return np.asarray(array)
