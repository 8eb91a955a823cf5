"""``ORCHESTRA_VERIFY=1``: each orchestrated call also runs in ``Python`` mode, compared bit for bit.

A model new to orchestra should be run this way once: a difference from
``Python`` mode, whatever its cause (a defect of orchestra or DaCe, a model
idiom that compiles to something else), is found at the first call that
shows it, named by where the model holds the array, instead of as a drift
found days later.

For each verified call of a top-level orchestrated method
(:func:`verified_call`):

1. every array the call can reach is found, by access path: the arguments
   (arrays, and arrays inside dataclasses, dicts, lists, tuples and plain
   objects, such as a ``state``), and what the method's object holds
   (``self.tmp``, ``self.inner.b``, ``self.fields['eta']``), a few levels
   deep, except ``Scratch`` arrays (the program's own); each is copied.
   Numbers (``float``, NumPy scalars such as ``np.float32(0.1)``) are
   values, passed as they are to both runs;
2. the method's body runs as ``Python`` mode runs it (nested components
   and stencils too), and the arrays are copied again;
3. the arrays are put back as they were and the orchestrated program runs;
4. every array is compared bit for bit (NaNs equal where both are). At the
   first array that differs a :class:`~orchestra.errors.VerificationError`
   names the call, the array's access path, the first index that differs,
   both values and how many values differ, and where the two runs first
   part: the call runs once more in each mode with its callbacks traced
   (:mod:`.callback_trace`), which names the first callback called with
   other arguments (``self.a`` where Python mode passed ``self.inner.b``),
   or the two callbacks between which the compiled code computed something
   else, or a callback that acts differently when called again. The model
   then holds the orchestrated results, as an unverified run would.

Callbacks run twice per verified call (once per mode; four times when a difference is narrowed down): a callback whose
effect depends on how often it ran (a counter, a clock, an ``n``-th call)
shows as a difference, and an MPI exchange is made twice by every rank, which
is harmless. Each rank compares its own arrays; a rank that differs raises
there (under MPI, an uncaught exception ends the job through orchestra's
abort handler, :mod:`orchestra.comm.abort`).

Cost: a verified call costs a ``Python``-mode call (the stencils stencil by
stencil), two copies of every reachable array and the comparison; on the
README's dycore about the time of a ``Python``-mode step. ``ORCHESTRA_VERIFY_CALLS=N``
verifies the first ``N`` calls of each program only. At exit one line per
program says how many calls were verified.
"""

from __future__ import annotations

import atexit
import contextlib
import contextvars
import dataclasses
import logging
import os
from typing import Any, Callable, Iterator, Optional

import numpy as np

from orchestra.calls.reachable import reachable_arrays as reachable
from orchestra.errors import ConfigurationError, VerificationError
from orchestra.observe.callback_trace import CallbackTrace, first_departure, host_array, tracing

log = logging.getLogger("orchestra")

#: True while a verified call runs its Python-mode half: orchestrated calls inside run their bodies.
_PYTHON_ONLY: contextvars.ContextVar[bool] = contextvars.ContextVar("orchestra_python_only", default=False)
#: How deep the search for arrays goes from an argument or the method's object.
_DEPTH = 4


def verify_calls_from_environment() -> Optional[int]:
    """Calls to verify per program from ``ORCHESTRA_VERIFY`` / ``ORCHESTRA_VERIFY_CALLS``: None off, 0 every call."""
    flag = os.environ.get("ORCHESTRA_VERIFY", "").strip().lower()
    if flag in ("", "0", "off", "no", "false"):
        return None
    if flag not in ("1", "on", "yes", "true", "all"):
        raise ConfigurationError(f"ORCHESTRA_VERIFY={flag!r}: use 1 (verify orchestrated calls) or 0")
    count = os.environ.get("ORCHESTRA_VERIFY_CALLS", "").strip()
    if not count:
        return 0
    if not count.isdigit() or int(count) < 1:
        raise ConfigurationError(f"ORCHESTRA_VERIFY_CALLS={count!r} is not a positive number of calls")
    return int(count)


def python_only() -> bool:
    """True inside the Python-mode half of a verified call (orchestrated methods run their bodies)."""
    return _PYTHON_ONLY.get()


@contextlib.contextmanager
def _running_python_mode() -> Iterator[None]:
    token = _PYTHON_ONLY.set(True)
    try:
        yield
    finally:
        _PYTHON_ONLY.reset(token)


@dataclasses.dataclass
class Verifier:
    """The verification of one orchestrated program's calls."""

    label: str
    limit: int  #: calls to verify; 0: every call
    rank: int = 0
    verified: int = 0
    calls: int = 0

    def __post_init__(self) -> None:
        atexit.register(self._report)

    def wants(self) -> bool:
        return not python_only() and (self.limit == 0 or self.verified < self.limit)

    def call(self, body: Callable[[], Any], orchestrated: Callable[[], Any], method_object: Any,
             parameters: list[str], args: tuple, kwargs: dict) -> Any:
        """Run ``body`` (Python mode), restore the arrays, run ``orchestrated``; raise at the first difference."""
        self.calls += 1
        objects: dict[int, str] = {}
        arrays = reachable_arrays(method_object, parameters, args, kwargs, objects)
        before = {path: _copy(array) for path, array in arrays.items()}
        with _running_python_mode():
            body()
        python = {path: host_array(array).copy() for path, array in arrays.items()}
        _put_back(arrays, before)
        result = orchestrated()
        difference = self._difference(arrays, python)
        if difference is not None:
            where = _narrow(body, orchestrated, arrays, objects, before)
            raise VerificationError(f"{difference}. Narrowed down (the call run again in both modes, its callbacks "
                                    f"traced): {where}. Both ran from the same inputs; unless a callback's effect "
                                    "depends on how often it runs, please report it with the model (orchestra must "
                                    "compute what Python mode computes)")
        self.verified += 1
        return result

    def _difference(self, arrays: dict[str, Any], python: dict[str, np.ndarray]) -> Optional[str]:
        """The first array that differs from Python mode's, as a sentence; None if all agree."""
        differing = []
        for path, array in arrays.items():
            orchestrated, expected = host_array(array), python[path]
            if expected.shape != orchestrated.shape:
                differing.append((path, None))
                continue
            same = (expected == orchestrated) | (np.isnan(expected) & np.isnan(orchestrated)
                                                 if expected.dtype.kind in "fc" else False)
            if not np.all(same):
                differing.append((path, same))
        if not differing:
            return None
        path, same = differing[0]
        where = f"rank {self.rank}: " if self.rank else ""
        if same is None:
            detail = f"{path} has shape {host_array(arrays[path]).shape}, {python[path].shape} in Python mode"
        else:
            index = tuple(int(i) for i in np.argwhere(~same)[0])
            detail = (f"{path}[{', '.join(map(str, index))}] is {host_array(arrays[path])[index].item()!r} orchestrated "
                      f"and {python[path][index].item()!r} in Python mode ({int((~same).sum())} of {same.size} values differ)")
        others = ", ".join(p for p, _ in differing[1:6]) + (", ..." if len(differing) > 6 else "")
        return (f"{where}ORCHESTRA_VERIFY: call {self.calls} of {self.label} differs from Python mode: {detail}"
                + (f"; also differ: {others}" if others else ""))

    def _report(self) -> None:
        if self.verified and self.rank == 0:
            log.info("ORCHESTRA_VERIFY: %d call(s) of %s verified bit for bit against Python mode",
                     self.verified, self.label)


def _narrow(body: Callable[[], Any], orchestrated: Callable[[], Any], arrays: dict[str, Any],
            objects: dict[int, str], before: dict[str, Any]) -> str:
    """Run the call again in both modes from ``before``, callbacks traced; where they first part."""
    traces = []
    try:
        for run, python_mode in ((body, True), (orchestrated, False)):
            _put_back(arrays, before)
            with tracing(CallbackTrace(arrays, objects)) as trace:
                with _running_python_mode() if python_mode else contextlib.nullcontext():
                    run()
            traces.append(trace)
    except Exception as error:  # noqa: BLE001 (the difference is reported either way)
        return f"not possible ({type(error).__name__}: {error})"
    return first_departure(*traces)


def _put_back(arrays: dict[str, Any], saved: dict[str, Any]) -> None:
    """Each array as ``saved`` holds it; a read-only array (compared, never written) is left as it is."""
    for path, array in arrays.items():
        if getattr(getattr(array, "flags", None), "writeable", True):
            array[...] = saved[path]


def reachable_arrays(method_object: Any, parameters: list[str], args: tuple, kwargs: dict,
                     objects: Optional[dict[int, str]] = None) -> dict[str, Any]:
    """Access path -> array of every array a call can reach but ``Scratch`` arrays (see the module).

    ``objects``, if given, receives id -> access path of the containers searched on the way
    (the method's object, states, dicts), to name a callback's arguments.
    """
    roots = list(zip(parameters, args)) + list(kwargs.items())
    if method_object is not None:
        roots.insert(0, ("self", method_object))
    return reachable(roots, _DEPTH, scratch=False, objects=objects)


def _copy(array: Any) -> Any:
    return array.copy()
