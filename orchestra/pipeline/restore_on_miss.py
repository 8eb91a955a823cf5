"""A ``Run`` job's first split call that misses a part leaves the caller's arrays as they were.

Used by :class:`orchestra.pipeline.split_builds.SplitRole` (the first call of
the outermost Python body in ``Run`` mode): the arrays the call can reach are
copied before it runs, and put back if a part it calls has no build.
"""

from __future__ import annotations

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


def _reachable_arrays(roots: tuple) -> list[np.ndarray]:
    """The writable NumPy arrays (and NumPy views of array containers) reachable from ``roots``, once each."""
    from orchestra.calls.reachable import reachable_arrays

    found: dict[int, np.ndarray] = {}
    for value in reachable_arrays([(str(index), root) for index, root in enumerate(roots)], _LEVELS).values():
        try:
            array = value if isinstance(value, np.ndarray) else np.asarray(value)
        except Exception:  # noqa: BLE001 - a device array: not copied here
            continue
        if array.flags.writeable and array.size:
            found.setdefault(id(array), array)
    return list(found.values())


#: how deep the arrays to restore are looked for
_LEVELS = 6
