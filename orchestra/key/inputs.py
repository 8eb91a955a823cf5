"""Everything that changes an orchestrated program's generated code.

:func:`collect_build_inputs` returns a plain, canonical dict; its fingerprint
is the cache key and the dict itself is stored in the build's manifest, so a
build that cannot be used says *which* input differs. The inputs are found
without parsing the program: DaCe's closure resolver lists what the method
reads through ``self`` (arrays, folded scalars, callbacks, nested stencils
and orchestrated components), and what every callee reads and calls, at every
depth of the call tree (:mod:`orchestra.key.call_tree`).
"""

from __future__ import annotations

import functools
import hashlib
import numbers
from importlib import metadata
from pathlib import Path
from typing import Any, Optional

import numpy as np

from orchestra.key.array_like import ArrayLayout, array_layout, is_scratch
from orchestra.key.call_tree import (
    describe_call_tree,
    describe_callees,
    function_name,
    functions_in_tree,
    referenced_functions,
    source_digest,
)
from orchestra.toolchain import GT4PY_EXTRA_FLAGS, compiler_identity, frozen_settings, host_args, host_isa



def describe_array(value: Any) -> dict[str, Any]:
    """dtype, shape, strides (in elements) and storage of an array-like (:func:`orchestra.key.array_like.array_layout`).

    Raises TypeError for a value that is not an array-like.
    """
    layout = array_layout(value)
    if layout is None:
        raise TypeError(f"{type(value).__name__} is not an array (no array interface or DaCe descriptor)")
    return _described(value, layout)


def _described(value: Any, layout: ArrayLayout) -> dict[str, Any]:
    """The layout's description; ``scratch: true`` added for a scratch array (another program: a transient)."""
    described = layout.describe()
    if is_scratch(value):
        described["scratch"] = True
    return described


def describe_value(value: Any) -> Any:
    """Canonical description of a value folded in at parse time."""
    if isinstance(value, np.generic) and value.dtype not in (np.float64, np.int64, np.bool_):
        return {"dtype": value.dtype.str, "value": value.item()}  # a float32 folds in differently
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (numbers.Integral,)):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    if isinstance(value, str) or value is None:
        return value
    if isinstance(value, (tuple, list)):
        return [describe_value(item) for item in value]
    layout = array_layout(value)
    if layout is not None:
        return {"array": _described(value, layout)}
    if hasattr(value, "value") and type(value).__class__.__name__ == "EnumMeta":
        return f"{type(value).__qualname__}.{value.name}"
    # An object folded in as a whole: its type is what the code depends on.
    return f"<{type(value).__module__}.{type(value).__qualname__}>"


def collect_build_inputs(
    program: Any,
    function: Any,
    args: tuple,
    kwargs: dict,
    *,
    backend: str,
    pipeline: dict[str, Any],
    code_path: Optional[dict[str, Any]] = None,
) -> dict[str, Any]:
    """The build inputs of ``program`` (a DaceProgram) called with ``args``/``kwargs``.

    Runs DaCe's closure resolution (cheap, no parse) as a side effect.
    """
    program._load_sdfg(None, *args, **kwargs)
    closure = program.resolver
    arguments, compiletime = _describe_arguments(program, args, kwargs)
    nested = describe_callees(closure)
    inputs: dict[str, Any] = {
        "program": program.name,
        "source": {function_name(function): source_digest(function)},
        "arguments": arguments,
        "compiletime_args": compiletime,
        "closure_arrays": describe_closure_arrays(closure),
        "scalars": {name: describe_value(value) for name, value in sorted(closure.closure_constants.items())},
        "callbacks": sorted(expression for expression, *_ in closure.callbacks.values()),
        "nested": nested,
        "call_tree": describe_call_tree(closure, describe_value),
        "code_path": code_path,
        "backend": backend,
        "pipeline": pipeline,
        "toolchain": _toolchain(backend),
        "versions": {**{name: _version(name) for name in ("orchestra", "dace", "gt4py")},
                     "orchestra_sources": orchestra_sources_digest()},
    }
    _gather_sources(inputs, [function, *functions_in_tree(closure)])
    return inputs


def _describe_arguments(program: Any, args: tuple, kwargs: dict) -> tuple[dict, dict]:
    """Run-time arguments (array-like layouts, scalar types) and compile-time ones (values)."""
    given = dict(zip(program.argnames, args))
    given.update(kwargs)
    arguments, compiletime = {}, {}
    for name, value in sorted(given.items()):
        if name in program.constant_args:
            compiletime[name] = describe_value(value)
        elif (layout := array_layout(value)) is not None:
            arguments[name] = _described(value, layout)
        else:
            arguments[name] = {"scalar": type(value).__name__}
    return arguments, compiletime


def describe_closure_arrays(closure: Any) -> dict[str, Any]:
    """The arrays a closure reads (through ``self``, at any depth), by expression.

    An array-like (an array, or a container such as a ``Quantity``) is
    described by its layout; anything else DaCe took as an array, as a value.
    """
    arrays = {}
    for _name, (expression, _desc, getter, _) in sorted(closure.closure_arrays.items()):
        value = getter()
        layout = array_layout(value)
        arrays[expression] = _described(value, layout) if layout is not None else describe_value(value)
    return arrays


def _toolchain(backend: str) -> dict[str, Any]:
    return {
        "dace_settings": {key: describe_value(value) for key, value in frozen_settings().items()},
        "cpu_args": list(host_args(backend)),
        "gt4py_flags": list(GT4PY_EXTRA_FLAGS),
        "compiler": compiler_identity(),
        "host_isa": host_isa() if "-march=native" in host_args(backend) else None,
    }


def _gather_sources(inputs: dict[str, Any], functions: list) -> None:
    """Move callee sources under ``source`` (by function: reported once, whatever the depth); add globals' sources."""
    callees = [*inputs["nested"].values(), *(c for node in inputs["call_tree"].values() for c in node["callees"].values())]
    for identity in callees:
        if "function" in identity and "source" in identity:
            inputs["source"][identity["function"]] = identity.pop("source")
    for name, digest in referenced_functions(functions).items():
        inputs["source"].setdefault(name, digest)


def _version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "unknown"


@functools.cache
def orchestra_sources_digest() -> str:
    """sha256 over orchestra's own code (``.py`` and ``.h``): a changed pass is another program.

    A released version number does not change while orchestra is developed
    (or patched on a cluster); its sources do. Read once per process.
    """
    package = Path(__file__).resolve().parents[1]  # orchestra/, not key/
    digest = hashlib.sha256()
    for path in sorted(p for p in package.rglob("*") if p.suffix in (".py", ".h")):
        digest.update(str(path.relative_to(package)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def array_paths(closure: Any) -> dict[str, str]:
    """Data name -> access path of every array a resolved closure reads through an object, at any depth.

    DaCe records a nested component's array in its caller's closure under
    the component's data name (``__g_state_u``); the path is the one the
    component's own closure gives it (``state.u``).
    """
    if closure is None:
        return {}
    nested: dict[str, str] = {}
    for _call, child in getattr(closure, "nested_closures", ()):
        nested.update(array_paths(child))
    paths = {}
    for name, (expression, _desc, _read, from_nested) in closure.closure_arrays.items():
        expression = str(expression)
        paths[name] = nested.get(expression, expression) if from_nested else expression
    return paths
