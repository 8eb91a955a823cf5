"""The fast call path of a loaded orchestrated program.

Marshalling arguments for a ``CompiledSDFG`` (descriptors, callback
trampolines) costs far more than a small model step. A :class:`FastCaller`
marshals once and reuses the marshalled argument vector while every argument
keeps its *runtime identity*: for arrays the data pointer, shape, strides and
dtype; for scalars the value; for callbacks the bound object and function.
Reallocating an array (or swapping a state attribute) changes the identity
and triggers a fresh, validated marshalling, never a stale pointer.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from orchestra.errors import StaleArgumentsError
from orchestra.toolchain import dace_settings


def _runtime_identity(value: Any) -> Any:
    interface = getattr(value, "__array_interface__", None)
    if interface is None:
        interface = getattr(value, "__cuda_array_interface__", None)
    if interface is not None:
        return (interface["data"][0], interface["shape"], interface["strides"], interface["typestr"])
    self_obj = getattr(value, "__self__", None)
    if self_obj is not None and hasattr(value, "__func__"):
        return (id(self_obj), id(value.__func__))
    if isinstance(value, (int, float, bool, complex, str, np.generic)):
        return (type(value), value)
    return ("id", id(value))


class FastCaller:
    """Calls a loaded program with the arguments of the orchestrated method.

    Args:
        program: the DaceProgram, after closure resolution (knows how to read
            arrays and callbacks through ``self``).
        compiled_sdfg: the loaded library.
    """

    def __init__(self, program: Any, compiled_sdfg: Any) -> None:
        self._compiled = compiled_sdfg
        sdfg = compiled_sdfg.sdfg
        self._signature = list(sdfg.arglist().keys())
        self._argnames = [name for name in program.argnames if name not in program.constant_args]
        self._constant_args = set(program.constant_args)
        self._all_argnames = list(program.argnames)
        self._defaults = {k: v for k, v in program.default_args.items() if k not in self._constant_args}
        self._closure_getters: dict[str, Callable[[], Any]] = dict(program.closure_arg_mapping)
        resolver = program.resolver
        self._callbacks = {name: entry[1] for name, entry in resolver.callbacks.items()} if resolver else {}
        self._callback_mapping = dict(sdfg.callback_mapping)
        self._descriptors = {name: sdfg.arrays[name] for name in self._signature if name in sdfg.arrays}
        self._has_return = any(name.startswith("__return") for name in sdfg.arrays)
        self._last_identity: Any = None
        self.marshal_count = 0

    def arguments(self, args: tuple, kwargs: dict) -> dict[str, Any]:
        """The full keyword arguments of the compiled program for this call."""
        values = dict(self._defaults)
        for name, value in zip(self._all_argnames, args):
            if name not in self._constant_args:
                values[name] = value
        for name, value in kwargs.items():
            if name not in self._constant_args:
                values[name] = value
        for name, getter in self._closure_getters.items():
            values[name] = getter()
        values.update(self._callbacks)
        for name, target in self._callback_mapping.items():
            values[name] = values[target]
        return values

    def _validate(self, values: dict[str, Any]) -> None:
        for name, desc in self._descriptors.items():
            value = values.get(name)
            if value is None or not hasattr(desc, "shape") or not hasattr(value, "shape"):
                continue
            expected = tuple(int(n) for n in desc.shape)
            if tuple(value.shape) != expected or value.dtype != desc.dtype.as_numpy_dtype():
                raise StaleArgumentsError(
                    f"argument {name!r} has shape {tuple(value.shape)} and dtype {value.dtype}, but the "
                    f"program was built for shape {expected} and dtype {desc.dtype.as_numpy_dtype()}; "
                    "arrays may be reallocated between calls but not resized: rebuild for the new sizes"
                )
            itemsize = value.dtype.itemsize
            strides = tuple(s // itemsize for s in value.strides)
            expected_strides = tuple(int(s) for s in desc.strides)
            if len(expected) > 0 and strides != expected_strides:
                raise StaleArgumentsError(
                    f"argument {name!r} has strides {strides} (elements) but the program was built for "
                    f"{expected_strides}: allocate it with the same layout (same gt4py backend)"
                )

    def __call__(self, args: tuple, kwargs: dict) -> Any:
        values = self.arguments(args, kwargs)
        identity = tuple(_runtime_identity(values[name]) for name in self._signature if name in values)
        compiled = self._compiled
        if identity != self._last_identity or compiled._lastargs is None:
            self._validate(values)
            with dace_settings():
                compiled._lastargs = compiled.construct_arguments(**values)
            self._last_identity = identity
            self.marshal_count += 1
        compiled.fast_call(*compiled._lastargs)
        if self._has_return:
            return compiled.convert_return_values()
        return None

    def raw_call(self) -> None:
        """Call the library with the last marshalled arguments (benchmarks only)."""
        self._compiled.fast_call(*self._compiled._lastargs)
