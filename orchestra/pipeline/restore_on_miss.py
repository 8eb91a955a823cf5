"""A ``Run`` job's first split call that misses a part leaves the caller's arrays as they were.

Used by :class:`orchestra.pipeline.split_builds.SplitRole` (the first call of
the outermost Python body in ``Run`` mode): the arrays the call can reach are
copied before it runs, and put back if a part it calls has no build.
"""

from __future__ import annotations

import types
from typing import Any, Callable

import numpy as np


def restoring_on_miss(roots: tuple, run: Callable[[], Any]) -> Any:
    """Run a ``Run`` job's first split call; if a part has no build, put back every array it reached and raise.

    A whole program is refused before it runs; a split build obtains its
    parts as its Python body calls them, so a part missing halfway had let
    the parts before it change the caller's arrays. The arrays reachable from
    the call's arguments and the model object are copied first and restored
    on the refusal, which says so.
    """
    from orchestra.errors import MissingBuildError

    saved = [(array, array.copy()) for array in _reachable_arrays(roots)]
    try:
        return run()
    except MissingBuildError as error:
        for array, copy in reversed(saved):
            array[...] = copy
        raise MissingBuildError(f"{error}\nNothing of this call was kept: the {len(saved)} array(s) it could "
                                "change are as they were before it.") from None


def _reachable_arrays(roots: tuple, levels: int = 6) -> list[np.ndarray]:
    """The writable NumPy arrays (and NumPy views of array containers) reachable from ``roots``, once each."""
    from orchestra.key.array_like import is_array_like

    found: dict[int, np.ndarray] = {}
    seen: set[int] = set()
    pending = [(root, 0) for root in roots]
    while pending:
        value, level = pending.pop()
        if id(value) in seen or value is None or isinstance(value, (str, bytes, int, float, bool)):
            continue
        seen.add(id(value))
        if is_array_like(value):
            try:
                array = value if isinstance(value, np.ndarray) else np.asarray(value)
            except Exception:  # a device array: not copied here
                continue
            if array.flags.writeable and array.size:
                found.setdefault(id(array), array)
            continue
        if level >= levels or (type(value).__module__ or "").split(".")[0] in _NOT_MODEL_STATE:
            continue
        if isinstance(value, (list, tuple)):
            children = list(value)
        elif isinstance(value, dict):
            children = list(value.values())
        elif hasattr(value, "__dict__") and not isinstance(value, (type, types.FunctionType, types.MethodType,
                                                                     types.ModuleType)):
            children = [child for name, child in vars(value).items() if not name.startswith("__orchestra")]
        else:
            continue
        pending.extend((child, level + 1) for child in children)
    return list(found.values())


#: packages whose objects hold no model arrays to restore (and are large or unsafe to walk)
_NOT_MODEL_STATE = frozenset({"orchestra", "dace", "gt4py", "mpi4py", "numpy", "builtins", "logging", "types"})
