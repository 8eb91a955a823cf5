"""How a call's arguments reach an orchestrated program.

The contract (``docs/orchestration.md``, "What a call computes"): every call
of an orchestrated program computes what ``Python`` mode computes with the
same arguments, or raises one error naming the argument and what differs.
Two mechanisms keep it:

- **Defaults are never folded silently.** :class:`CallBinder` binds every
  call to the function's parameters and makes omitted defaults explicit, so
  the program is parsed with every parameter given: a scalar default is a
  run-time argument like any other, and ``model()`` then ``model(3.0)``
  computes with 2.0 and then 3.0.
- **Compile-time values select a program.** Arguments folded in at parse time
  (``dace_compiletime_args``, :func:`orchestra.compiletime_type` objects,
  and whatever DaCe cannot pass at run time: ``None``, strings, objects) are
  part of the cache key; :func:`folded_identity` describes the values a call
  gives them, and a call whose folded values differ from those of every
  program obtained so far obtains another one (built in ``BuildAndRun``,
  refused with the differing input named in ``Run``).

>>> def step(q, factor=2.0, *, flag=False): ...
>>> binder = CallBinder(step, is_method=False)
>>> binder.complete((1,), {})
((1, 2.0), {'flag': False})
>>> binder.complete((1, 3.0), {"flag": True})
((1, 3.0), {'flag': True})
"""

from __future__ import annotations

import enum
import inspect
import logging
import numbers
import types
from typing import Any, Callable, Collection, Optional

import numpy as np

from orchestra.key.array_like import array_layout, first_overlap, is_array_like
from orchestra.errors import ConfigurationError

_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
_VARIADIC = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)


#: classes declared with :func:`compiletime_type`
_COMPILETIME_TYPES: set[type] = set()


def compiletime_type(cls: type) -> type:
    """Class decorator: arguments of this type are folded in at parse time.

    Use it for objects an orchestrated method receives as an argument and
    only reads arrays and constants from (a model state, a grid).
    """
    _COMPILETIME_TYPES.add(cls)
    return cls


def is_compiletime_annotation(annotation: Any) -> bool:
    return isinstance(annotation, type) and any(issubclass(annotation, t) for t in _COMPILETIME_TYPES)


def is_folded_object(value: Any) -> bool:
    """An argument folded in at parse time: a declared compile-time type, or an object DaCe cannot type.

    A model state or grid passed as an argument (``model(state)``, the code
    reading ``state.h``) has no DaCe data descriptor: DaCe refused the whole
    program ("Could not create a DaCe data descriptor"). Folded in like a
    :func:`compiletime_type` object, its arrays are read on every call and
    another object selects another program (:func:`orchestra.calls.arguments.folded_identity`).
    """
    if type(value) in _COMPILETIME_TYPES or any(isinstance(value, t) for t in _COMPILETIME_TYPES):
        return True
    if value is None or isinstance(value, (numbers.Number, str, bytes, enum.Enum, np.generic)):
        return False
    if is_array_like(value) or callable(value):  # an array or array container: a run-time argument
        return False
    from dace import data

    try:
        data.create_datadescriptor(value)
    except (TypeError, ValueError):
        return True
    return False


def objects_given(function: Callable, is_method: bool, constant_args: Optional[dict]) -> set[str]:
    """Parameters a caller's parse gives objects DaCe cannot type; each is folded in, as at the top.

    ``self.advection(state, dt)`` inside another orchestrated program: the
    caller's parse knows ``state`` (a value DaCe evaluated, by position or
    name), the component was created without seeing it. Each such argument
    becomes compile-time, like ``dace_compiletime_args``, at any depth of the
    call tree.
    """
    if not constant_args:
        return set()
    parameters = list(inspect.signature(function).parameters)[1 if is_method else 0:]
    found = set()
    for position_or_name, value in constant_args.items():
        if isinstance(position_or_name, int) and position_or_name >= len(parameters):
            continue
        name = parameters[position_or_name] if isinstance(position_or_name, int) else position_or_name
        if name in parameters and is_folded_object(value):
            found.add(name)
    return found


class CallBinder:
    """Binds calls of ``function`` (without ``self`` for a method), defaults made explicit."""

    def __init__(self, function: Callable, is_method: bool, label: str = "") -> None:
        signature = inspect.signature(function)
        parameters = list(signature.parameters.values())[1 if is_method else 0 :]
        variadic = [("*" if p.kind is inspect.Parameter.VAR_POSITIONAL else "**") + p.name
                    for p in parameters if p.kind in _VARIADIC]
        if variadic:
            raise ConfigurationError(
                f"{label or function.__qualname__} takes {', '.join(variadic)}: an orchestrated "
                "program needs every parameter named (DaCe makes one program argument of each); "
                "list the parameters explicitly, or orchestrate a method that does"
            )
        self._signature = signature.replace(parameters=parameters)
        self._names = [p.name for p in parameters]
        self._defaults = {p.name: p.default for p in parameters if p.default is not inspect.Parameter.empty}
        self._count = len(parameters)
        self._all_positional = all(p.kind in _POSITIONAL for p in parameters)
        #: parameters annotated ``float``: an integer given there is the float Python mode computes with
        self._floats = {index: p.name for index, p in enumerate(parameters) if _declares_float(p.annotation)}
        self._label = label or function.__qualname__

    @property
    def parameter_names(self) -> list[str]:
        """The parameters a call binds, in order (``self`` not among them)."""
        return list(self._names)

    def complete(self, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        """``args``/``kwargs`` with every parameter given; a bad call raises Python's own TypeError.

        An integer given to a parameter annotated ``float`` becomes that float
        (:func:`settle_float`), so ``model(state, 60)`` runs the program of
        ``model(state, 60.0)``.
        """
        args, kwargs = self._bind(args, kwargs)
        if self._floats:
            args = tuple(settle_float(value, self._floats[index], self._label) if index in self._floats else value
                         for index, value in enumerate(args))
            if kwargs:
                names = set(self._floats.values())
                kwargs = {name: settle_float(value, name, self._label) if name in names else value
                          for name, value in kwargs.items()}
        return args, kwargs

    def _bind(self, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        if self._all_positional and len(args) <= self._count:
            if not kwargs and len(args) == self._count:
                return args, kwargs  # the common call: nothing to bind
            values, used = list(args), 0
            for name in self._names[len(args) :]:
                if name in kwargs:
                    values.append(kwargs[name])
                    used += 1
                elif name in self._defaults:
                    values.append(self._defaults[name])
                else:
                    break  # a missing argument: Python's message below
            if used == len(kwargs) and len(values) == self._count:
                return tuple(values), {}
        bound = self._signature.bind(*args, **kwargs)  # keyword-only parameters, or a bad call
        bound.apply_defaults()
        return bound.args, bound.kwargs


#: annotations that declare a Python float (also as strings, under ``from __future__ import annotations``)
_FLOAT_ANNOTATIONS = (float, np.float64, "float", "np.float64", "numpy.float64")


def _declares_float(annotation: Any) -> bool:
    return any(annotation is kind or annotation == kind for kind in _FLOAT_ANNOTATIONS)


def settle_float(value: Any, name: str, label: str) -> Any:
    """``value`` given to a parameter annotated ``float``: an integer as the float Python mode computes with.

    Python computes ``60 * x`` and ``60 / n`` as ``60.0 * x`` and ``60.0 / n``,
    so an integer given where ``float`` is declared is that float, and the
    call runs the same program as with ``60.0`` (a second build, or a ``Run``
    job's miss, otherwise). (Passed on to a stencil's float parameter as it
    is, an ``int`` is refused by gt4py in ``Python`` mode; the compiled
    program passes the float.) An integer
    with no exact float (beyond 2**53) is refused: converting it could change
    a result. ``bool`` and everything that is not an integer pass unchanged.

    >>> settle_float(60, "dt", "Model.__call__")
    60.0
    """
    if type(value) is float or not isinstance(value, (int, np.integer)) or isinstance(value, (bool, np.bool_)):
        return value
    try:
        converted = float(value)
    except OverflowError:
        converted = float("inf")
    if converted in (float("inf"), float("-inf")) or int(converted) != int(value):
        raise ConfigurationError(
            f"{label}: argument {name} is declared float and was given the integer {value}, which no float "
            f"holds exactly (a float64 holds integers up to 2**53): pass the float you mean, e.g. {converted!r}")
    return converted


def folded_identity(constant: frozenset, argnames: list[str], args: tuple, kwargs: dict) -> tuple:
    """What this call gives the arguments a program folds in, as a hashable value.

    Two calls with equal identities can share one program. ``constant``
    (compile-time arguments) compare by value; arrays and numbers are
    run-time arguments: arrays and array containers
    (:func:`orchestra.key.array_like.is_array_like`) compare as "an array" (the
    fast path checks their layout), numbers by type, since the program's scalar takes the type
    of the value it was built with (a float32 program would round a float64
    value that ``Python`` mode passes on to the stencil exactly). Anything else
    DaCe folds in when it parses (``None``, a string, an object), so it
    compares by value, or by identity for objects.
    """
    if kwargs or len(args) != len(argnames):
        given = dict(zip(argnames, args))
        given.update(kwargs)
        args = tuple(given.get(name) for name in argnames)
    if not constant:
        return tuple(map(_kind, args))
    return tuple(_identity(value) if name in constant else _kind(value) for name, value in zip(argnames, args))


def array_layouts(args: tuple, kwargs: dict) -> tuple:
    """Shape, dtype and strides of every array argument, in order (what a program's arrays are built for)."""
    layouts = []
    for value in (*args, *kwargs.values()):
        layout = array_layout(value) if is_array_like(value) else None
        layouts.append(None if layout is None else (layout.shape, layout.dtype.str, layout.strides))
    return tuple(layouts)


def arguments_share_memory(args: tuple, kwargs: dict) -> bool:
    """Whether two array arguments of a call overlap in memory (the same array given twice, or two views of one)."""
    values = {str(position): value for position, value in enumerate((*args, *kwargs.values())) if is_array_like(value)}
    return first_overlap(values) is not None


_PYTHON_NUMBERS = {kind: ("number", kind.__name__) for kind in (bool, int, float, complex)}


def _kind(value: Any) -> Any:
    kind = _PYTHON_NUMBERS.get(type(value))
    if kind is not None:
        return kind
    if value is None:
        return _identity(value)
    if isinstance(value, np.ndarray):
        return "array"
    if isinstance(value, np.generic):
        return ("number", value.dtype.str)
    if is_array_like(value):  # containers (a Quantity) too: the fast path checks the layout
        return "array"
    if isinstance(value, numbers.Number):
        return ("number", type(value).__name__)
    return _identity(value)


def _identity(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
        return (type(value).__name__, value)
    if isinstance(value, np.generic):
        return (value.dtype.str, value.item())
    if isinstance(value, enum.Enum):
        return (type(value).__qualname__, value.name)
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, tuple(_identity(item) for item in value))
    return ("object", id(value))


def compiletime_values(program: Any, args: tuple, kwargs: dict) -> dict[str, Any]:
    """This call's compile-time arguments by name (where folded expressions like ``state.dt`` start)."""
    given = dict(zip(program.argnames, args)) | dict(kwargs)
    return {name: given[name] for name in program.constant_args if name in given}


def compiletime_parameters(label: str, requested: Collection[str], parameters: list[str]) -> set[str]:
    """The ``dace_compiletime_args`` that are parameters of the method; the others ignored, as NDSL does.

    FV3 code gives one list to several methods of different signatures
    (``["state", "tag"]`` to checkpoint methods without ``tag``); the names a
    method lacks are logged once at ``info`` so that a typo stays visible.
    """
    unknown = set(requested).difference(parameters)
    if unknown:
        logging.getLogger("orchestra").info(
            "%s: dace_compiletime_args %s are not parameters of it (parameters: %s); ignored",
            label, sorted(unknown), parameters,
        )
    return set(requested).intersection(parameters)


def with_compiletime_annotations(function: Callable, names: set[str]) -> Callable:
    """A copy of ``function`` for DaCe: ``names`` annotated ``dace.compiletime``, other hints dropped.

    DaCe turns parameter type hints into data descriptors (``q: Any`` would
    become a scalar, ``-> None`` a scalar return value); model code's hints are for humans and
    type checkers, so the program's descriptors always come from the actual arguments.
    """
    import dace

    copy = types.FunctionType(
        function.__code__, function.__globals__, function.__name__, function.__defaults__, function.__closure__
    )
    copy.__kwdefaults__ = function.__kwdefaults__
    copy.__qualname__ = function.__qualname__
    copy.__module__ = function.__module__
    copy.__doc__ = function.__doc__
    copy.__annotations__ = {name: dace.compiletime for name in names}
    return copy
