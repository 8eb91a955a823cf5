"""The fast call path of a loaded orchestrated program.

Marshalling arguments for a ``CompiledSDFG`` (descriptors, callback
trampolines) costs far more than a small model step. A :class:`FastCaller`
marshals once and reuses the marshalled argument vector while every argument
is *the same object* as last time (scalars: an equal value of the same type).
The caller keeps references to the marshalled objects, so their addresses
cannot be reused by other objects and a referenced numpy array cannot be
resized in place: object identity implies the same data pointer, shape and
strides. Reallocating an array (or replacing a state attribute) gives a new
object and triggers a fresh, validated marshalling, never a stale pointer.

An array container (:func:`orchestra.key.array_like.is_container`, e.g. NDSL's
``Quantity``) is the exception: the same container may wrap another array
after ``quantity.data = new_array``. For each container marshalled, the fast
path also checks on every call that the container still wraps the same data
(:mod:`orchestra.calls.container_watch`: the forwarded array by identity
where the container's class provably forwards one, else the data token:
pointer, shape, strides, dtype); a change triggers the same validated
marshalling. Arrays are described (shape, dtype,
strides, memory range) by :func:`orchestra.key.array_like.array_layout` only
when marshalling.
"""

from __future__ import annotations

import numbers
import time
from typing import TYPE_CHECKING, Any, Callable, Optional

import numpy as np

from orchestra.calls.callback_errors import CALLBACK_SITES_FILE, CallbackGuard, callback_labels, callback_lines
from orchestra.calls.container_watch import ContainerWatch
from orchestra.calls.repoint import Repointer, unchanged
from orchestra.key.array_like import ArrayLayout, array_layout, first_overlap, is_scratch
from orchestra.errors import StaleArgumentsError
from orchestra.key.expression_reader import expression_reader
from orchestra.key.inputs import array_paths
from orchestra.frontend.closure_arrays import shared_arrays
from orchestra.observe.timings import ProgramClock
from orchestra.toolchain import dace_settings

if TYPE_CHECKING:
    from orchestra.observe.replay.record import CallRecorder

def _same(current: list, last: list) -> bool:
    if len(current) != len(last):
        return False
    for a, b in zip(current, last):
        if a is not b and not unchanged(a, b):
            return False
    return True


def _fast_getter(getter: Callable[[], Any]) -> Callable[[], Any]:
    """An equivalent of DaCe's closure-array getter that does not re-compile per call.

    DaCe 2 (2.0.0a10, still 2.0.0b1) reads a closure array (``self.grid.rarea``) with
    ``lambda: eval(qualname, resolver.globals)``: every call copies the
    program's globals into a filtered dict and compiles the expression again
    (~20 us per array, ~1 ms per call of the dycore). The equivalent here
    reads the expression in the same namespace with
    :func:`orchestra.key.expression_reader.expression_reader` (an attribute chain
    such as ``self.grid.rarea`` directly, about 0.1 us), so attributes are
    still read at call time (a replaced array is seen). Any getter of another
    shape (DaCe also returns fixed objects) is kept.
    """
    code = getattr(getter, "__code__", None)
    if code is None or code.co_freevars != ("qualname", "self") or getter.__closure__ is None:
        return getter
    qualname, resolver = (cell.cell_contents for cell in getter.__closure__)
    try:
        namespace = resolver.globals  # filtered once: the parse is over, its scope is fixed
    except AttributeError:
        return getter
    if not isinstance(qualname, str) or not isinstance(namespace, dict):
        return getter
    return expression_reader(qualname, {}, namespace)  # its objects are fixed: read as locals, bound once


def _check_scalar(name: str, value: Any, dtype: np.dtype) -> None:
    """A scalar argument must convert to the program's scalar type without changing kind.

    ``Python`` mode converts a stencil's scalar argument to the type the
    stencil declares, and so does the program: a float32 value given where
    the program was built with a Python float (float64) computes the same.
    A conversion to another kind (a float to an integer, a complex to a
    float) would silently change the value, so it is refused; so is a
    numpy value of a wider type (float64 into a float32 program).
    """
    if not isinstance(value, (numbers.Number, np.generic)) or isinstance(value, np.ndarray):
        raise StaleArgumentsError(
            f"argument {name!r} is a scalar of type {dtype} in the program, but this call gives "
            f"{type(value).__name__}: pass a number (the program was built for one)"
        )
    given = value.dtype if isinstance(value, np.generic) else np.result_type(type(value))
    rule = "safe" if isinstance(value, np.generic) else "same_kind"
    if not np.can_cast(given, dtype, rule):
        raise StaleArgumentsError(
            f"argument {name!r} is a {dtype} scalar in the program, but this call gives "
            f"{type(value).__name__} {value!r}, which does not convert to {dtype} without loss; pass a "
            f"value of type {dtype} (or call the program with this type on its first call, so that it is "
            "built for it)"
        )


def _check_layout(name: str, layout: ArrayLayout, desc: Any) -> None:
    """An array argument must have the shape, dtype and strides (elements) the program was built for.

    ``name``: as a message shows it (``argument 'q'``, or the access path ``state.salt``).
    """
    expected = tuple(int(n) for n in desc.shape)
    dtype = desc.dtype.as_numpy_dtype()
    if layout.dtype != dtype:
        raise StaleArgumentsError(
            f"{name} is an array of {layout.dtype}, but the program was built for {dtype}: a program computes "
            f"in the types it was built for; give {dtype} arrays (as on the first call), or build a program for "
            f"{layout.dtype} (a new model object, whose first call builds for its arrays' types)"
        )
    if layout.shape != expected:
        raise StaleArgumentsError(
            f"{name} has shape {layout.shape}, but the program was built for shape {expected}; arrays may be "
            "reallocated between calls but not resized: rebuild for the new sizes"
        )
    # the stride of an axis of extent 1 is never used (DaCe may normalise it)
    strides = tuple(s for s, n in zip(layout.strides, layout.shape) if n > 1)
    expected_strides = tuple(int(s) for s, n in zip(desc.strides, expected) if n > 1)
    if strides != expected_strides:
        raise StaleArgumentsError(
            f"{name} has strides {strides} (elements) but the program was built for "
            f"{expected_strides}: allocate it with the same layout (same gt4py backend)"
        )


def check_no_aliasing(names: list[str], keywords: dict[str, Any], shown: Optional[dict[str, str]] = None) -> None:
    """No two of a program's arrays (arguments, and arrays read through ``self``) may share memory.

    ``Python`` mode runs stencils one by one, so an array passed twice (or two
    overlapping views, or an argument the model also holds as ``self.q``) is
    read and written in call order; the compiled program may keep values in
    registers or reorder the stencils' loops, assuming its arrays are
    distinct. Refused rather than risked. (Objects over exactly the same
    memory read through ``self``, such as a ``Quantity`` and its ``.data``,
    are one array of the program: :mod:`orchestra.frontend.closure_arrays`.)
    ``shown`` names each array in the message (default: ``argument 'name'``).
    """
    shown = shown or {}
    overlap = first_overlap({name: keywords.get(name) for name in names})
    if overlap is not None:
        one, other = (shown.get(name, f"argument {name!r}") for name in overlap)
        raise StaleArgumentsError(
            f"{one} and {other} share memory (the same array, or overlapping views of one); an "
            "orchestrated program assumes its arrays are distinct, so the result could differ from "
            "Python mode: pass a copy of one of them, or use one name for the array throughout"
        )


def _callback_sites(origin: Optional[dict]) -> dict[str, str]:
    """The build's record of where each callback is called (``callback_sites.json``), if it has one."""
    import json
    from pathlib import Path

    try:
        return json.loads((Path(origin["entry"]) / CALLBACK_SITES_FILE).read_text()) if origin else {}
    except (OSError, KeyError, ValueError):
        return {}


class FastCaller:
    """Calls a loaded program with the arguments of the orchestrated method.

    Args:
        program: the DaceProgram, after closure resolution (knows how to read
            arrays through ``self``).
        compiled_sdfg: the loaded library.
        clock: per-call timings (:mod:`orchestra.observe.timings`): laps ``marshal``
            and ``library`` and times each callback; None: nothing timed.
        origin: where the library comes from (cache key, entry folder,
            library file, cache root), written into a recording's manifest.
    """

    def __init__(
        self, program: Any, compiled_sdfg: Any, clock: Optional[ProgramClock] = None, origin: Optional[dict] = None
    ) -> None:
        self._compiled = compiled_sdfg
        self.origin = dict(origin or {})
        sdfg = compiled_sdfg.sdfg
        constant = set(program.constant_args)
        self._argnames = list(program.argnames)
        self._runtime_argnames = [name for name in self._argnames if name not in constant]
        self._constant_args = constant
        self._closure_names = list(program.closure_arg_mapping)
        closure_arrays = getattr(program.resolver, "closure_arrays", None) or {}
        #: how an array is named in messages: ``argument 'q'``, or the expression it is read by (``self.tmp``)
        paths = array_paths(program.resolver)  # a nested component's array by its own path (``state.salt``)
        self._shown = {name: paths.get(name, str(closure_arrays[name][0]))
                       for name in self._closure_names if name in closure_arrays}
        #: whether each array read through ``self`` was scratch (a transient of the program) when built
        self._scratch = {name: bool(getattr(closure_arrays[name][1], "transient", False))
                         for name in self._closure_names if name in closure_arrays}
        self._shared = shared_arrays(program.resolver)  # expressions made one array with another's
        self._closure_getters = [_fast_getter(g) for g in program.closure_arg_mapping.values()]
        resolver = program.resolver
        self._callbacks = {name: entry[1] for name, entry in resolver.callbacks.items()} if resolver else {}
        #: an exception in a callback ends the call with it (an MPI job with its message)
        lines = _callback_sites(origin) or callback_lines(sdfg)
        labels = {name: f"{label} ({lines[name]})" if name in lines else label  # self.halo.fill (model.py:40)
                  for name, label in callback_labels(resolver).items()}
        self._guard = CallbackGuard(sdfg.name)
        self._callbacks = {name: self._guard.wrap(labels[name], function) for name, function in self._callbacks.items()}
        self._clock = clock
        if clock is not None:  # each callback adds its time to its own part
            self._callbacks = {
                name: clock.timed_callback(labels.get(name, name), function) for name, function in self._callbacks.items()
            }
        self._callback_mapping = dict(sdfg.callback_mapping)
        signature = list(sdfg.arglist().keys())
        self._descriptors = {name: sdfg.arrays[name] for name in signature if name in sdfg.arrays}
        self._has_return = any(name.startswith("__return") for name in sdfg.arrays)
        self._last_values: list | None = None
        self._containers = ContainerWatch([])
        self._replaced_cursor = 0  # where closure_replaced(at_most) goes on
        self._repointer: Optional[Repointer] = None
        self.marshal_count = 0  #: full marshallings through DaCe
        self.repoint_count = 0  #: calls that only repointed replaced arrays (:mod:`orchestra.calls.repoint`)

    def _current_values(self, args: tuple, kwargs: dict) -> list:
        """This call's runtime arguments then closure arrays, in a fixed order."""
        if not kwargs and len(args) == len(self._argnames) and not self._constant_args:
            values = list(args)
        else:
            given = dict(zip(self._argnames, args))
            given.update(kwargs)
            values = [given[name] for name in self._runtime_argnames]  # complete: see orchestra.calls.arguments
        values.extend(getter() for getter in self._closure_getters)
        return values

    def _as_keywords(self, values: list) -> dict[str, Any]:
        keywords = dict(zip(self._runtime_argnames + self._closure_names, values))
        keywords.update(self._callbacks)
        # all at once: a symbol's target may be another symbol's name (orchestra.pipeline.callback_bindings)
        keywords.update({name: keywords[target] for name, target in self._callback_mapping.items()})
        return keywords

    def _validate(self, keywords: dict[str, Any]) -> None:
        check_no_aliasing(self._runtime_argnames + self._closure_names, keywords, self._shown)
        for name, built_scratch in self._scratch.items():
            if is_scratch(keywords.get(name)) != built_scratch:
                raise StaleArgumentsError(
                    f"{self._shown.get(name, name)} was {'' if built_scratch else 'not '}a scratch array when the "
                    f"program was built and is {'not ' if built_scratch else ''}one now: a scratch array is a "
                    "transient of the program, so its writes are not seen by Python; keep the kind the model was "
                    "built with, or build again (another key)"
                )
        for name, desc in self._descriptors.items():
            value = keywords.get(name)
            if type(desc).__name__ == "Scalar":
                _check_scalar(name, value, desc.dtype.as_numpy_dtype())
                continue
            if value is None or not hasattr(desc, "shape"):
                continue
            layout = array_layout(value)
            if layout is not None:
                _check_layout(self._shown.get(name, f"argument {name!r}"), layout, desc)

    def _check_shared(self) -> None:
        """Expressions the program reads as one array must still be one memory (most programs have none)."""
        for shared in self._shared:
            reason = shared.diverged()
            if reason is not None:
                raise StaleArgumentsError(reason)

    def __call__(self, args: tuple, kwargs: dict) -> Any:
        if self._shared:
            self._check_shared()
        values = self._current_values(args, kwargs)
        compiled = self._compiled
        last = self._last_values
        if last is None or (self._containers and self._containers.moved(values)):
            self._marshal(values)
        elif not _same(values, last):
            if self._repointer.repoint(values, last, compiled):
                self._last_values = values  # keeps the arrays pointed to alive
                self.repoint_count += 1
            else:
                self._marshal(values)
        clock = self._clock
        if clock is not None:
            clock.lap("marshal")
        compiled.fast_call(*compiled._lastargs)
        self._guard.raise_pending()
        if clock is not None:
            clock.lap_library()
        if self._has_return:
            return _own_copies(compiled.convert_return_values())
        return None

    def _marshal(self, values: list) -> None:
        """All arguments marshalled through DaCe (validated first); remembered for the next calls."""
        keywords = self._as_keywords(values)
        self._validate(keywords)
        compiled = self._compiled
        with dace_settings():
            compiled._lastargs = compiled.construct_arguments(**keywords)
        self._last_values = values  # keeps the marshalled objects alive
        self._containers = ContainerWatch(values)
        self._repointer = Repointer(values, self._runtime_argnames + self._closure_names, compiled,
                                    self._check_scalar_argument)
        self.marshal_count += 1

    def _check_scalar_argument(self, name: str, value: Any) -> None:
        desc = self._descriptors.get(name)
        if desc is not None and type(desc).__name__ == "Scalar":
            _check_scalar(name, value, desc.dtype.as_numpy_dtype())

    def record_call(self, args: tuple, kwargs: dict, recorder: "CallRecorder") -> Any:
        """One call, recorded by ``recorder`` (:mod:`orchestra.observe.replay.record`); computes what ``__call__`` does.

        Marshals afresh with each callback wrapped by the recorder (around the
        clock's timing wrapper, if any), and forgets that marshalling
        afterwards: the next call marshals again with the plain callbacks.
        """
        self._check_shared()
        values = self._current_values(args, kwargs)
        keywords = self._as_keywords(values)
        self._validate(keywords)
        for name in self._callbacks:
            keywords[name] = recorder.wrap(name, self._callbacks[name])
        keywords.update({name: keywords[target] for name, target in self._callback_mapping.items()})
        compiled = self._compiled
        try:
            with dace_settings():
                compiled._lastargs = compiled.construct_arguments(**keywords)
            self._last_values = None  # the next call marshals with the plain callbacks
            self.marshal_count += 1
            returned = getattr(compiled, "_retarray_shapes", ())
            keywords.update((desc[0], array) for desc, array in zip(returned, compiled._return_arrays))
            callbacks = set(self._callbacks) | set(self._callback_mapping)
            recorder.before(keywords, compiled.sdfg.arglist(), callbacks)
            clock = self._clock
            if clock is not None:
                clock.lap("marshal")
            start = time.perf_counter()
            compiled.fast_call(*compiled._lastargs)
            seconds = time.perf_counter() - start
            self._guard.raise_pending()
            if clock is not None:
                clock.lap_library()
            recorder.after(keywords)
            recorder.finish(self.origin, seconds)
        except BaseException:
            recorder.abandon()
            raise
        if self._has_return:
            return _own_copies(compiled.convert_return_values())
        return None

    @property
    def has_callbacks(self) -> bool:
        """Whether the program calls back into Python (which may change what the model holds)."""
        return bool(self._callbacks)

    def closure_replaced(self, at_most: int) -> Optional[str]:
        """An array read through ``self`` that is not the one the last call marshalled (None: none found).

        Compares ``at_most`` arrays, the next ones in turn on each call
        (reading an array again costs about 0.1-0.2 us; the dycore reads 57).
        """
        last = self._last_values
        getters = self._closure_getters
        if last is None or not getters:
            return None
        start = len(last) - len(getters)
        for _ in range(min(at_most, len(getters))):
            index = self._replaced_cursor
            self._replaced_cursor = (index + 1) % len(getters)
            if getters[index]() is not last[start + index]:
                name = self._closure_names[index]
                return self._shown.get(name, name)
        if self._containers and self._containers.moved(last):
            return "the data of an array container the program reads"
        return None

    def raw_call(self) -> None:
        """Call the library with the last marshalled arguments (benchmarks only)."""
        self._compiled.fast_call(*self._compiled._lastargs)

    @property
    def compiled_sdfg(self) -> Any:
        """The loaded library (DaCe's CompiledSDFG) this caller calls."""
        return self._compiled

    @compiled_sdfg.setter
    def compiled_sdfg(self, compiled: Any) -> None:  # the kernel profile ends a library (orchestra.observe.kernel_profile)
        self._compiled = compiled


def _own_copies(returned: Any) -> Any:
    """The caller's own copies of what the library returned.

    DaCe hands back the same return arrays on every call (they are part of
    the marshalled arguments), so a value kept from one call changed with the
    next (a probe: ``r = model(...)``, then ``model(...)`` again, and ``r``
    held the second call's value; ``Python`` mode's ``r`` keeps its own).
    """
    if isinstance(returned, tuple):
        return tuple(_own_copies(value) for value in returned)
    copy = getattr(returned, "copy", None)
    return copy() if callable(copy) else returned
