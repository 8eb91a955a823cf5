"""Abstract device arrays: build a GPU program on a machine without a GPU.

Parsing an orchestrated program needs its arguments, and the arguments of a
``dace:gpu`` model are cupy arrays, which need a GPU. But parsing reads only
what an array *is* (shape, dtype, strides, device), never its values. An
:class:`AbstractArray` carries exactly that and exposes it through the CUDA
array interface with a null data pointer, so DaCe makes a ``GPU_Global``
descriptor of it and the cache key is the one a real cupy array of the same
layout gives (``describe_array`` reads the same four fields).

A model builds its state with gt4py's storage functions. Inside
:func:`abstract_device_storage`, gt4py's GPU allocations return abstract
arrays with the strides the real allocation would have (gt4py computes them;
no device is touched and cupy need not be installed)::

    config = DaceConfig(None, backend="dace:gpu", cuda_arch="90")   # FV3_DACEMODE=Build
    with abstract_device_storage(enabled=builds_without_device(config)):
        model = Model(config)                       # gt4py storages: AbstractArray
        q = gt4py.storage.zeros(shape, backend=config.backend)
        model(q)                                    # builds the library, then exits

What works on an abstract array: attributes (``shape``, ``dtype``,
``strides``, ``ndim``, ``size``, ``nbytes``), basic slicing (a view with the
right shape and strides), and writes, which are dropped (there is no data:
``zeros`` and ``from_array`` fill their result, and a Build job never runs).
Reading values (``numpy.asarray``, arithmetic) is an :class:`AbstractArrayError`.
Orchestrated programs refuse abstract arrays in modes that run.

Example:
    >>> import numpy as np
    >>> a = AbstractArray((4, 5, 3), np.float64, strides=(8, 32, 160))
    >>> a.__cuda_array_interface__["data"]
    (0, False)
    >>> a[1:3, :, 0].shape, a[1:3, :, 0].strides
    ((2, 5), (8, 32))
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterable, Iterator, Optional, Sequence

import numpy as np

from orchestra.errors import OrchestraError


class AbstractArrayError(OrchestraError, TypeError):
    """Values of an :class:`AbstractArray` were asked for; it has none."""


class AbstractArray:
    """A device array's layout without its memory (see the module docstring).

    Args:
        shape: the array's shape.
        dtype: a numpy dtype (or anything ``numpy.dtype`` accepts).
        strides: in bytes, as numpy and cupy report them; C order when omitted.
    """

    __slots__ = ("shape", "dtype", "strides")

    def __init__(self, shape: Sequence[int], dtype: Any, strides: Optional[Sequence[int]] = None) -> None:
        self.shape = tuple(int(n) for n in shape)
        self.dtype = np.dtype(dtype)
        if strides is None:
            strides = _c_strides(self.shape, self.dtype.itemsize)
        if len(strides) != len(self.shape):
            raise ValueError(f"strides {tuple(strides)} do not match shape {self.shape}")
        self.strides = tuple(int(s) for s in strides)

    @classmethod
    def like(cls, array: Any) -> "AbstractArray":
        """The abstract counterpart of a numpy or cupy array (same shape, dtype, strides)."""
        return cls(array.shape, array.dtype, array.strides)

    # numpy-like attributes read by DaCe, gt4py and orchestra
    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.itemsize

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        return {
            "shape": self.shape,
            "typestr": self.dtype.str,
            "descr": self.dtype.descr,
            "strides": self.strides,
            "data": (0, False),  # no memory behind it
            "version": 3,
        }

    def __getitem__(self, index: Any) -> "AbstractArray":
        if isinstance(index, AbstractArray) or (
            isinstance(index, (list, np.ndarray)) or (isinstance(index, tuple) and any(
                isinstance(i, (list, np.ndarray, AbstractArray)) for i in index))
        ):
            raise AbstractArrayError("an abstract array supports basic slicing only (no index arrays)")
        # A strided view over one element: numpy computes the sliced shape and
        # strides; its memory is never read.
        view = np.lib.stride_tricks.as_strided(np.zeros(1, self.dtype), self.shape, self.strides)[index]
        if not isinstance(view, np.ndarray) or view.ndim == 0:
            raise AbstractArrayError(
                f"indexing {self!r} with {index!r} would read a value; an abstract array has none"
            )
        return AbstractArray(view.shape, view.dtype, view.strides)

    def __setitem__(self, index: Any, value: Any) -> None:
        """Writes are dropped: there is no memory (gt4py's zeros/from_array fill their result)."""

    def __array__(self, *args: Any, **kwargs: Any) -> np.ndarray:
        raise AbstractArrayError(
            f"{self!r} stands for a device array while building without a device "
            "(abstract_device_storage); it has no values to read. Code that reads values must not "
            "run in FV3_DACEMODE=Build, or must run outside abstract_device_storage()."
        )

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d abstract array")
        return self.shape[0]

    def __repr__(self) -> str:
        return f"AbstractArray(shape={self.shape}, dtype={self.dtype.name}, strides={self.strides})"


def _c_strides(shape: Sequence[int], itemsize: int) -> tuple[int, ...]:
    strides, step = [], itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= max(int(n), 1)
    return tuple(reversed(strides))


def is_abstract(value: Any) -> bool:
    return isinstance(value, AbstractArray)


def find_abstract(values: Iterable[Any]) -> list[AbstractArray]:
    """The abstract arrays among ``values``."""
    return [value for value in values if isinstance(value, AbstractArray)]


def builds_without_device(config: Any) -> bool:
    """True for a ``Build`` job on a GPU backend: its arrays need no device memory."""
    from orchestra.config import DaCeOrchestration

    return bool(config.on_gpu and config.orchestration is DaCeOrchestration.Build)


@contextlib.contextmanager
def abstract_device_storage(enabled: bool = True) -> Iterator[None]:
    """Make gt4py's GPU storage allocations return :class:`AbstractArray` inside the block.

    Covers ``gt4py.storage.empty/zeros/ones/full/from_array`` for every
    backend whose storages live on the GPU (``dace:gpu``, ``gt:gpu``...);
    CPU backends are unaffected. The strides are those gt4py computes for the
    backend's layout and alignment (it lays the array out in host address
    space, which is never touched). ``enabled=False`` makes it a no-op, so a
    driver can write ``with abstract_device_storage(builds_without_device(config)):``.
    """
    if not enabled:
        yield
        return
    from gt4py.storage.cartesian import utils as storage_utils

    original_allocate = storage_utils.allocate_gpu
    original_asarray = storage_utils.asarray

    def allocate_gpu(shape, layout_map, dtype, alignment_bytes, aligned_index):  # gt4py's signature
        _, host = storage_utils.allocate_cpu(shape, layout_map, dtype, alignment_bytes, aligned_index)
        return None, AbstractArray(host.shape, host.dtype, host.strides)

    def asarray(array: Any, *, device: Any = None) -> Any:
        if isinstance(array, AbstractArray):
            return array
        if device == "gpu":  # the source of from_array(): host values, dropped by the abstract target
            return original_asarray(array, device="cpu")
        return original_asarray(array, device=device)

    storage_utils.allocate_gpu = allocate_gpu
    storage_utils.asarray = asarray
    try:
        yield
    finally:
        storage_utils.allocate_gpu = original_allocate
        storage_utils.asarray = original_asarray


def refuse_abstract_arrays(label: str, program: Any, args: tuple, kwargs: dict) -> None:
    """Raise if an orchestrated program that is about to *run* received abstract arrays.

    ``program`` is the DaceProgram after closure resolution: arrays read
    through ``self`` are checked too.
    """
    from orchestra.errors import ConfigurationError

    values = [*args, *kwargs.values()]
    resolver = getattr(program, "resolver", None)
    if resolver is not None:
        values += [getter() for _expression, _desc, getter, _ in resolver.closure_arrays.values()]
    abstract = find_abstract(values)
    if abstract:
        raise ConfigurationError(
            f"{label} was called with abstract arrays ({abstract[0]!r}, ...) in a mode that runs the "
            "program; abstract arrays stand in for device arrays only in FV3_DACEMODE=Build "
            "(allocate the model's state outside abstract_device_storage() to run it)"
        )
