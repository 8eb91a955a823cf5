"""Moving field values between the host and the device the state lives on.

With a GPU backend (``dace:gpu``, ``gt:gpu``) gt4py allocates the state as
cupy arrays, which numpy refuses to read implicitly. Initial conditions,
restarts, diagnostics and output compute on the host (numpy); they read and
write the state through these two functions, which are plain numpy
operations for CPU backends.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def _on_device(array: Any) -> bool:
    return type(array).__module__.partition(".")[0] == "cupy"


def to_host(array: Any) -> np.ndarray:
    """The values of ``array`` as a numpy array: the array itself on the host, a copy from a device."""
    if _on_device(array):
        return array.get()
    return np.asarray(array)


def set_from_host(target: Any, index: Any, values: Any) -> None:
    """``target[index] = values`` for host ``values``, copied to the device when ``target`` lives there."""
    if _on_device(target):
        import cupy

        values = cupy.asarray(values)
    target[index] = values
