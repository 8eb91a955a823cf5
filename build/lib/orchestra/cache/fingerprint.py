"""Cache keys: a deterministic content fingerprint of a build's inputs.

A build's inputs (sources, stencil identities, folded-in scalars, options,
versions, ...) are first brought to a *canonical form*: plain JSON values
whose text does not depend on the process, the machine, dict insertion order
or object identity. The key is the sha256 of that text, salted with
:data:`CACHE_FORMAT_VERSION` so a change of format invalidates old entries.

>>> key = fingerprint({"backend": "dace:cpu", "domain": (24, 24, 4)})
>>> key == fingerprint({"domain": (24, 24, 4), "backend": "dace:cpu"})
True
>>> key == fingerprint({"backend": "dace:cpu", "domain": (24, 24, 5)})
False

Canonical forms (what :func:`canonical` returns):

* ``None``, ``bool``, ``str``, ``int`` stay as they are; finite floats stay
  floats (JSON writes their shortest exact ``repr``: ``1.0`` and ``1`` and
  ``1.0000000001`` are three different inputs); NaN and infinities become
  ``{"$float": "nan" | "inf" | "-inf"}``.
* lists and tuples become lists (order matters); sets and frozensets become
  ``{"$set": [...]}`` sorted by canonical text; dicts keep only ``str`` keys and
  are sorted.
* numpy: ``float64``, ``int64`` and ``bool_`` scalars become the Python value
  (DaCe types those exactly like Python's own); other scalars become
  ``{"$numpy": "<dtype name>", "value": ...}``; dtypes and scalar types become
  ``{"$dtype": "<f8"}``.
* enum members: ``{"$enum": "module.Qualname", "name": ..., "value": ...}``.
* dataclass instances: ``{"$dataclass": "module.Qualname", "fields": {...}}``;
  a field declared with ``metadata={"cache_key": False}`` is left out.
* an object with a ``__fingerprint__()`` method:
  ``{"$object": "module.Qualname", "value": canonical(obj.__fingerprint__())}``.
* bytes: ``{"$bytes": "<hex>"}``.

Anything else (functions, arbitrary objects, arrays) raises :class:`TypeError`
naming its path in the inputs: its identity would leak into the key. Dict keys
starting with ``$`` are reserved for the tags above; a canonical form is its
own canonical form, so ``fingerprint(canonical(x)) == fingerprint(x)``.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
import math
from typing import Any, Mapping

import numpy as np

CACHE_FORMAT_VERSION = "orchestra-cache-1"
"""Salt of every key; bump it when the canonical form or the entry layout changes."""

KEY_METADATA = "cache_key"
"""Field metadata flag: ``field(metadata={KEY_METADATA: False})`` keeps a field out of keys."""

# Tags of the canonical form and the exact key sets of their dicts.
_TAGS: dict[str, frozenset[str]] = {
    "$float": frozenset({"$float"}),
    "$set": frozenset({"$set"}),
    "$numpy": frozenset({"$numpy", "value"}),
    "$dtype": frozenset({"$dtype"}),
    "$enum": frozenset({"$enum", "name", "value"}),
    "$dataclass": frozenset({"$dataclass", "fields"}),
    "$object": frozenset({"$object", "value"}),
    "$bytes": frozenset({"$bytes"}),
}

# numpy scalar types DaCe treats exactly like the Python type they map to.
_NUMPY_AS_PYTHON = {np.dtype(np.float64): float, np.dtype(np.int64): int, np.dtype(np.bool_): bool}

# Python types accepted where a dtype is meant (``dtype=float``): numpy maps them to dtypes.
_DTYPE_LIKE_TYPES = (float, int, bool)


def canonical(value: Any, path: str = "inputs") -> Any:
    """Return the canonical, JSON-compatible form of ``value`` (see the module docstring).

    ``path`` names ``value`` in error messages, e.g.
    ``inputs['scalars']['da_min']: cannot fingerprint object of type Foo``.
    """
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, enum.Enum):
        return {
            "$enum": _qualified_name(type(value)),
            "name": value.name,
            "value": canonical(value.value, f"{path}.value"),
        }
    if isinstance(value, np.generic):
        return _canonical_numpy_scalar(value, path)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return _canonical_float(float(value))
    if isinstance(value, str):
        return str(value)
    if isinstance(value, (bytes, bytearray)):
        return {"$bytes": bytes(value).hex()}
    if isinstance(value, Mapping):
        return _canonical_mapping(value, path)
    if isinstance(value, (list, tuple)):
        return [canonical(item, f"{path}[{index}]") for index, item in enumerate(value)]
    if isinstance(value, (set, frozenset)):
        items = [canonical(item, f"{path}{{}}") for item in value]
        return {"$set": sorted(items, key=canonical_json)}
    if isinstance(value, np.dtype) or _is_dtype_like_type(value):
        return _canonical_dtype(np.dtype(value))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _canonical_dataclass(value, path)
    fingerprint_method = getattr(type(value), "__fingerprint__", None)
    if callable(fingerprint_method) and not isinstance(value, type):
        return {
            "$object": _qualified_name(type(value)),
            "value": canonical(value.__fingerprint__(), f"{path}.__fingerprint__()"),
        }
    raise TypeError(
        f"{path}: cannot fingerprint object of type {_qualified_name(type(value))}; "
        "pass its content (a str, number, dataclass, or an object with __fingerprint__())"
    )


def canonical_json(value: Any) -> str:
    """The canonical JSON text of ``value``: sorted keys, compact, ASCII."""
    return json.dumps(
        canonical(value), sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
    )


def fingerprint(inputs: Mapping[str, Any]) -> str:
    """The cache key of ``inputs``: sha256 hex of the salted canonical JSON text."""
    if not isinstance(inputs, Mapping):
        raise TypeError(f"inputs: expected a mapping, got {_qualified_name(type(inputs))}")
    text = CACHE_FORMAT_VERSION + "\n" + canonical_json(inputs)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def _canonical_float(value: float) -> Any:
    if math.isnan(value):
        return {"$float": "nan"}
    if math.isinf(value):
        return {"$float": "inf" if value > 0 else "-inf"}
    return value


def _canonical_numpy_scalar(value: np.generic, path: str) -> Any:
    python_type = _NUMPY_AS_PYTHON.get(value.dtype)
    if python_type is not None:
        return canonical(python_type(value), path)
    if value.dtype.kind == "U":
        return str(value)
    python_value = value.item() if value.dtype.kind in "biuf" else None
    if type(python_value) not in (bool, int, float):
        raise TypeError(
            f"{path}: cannot fingerprint numpy scalar of dtype {value.dtype}; "
            "pass a bool, integer or float scalar"
        )
    return {"$numpy": value.dtype.name, "value": canonical(python_value, path)}


def _is_dtype_like_type(value: Any) -> bool:
    return isinstance(value, type) and (value in _DTYPE_LIKE_TYPES or issubclass(value, np.generic))


def _canonical_dtype(dtype: np.dtype) -> Any:
    if dtype.fields is not None:
        return {"$dtype": canonical(dtype.descr)}
    return {"$dtype": dtype.str}


def _canonical_mapping(value: Mapping, path: str) -> dict[str, Any]:
    for key in value:
        if not isinstance(key, str):
            raise TypeError(
                f"{path}: dict keys must be str, found {_qualified_name(type(key))} key {key!r}"
            )
    tags = [key for key in value if key.startswith("$")]
    if tags:
        _check_tag(value, tags, path)
    return {key: canonical(value[key], f"{path}[{key!r}]") for key in sorted(value)}


def _check_tag(value: Mapping[str, Any], tags: list[str], path: str) -> None:
    """Accept a dict with ``$`` keys only if it is a well-formed tag of the canonical form."""
    if len(tags) == 1 and _TAGS.get(tags[0]) == frozenset(value):
        return
    raise TypeError(
        f"{path}: dict keys starting with '$' are reserved for the canonical form, found {tags}"
    )


def _canonical_dataclass(value: Any, path: str) -> dict[str, Any]:
    fields = {
        field.name: canonical(getattr(value, field.name), f"{path}.{field.name}")
        for field in dataclasses.fields(value)
        if field.metadata.get(KEY_METADATA, True)
    }
    return {"$dataclass": _qualified_name(type(value)), "fields": dict(sorted(fields.items()))}


def _qualified_name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"
