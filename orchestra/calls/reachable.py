"""The arrays a call can reach, by access path: its arguments and what the method's object holds.

One walk serves every place that must see a call's arrays before it runs:
``ORCHESTRA_VERIFY`` (:mod:`orchestra.observe.verify`: copies, compares and
names them) and a ``Run`` job's first split call (:mod:`orchestra.pipeline.restore_on_miss`:
puts them back if a part has no build).

From each root (``self``, each argument by name) it descends into dicts,
lists and tuples, dataclasses and plain model objects (``vars``), and the
``.data`` of Quantity-like containers, ``depth`` levels deep, each object
once. Numbers (Python's and NumPy's scalars, ``np.float32(0.1)``) and
text are values, not arrays: a call cannot change them in place. Objects of
libraries (gt4py, DaCe, orchestra, numpy, mpi4py, cupy: stencils, programs,
configurations) are not entered, nor orchestra's own attributes on a model
object (``__orchestra_programs__``).
"""

from __future__ import annotations

import dataclasses
import types
from typing import Any, Optional

import numpy as np

from orchestra.key.array_like import is_scratch

#: Objects of these packages are not searched for the model's arrays.
_NOT_SEARCHED = frozenset({"gt4py", "dace", "orchestra", "numpy", "mpi4py", "cupy", "builtins", "logging", "types"})


def reachable_arrays(roots: list[tuple[str, Any]], depth: int, *, scratch: bool = True,
                     objects: Optional[dict[int, str]] = None) -> dict[str, Any]:
    """Access path -> array of every array reachable from ``roots`` (name, value), each array once.

    ``scratch=False`` leaves ``orchestra.Scratch`` arrays out (the program's
    own transients); ``objects``, if given, receives id -> access path of the
    containers passed on the way (the method's object, states, dicts).
    """
    walk = _Walk(scratch, {} if objects is None else objects)
    for name, value in roots:
        walk.search(value, name, depth)
    return walk.found


@dataclasses.dataclass
class _Walk:
    scratch: bool
    objects: dict[int, str]
    found: dict[str, Any] = dataclasses.field(default_factory=dict)
    seen: set[int] = dataclasses.field(default_factory=set)

    def search(self, value: Any, path: str, depth: int) -> None:
        if id(value) in self.seen or depth < 0 or value is None or _is_value(value):
            return
        self.seen.add(id(value))
        if not self.scratch and is_scratch(value):
            return
        if _is_array(value):
            self.found[path] = value
            return
        if isinstance(value, dict):
            items = [(f"{path}[{key!r}]", item) for key, item in value.items()]
        elif isinstance(value, (list, tuple)):
            items = [(f"{path}[{index}]", item) for index, item in enumerate(value)]
        elif dataclasses.is_dataclass(value) and not isinstance(value, type) or _is_model_object(value):
            items = [(f"{path}.{key}", item) for key, item in vars(value).items() if not key.startswith("__orchestra")]
        elif hasattr(value, "data") and _is_array(getattr(value, "data", None)):  # a Quantity-like object
            self.search(value.data, f"{path}.data", depth)
            return
        else:
            return
        self.objects[id(value)] = path
        for item_path, item in items:
            self.search(item, item_path, depth - 1)


def _is_value(value: Any) -> bool:
    """A number or text: passed by value, nothing a call can change in place.

    NumPy scalars (``np.float32(0.1)``) have ``__array_interface__`` but are
    immutable values, as Python's ``float`` is; 0-d arrays are arrays.
    """
    return isinstance(value, (str, bytes, int, float, complex, np.generic))


def _is_array(value: Any) -> bool:
    return hasattr(value, "__array_interface__") or hasattr(value, "__cuda_array_interface__")


def _is_model_object(value: Any) -> bool:
    if isinstance(value, (type, types.ModuleType, types.FunctionType, types.MethodType)) or not hasattr(value, "__dict__"):
        return False
    return (type(value).__module__ or "").split(".")[0] not in _NOT_SEARCHED
