"""Everything that changes an orchestrated program's generated code.

:func:`collect_build_inputs` returns a plain, canonical dict; its fingerprint
is the cache key and the dict itself is stored in the build's manifest, so a
build that cannot be used says *which* input differs. The inputs are found
without parsing the program: DaCe's closure resolver lists what the method
reads through ``self`` (arrays, folded scalars, callbacks, nested stencils
and orchestrated components).
"""

from __future__ import annotations

import hashlib
import inspect
import numbers
import re
from importlib import metadata
from typing import Any, Optional

import numpy as np

from orchestra.toolchain import GT4PY_EXTRA_FLAGS, compiler_identity, frozen_settings, host_args, host_isa


_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def source_digest(function: Any) -> str:
    """sha256 of a function's source (its code object's bytes if the source is gone)."""
    function = inspect.unwrap(function)
    try:
        return _sha(inspect.getsource(function))
    except (OSError, TypeError):
        code = getattr(function, "__code__", None)
        return _sha(repr(code.co_code) + repr(code.co_consts)) if code else "unknown"


def describe_array(value: Any) -> dict[str, Any]:
    """dtype, shape, strides (in elements) and storage of an array argument."""
    itemsize = value.dtype.itemsize
    return {
        "dtype": np.dtype(value.dtype).str,
        "shape": [int(n) for n in value.shape],
        "strides": [int(s) // itemsize for s in value.strides],
        "storage": "gpu" if hasattr(value, "__cuda_array_interface__") else "cpu",
    }


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
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return {"array": describe_array(value)}
    if hasattr(value, "value") and type(value).__class__.__name__ == "EnumMeta":
        return f"{type(value).__qualname__}.{value.name}"
    # An object folded in as a whole: its type is what the code depends on.
    return f"<{type(value).__module__}.{type(value).__qualname__}>"


def _is_array(value: Any) -> bool:
    return hasattr(value, "shape") and hasattr(value, "dtype") and hasattr(value, "strides")


def nested_identity(obj: Any) -> dict[str, Any]:
    """Identity of an SDFG-convertible called from the program (stencil or component)."""
    if hasattr(obj, "build_identity"):
        return obj.build_identity()
    gt_id = getattr(obj, "_gt_id_", None)
    if gt_id is not None:  # a plain gt4py stencil object
        return {"stencil": type(obj).__name__, "gt_id": str(gt_id), "backend": getattr(obj, "backend", "")}
    function = getattr(obj, "f", None)
    if function is not None:  # a DaceProgram
        return {"function": f"{function.__module__}.{function.__qualname__}", "source": source_digest(function)}
    return {"object": f"{type(obj).__module__}.{type(obj).__qualname__}"}


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
    given = dict(zip(program.argnames, args))
    given.update(kwargs)

    arguments, compiletime = {}, {}
    for name, value in sorted(given.items()):
        if name in program.constant_args:
            compiletime[name] = describe_value(value)
        elif _is_array(value):
            arguments[name] = describe_array(value)
        else:
            arguments[name] = {"scalar": type(value).__name__}

    closure_arrays = {}
    for name, (expression, _desc, getter, _) in sorted(closure.closure_arrays.items()):
        value = getter()
        closure_arrays[expression] = describe_array(value) if _is_array(value) else describe_value(value)

    nested: dict[str, Any] = {}
    for call, obj in closure.closure_sdfgs.values():
        name, identity = _callee(call), nested_identity(obj)
        suffix = 1
        while name in nested and nested[name] != identity:  # same text, other code: keep both
            suffix += 1
            name = f"{_callee(call)}#{suffix}"
        nested.setdefault(name, identity)

    inputs: dict[str, Any] = {
        "program": program.name,
        "source": {f"{function.__module__}.{function.__qualname__}": source_digest(function)},
        "arguments": arguments,
        "compiletime_args": compiletime,
        "closure_arrays": closure_arrays,
        "scalars": {name: describe_value(value) for name, value in sorted(closure.closure_constants.items())},
        "callbacks": sorted(expression for expression, *_ in closure.callbacks.values()),
        "nested": {call: nested[call] for call in sorted(nested)},
        "code_path": code_path,
        "backend": backend,
        "pipeline": pipeline,
        "toolchain": {
            "dace_settings": {key: describe_value(value) for key, value in frozen_settings().items()},
            "cpu_args": list(host_args(backend)),
            "gt4py_flags": list(GT4PY_EXTRA_FLAGS),
            "compiler": compiler_identity(),
            "host_isa": host_isa() if "-march=native" in host_args(backend) else None,
        },
        "versions": {name: _version(name) for name in ("orchestra", "dace", "gt4py")},
    }
    # Sources of nested orchestrated components live under "source" only, so a
    # changed method is reported once.
    for identity in nested.values():
        if "function" in identity and "source" in identity:
            inputs["source"][identity["function"]] = identity.pop("source")
    return inputs


def _callee(call: str) -> str:
    """The callee of a call expression DaCe recorded, without its arguments or addresses.

    ``"FrozenStencil(update, ...)(q, 2.0)"`` becomes ``"FrozenStencil(update, ...)"``:
    folded argument values are already listed under ``scalars``.
    """
    call = _ADDRESS.sub("", call)
    if not call.endswith(")"):
        return call
    depth = 0
    for index in range(len(call) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(call[index], 0)
        if depth == 0:
            return call[:index] or call
    return call


def _version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "unknown"
