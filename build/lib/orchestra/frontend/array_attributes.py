"""Attributes of a run-time array argument that DaCe would read as the whole array: refused at parse time.

DaCe resolves ``q.attr`` of an array argument through its own replacements
(``q.T``, ``q.size``, ``q.copy()``...), else as an attribute of its data
descriptor (``q.shape``, ``q.dtype``), else, silently, as ``q`` itself. So
with ``q`` an NDSL ``Quantity`` passed as an argument, ``q.field[:] = 1.0``
(the compute domain in Python) wrote the halo too, and ``q.extent[0]``,
``q.ndim`` or ``q.nbytes`` became the array; ``q.strides`` is the
descriptor's, in elements (NumPy's are in bytes). A probe of such code found
the first one silently different from ``Python`` mode.

:func:`refuse_array_attributes` refuses, in a function DaCe is about to
parse, every attribute of a run-time array argument other than
:data:`ATTRIBUTES` (same meaning in both modes; ``data`` is a container's
whole array, as DaCe reads it) and the array methods DaCe implements, called
(:data:`METHODS`), naming the line and the fix: pass the part meant (``q.field``
at the call, or a stencil with that origin and domain), or make the object a
compile-time argument (``dace_compiletime_args``), whose attributes are read
in Python.
"""

from __future__ import annotations

import ast
from typing import Iterable

from orchestra.errors import BuildError

#: attributes with NumPy's meaning in the compiled program
ATTRIBUTES = frozenset({"shape", "dtype", "data", "T", "flat", "real", "imag", "size"})
#: array methods DaCe implements with NumPy's meaning (when called)
METHODS = frozenset({"all", "any", "argmax", "argmin", "astype", "conj", "copy", "fill", "flatten", "max", "mean",
                     "min", "prod", "ravel", "reshape", "sum", "transpose", "view"})


def refuse_array_attributes(function: ast.FunctionDef, filename: str, arrays: Iterable[str]) -> None:
    """Raise :class:`~orchestra.errors.BuildError` at the first attribute of an array argument DaCe misreads."""
    arrays = set(arrays) - {arg.arg for arg in _rebound(function)}
    called = {id(node.func) for node in ast.walk(function) if isinstance(node, ast.Call)}
    for node in ast.walk(function):
        if not (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in arrays):
            continue
        if node.attr in ATTRIBUTES or (node.attr in METHODS and id(node) in called):
            continue
        raise BuildError(
            f"{filename}:{node.lineno}: `{ast.unparse(node)}`: {node.value.id} is a run-time array argument, and "
            f"the compiled program would read `.{node.attr}` as the whole array (DaCe knows only NumPy's array "
            "attributes: shape, dtype, T, size, real, imag, flat, data); pass the part meant as the argument "
            f"(`{node.value.id}.{node.attr}` at the call), or make {node.value.id} a compile-time argument "
            "(dace_compiletime_args), whose attributes are read in Python"
        )


def _rebound(function: ast.FunctionDef) -> list[ast.arg]:
    """Parameters the function assigns to (then no longer the argument)."""
    stored = {child.id for child in ast.walk(function) if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store)}
    return [arg for arg in function.args.args + function.args.kwonlyargs if arg.arg in stored]
