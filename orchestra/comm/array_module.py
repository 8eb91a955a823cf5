"""The array module (numpy or cupy) that owns an array, without importing cupy.

gt4py storages are numpy arrays on CPU and cupy arrays on GPU; halo buffers
are allocated with the same module as the fields they serve.
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Any

import numpy as np


def array_module(array: Any) -> ModuleType:
    """``cupy`` for a cupy array, else ``numpy``; cupy is only looked up if loaded."""
    cupy = sys.modules.get("cupy")
    if cupy is not None and isinstance(array, cupy.ndarray):
        return cupy
    return np


def to_host(array: Any) -> np.ndarray:
    """A numpy array with the contents of ``array`` (copied from the device if needed)."""
    if array_module(array) is not np:
        return array.get()
    return np.asarray(array)


def array_of(value: Any) -> Any:
    """The array itself: ``value.data`` for a Quantity-like container, else ``value``.

    A container holds its array in ``.data`` (NDSL's ``Quantity``); numpy's and
    cupy's own ``.data`` (a buffer, a device pointer) have no ``dtype``, so
    arrays are returned unchanged.
    """
    data = getattr(value, "data", None)
    if data is not None and all(hasattr(data, a) for a in ("shape", "dtype", "strides")):
        return data
    return value
