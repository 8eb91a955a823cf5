"""Scratch arrays: arrays a model writes and reads within one call and never between calls.

A model's intermediates (fluxes, Laplacians, the coefficients of a column
solve) are arrays it allocates once and rewrites on every call. Held as
plain arrays they are part of what Python can see after the call, so the
compiled program must write every value to memory. Declared scratch, their
contents belong to the call: the compiled program keeps each one as a
transient of its own and never writes the array Python holds, which lets the
optimizer keep the values where it likes. This is NDSL's ``Local``
(``ndsl.quantity.Local``), which orchestra takes as it is: any array
container whose DaCe descriptor is a transient is scratch
(:func:`orchestra.key.array_like.is_scratch`); :class:`Scratch` is the same
declaration for a model not written for NDSL.

The contract (docs/orchestration.md#scratch-arrays): every call writes a
scratch array before it reads it, and nothing outside the orchestrated call
reads it. orchestra checks what it can see: a scratch array given to a
Python callback is refused when the program is built (the callback would
see the array Python holds, never written by the program); a scratch array
swapped for a plain one (or back) between calls is refused; scratch-ness is
part of the cache key.
"""

from __future__ import annotations

from typing import Any

import numpy as np


class Scratch:
    """An array declared scratch: its contents do not outlive one call of the orchestrated program.

    Wraps ``data`` (a numpy or gt4py storage) and forwards its array
    protocol, so stencils take it like the array itself, in ``Python`` mode
    too. Its floating-point values are set to NaN here (a numpy or cupy
    array; an abstract device array of a build without a device has none): a scratch array holds
    nothing between calls, and a model that reads one before writing it (or
    after the call, from Python) sees NaN in ``Python`` mode, where the
    mistake shows, instead of a value the compiled program would not have.

    >>> import numpy as np
    >>> tmp = Scratch(np.zeros((4, 4, 2)))
    >>> tmp.shape, bool(np.isnan(tmp.data).all())
    ((4, 4, 2), True)
    """

    def __init__(self, data: Any) -> None:
        dtype = getattr(data, "dtype", None)
        if _holds_values(data) and dtype is not None and np.issubdtype(dtype, np.floating):
            data.fill(np.nan)
        self._data = data

    @property
    def data(self) -> Any:
        """The wrapped array (what ``Python`` mode's stencils write)."""
        return self._data

    @property
    def shape(self) -> tuple:
        return self._data.shape

    @property
    def dtype(self) -> np.dtype:
        return self._data.dtype

    @property
    def __array_interface__(self) -> dict:
        return self._data.__array_interface__

    @property
    def __cuda_array_interface__(self) -> dict:
        """The wrapped device array's interface (an AttributeError for a host array, as numpy's own)."""
        return self._data.__cuda_array_interface__

    def __descriptor__(self) -> Any:
        """DaCe's descriptor of the wrapped array, marked transient: the program's own array."""
        import dace

        descriptor = dace.data.create_datadescriptor(self._data)
        descriptor.transient = True
        return descriptor

    def __getitem__(self, index: Any) -> Any:
        return self._data[index]

    def __setitem__(self, index: Any, value: Any) -> None:
        self._data[index] = value

    def __repr__(self) -> str:
        return f"Scratch({type(self._data).__name__} of shape {self.shape}, {self.dtype})"


def _holds_values(data: Any) -> bool:
    """A numpy or cupy array (not an abstract device array of a build without a device: it has no values)."""
    return isinstance(data, np.ndarray) or type(data).__module__.partition(".")[0] == "cupy"
