"""What orchestra calls an array, and how it reads an array's layout.

DaCe takes as an array any object that offers its array protocol: numpy and
cupy arrays (gt4py storages are one of these), and containers that wrap one,
like NDSL's ``Quantity``, which offer ``__array_interface__`` (on GPU
``__cuda_array_interface__``) forwarding to the wrapped array, a
``__descriptor__()`` method returning DaCe's descriptor, and ``shape``, but
not necessarily ``dtype`` and never ``strides``. Everything in orchestra that
recognises or describes an array (the cache key, the fast call path's checks,
the folded identity of a call, compile-time argument detection) goes through
:func:`is_array_like` and :func:`array_layout`, so that such a container is an
array everywhere, described by its layout, never an opaque object.

Reading order of :func:`array_layout`: a numpy array directly; otherwise the
object's ``__cuda_array_interface__`` (storage ``gpu``) or
``__array_interface__`` (storage ``cpu``): ``typestr`` gives the dtype,
``strides`` of None means C-contiguous, ``data[0]`` is the pointer; an object
with neither falls back to ``__descriptor__()`` for dtype, shape and strides
(its pointer is then unknown). numpy scalars (``np.generic``) have an array
interface but are passed by value: they are not array-likes.

>>> import numpy as np
>>> layout = array_layout(np.zeros((2, 3), dtype=np.float32))
>>> layout.dtype, layout.shape, layout.strides, layout.storage
(dtype('float32'), (2, 3), (3, 1), 'cpu')
>>> is_array_like(np.float64(1.0)), array_layout(3.0)
(False, None)
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Optional

import numpy as np

_CPU, _GPU = "cpu", "gpu"
_HOST_INTERFACE, _DEVICE_INTERFACE = "__array_interface__", "__cuda_array_interface__"
#: Values that are never arrays although some offer an interface (numpy scalars), rejected by type.
_NOT_ARRAYS = (np.generic, str, bytes, type)
#: Classes by whether their instances offer an array interface as a class attribute (property).
_INTERFACE_CLASSES: dict[type, bool] = {}


@dataclasses.dataclass(frozen=True)
class ArrayLayout:
    """Where an array's data is and how it is laid out.

    ``pointer``: address of element ``[0, ..., 0]`` (None when only a DaCe
    descriptor told the layout; 0 for an array without data, such as
    :class:`orchestra.pipeline.abstract_arrays.AbstractArray`);
    ``strides``: in elements, one per axis; ``storage``: ``"cpu"`` or ``"gpu"``.
    """

    pointer: Optional[int]
    dtype: np.dtype
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    storage: str

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def byte_range(self) -> Optional[tuple[int, int]]:
        """[first byte, last byte + 1) of the memory the array spans; None if empty or the pointer is unknown."""
        if not self.pointer or self.size == 0:  # unknown, or null (an abstract array has no data)
            return None
        start = end = self.pointer
        for extent, stride in zip(self.shape, self.strides):
            if stride < 0:
                start += (extent - 1) * stride * self.itemsize
            else:
                end += (extent - 1) * stride * self.itemsize
        return start, end + self.itemsize

    def describe(self) -> dict[str, Any]:
        """The canonical description the cache key holds: dtype, shape, strides (elements), storage."""
        return {
            "dtype": self.dtype.str,
            "shape": list(self.shape),
            "strides": list(self.strides),
            "storage": self.storage,
        }


def is_array_like(value: Any) -> bool:
    """True for anything DaCe takes as an array: numpy/cupy arrays, gt4py storages, array containers.

    Cheap on the per-call path (``orchestra.calls.arguments.folded_identity``): a
    numpy array is recognised by type, a container by its class offering an
    array interface (looked up once per class), most other values by three
    failed attribute look-ups. What remains (an instance-level interface, a
    ``__descriptor__()`` alone) is decided by :func:`array_layout`.
    """
    if isinstance(value, np.ndarray) or _INTERFACE_CLASSES.get(type(value)):
        return True
    if value is None or isinstance(value, _NOT_ARRAYS):
        return False
    if _offers_interface(type(value)):
        return True
    if not (hasattr(value, _DEVICE_INTERFACE) or hasattr(value, _HOST_INTERFACE) or hasattr(value, "__descriptor__")):
        return False  # most objects: three failed look-ups
    return array_layout(value) is not None


def array_layout(value: Any) -> Optional[ArrayLayout]:
    """The layout of ``value`` if it is an array-like (see the module docstring), else None."""
    if isinstance(value, np.ndarray):
        return _numpy_layout(value)
    if value is None or isinstance(value, _NOT_ARRAYS):
        return None
    interface, storage = interface_of(value)
    if interface is not None:
        return _interface_layout(value, interface, storage)
    return _descriptor_layout(value)


def interface_of(value: Any) -> tuple[Optional[dict], str]:
    """``value``'s array interface dict and storage: the CUDA one (``gpu``) first, else the host one (``cpu``).

    The dict changes whenever the data pointer, shape, strides or dtype
    behind a container does, so comparing it is how a replaced wrapped array
    is noticed without describing the layout again.
    """
    try:
        interface = getattr(value, _DEVICE_INTERFACE, None)
    except (AttributeError, KeyError, RuntimeError):  # some libraries raise for special arrays
        interface = None
    if isinstance(interface, dict):
        return interface, _GPU
    interface = getattr(value, _HOST_INTERFACE, None)
    if isinstance(interface, dict):
        return interface, _CPU
    return None, _CPU


def is_container(value: Any) -> bool:
    """An array-like other than a numpy or cupy array: the array it wraps may be replaced in place.

    A numpy or cupy array keeps its data pointer, shape and strides for as
    long as it lives; a container (``quantity.data = new_array``) does not,
    so holding the same container object does not mean holding the same data.
    """
    if isinstance(value, np.ndarray):
        return False
    return type(value).__module__.partition(".")[0] != "cupy" and is_array_like(value)


def is_scratch(value: Any) -> bool:
    """Whether ``value`` declares itself scratch: its DaCe descriptor is a transient (NDSL's ``Local``).

    A scratch array's contents are not needed between calls: the compiled
    program keeps it as a transient of its own and never writes the object
    Python holds (docs/orchestration.md#scratch-arrays). A numpy array never
    is; a container is asked once per call of this function (key time,
    marshalling), never on the per-call fast path.
    """
    if isinstance(value, np.ndarray) or not callable(getattr(type(value), "__descriptor__", None)):
        return False
    try:
        return bool(getattr(value.__descriptor__(), "transient", False))
    except Exception:  # noqa: BLE001 - a descriptor that cannot be built declares nothing
        return False


def data_token(value: Any) -> Optional[tuple]:
    """``(pointer, shape, strides, typestr)`` of ``value``'s array interface; None without one.

    Cheap (no layout is built): the fast call path compares it on every call
    for each container it marshalled (see :func:`is_container`), so that a
    container whose wrapped array was replaced is marshalled again.
    """
    interface, _ = interface_of(value)
    if interface is None:
        return None
    data = interface.get("data")
    pointer = data[0] if isinstance(data, tuple) else id(data)  # a buffer object: its identity
    return pointer, interface["shape"], interface.get("strides"), interface["typestr"]


def _offers_interface(cls: type) -> bool:
    """Whether ``cls`` defines an array interface (a property): looked up once per class.

    Never asked for a numpy scalar type (``np.generic`` offers an interface
    but is passed by value), so the cache never says True for one.
    """
    known = _INTERFACE_CLASSES.get(cls)
    if known is None:
        known = _INTERFACE_CLASSES[cls] = hasattr(cls, _HOST_INTERFACE) or hasattr(cls, _DEVICE_INTERFACE)
    return known


def _numpy_layout(array: np.ndarray) -> ArrayLayout:
    itemsize = array.dtype.itemsize
    return ArrayLayout(
        pointer=int(array.__array_interface__["data"][0]),
        dtype=array.dtype,
        shape=tuple(int(n) for n in array.shape),
        strides=tuple(int(s) // itemsize for s in array.strides),
        storage=_CPU,
    )


def _interface_layout(value: Any, interface: dict, storage: str) -> ArrayLayout:
    """A layout read from an array interface dict (numpy's or CUDA's protocol, version 3)."""
    dtype = np.dtype(interface["typestr"])
    shape = tuple(int(n) for n in interface["shape"])
    byte_strides = interface.get("strides")
    if byte_strides is None:  # C-contiguous
        strides = tuple(int(s) for s in _contiguous_strides(shape))
    else:
        strides = tuple(int(s) // dtype.itemsize for s in byte_strides)
    data = interface.get("data")
    if isinstance(data, tuple):
        pointer: Optional[int] = int(data[0]) if data[0] is not None else None
    else:  # a buffer object (host protocol only): numpy finds its address
        pointer = int(np.asarray(value).__array_interface__["data"][0])
    return ArrayLayout(pointer, dtype, shape, strides, storage)


def _contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, step = [], 1
    for extent in reversed(shape):
        strides.append(step)
        step *= max(extent, 1)
    return tuple(reversed(strides))


def _descriptor_layout(value: Any) -> Optional[ArrayLayout]:
    """A layout from DaCe's descriptor protocol (``__descriptor__()``), for an object without an interface."""
    describe = getattr(value, "__descriptor__", None)
    if describe is None or not callable(describe):
        return None
    from dace import data, dtypes

    descriptor = describe()
    if not isinstance(descriptor, data.Array):
        return None
    try:
        shape = tuple(int(n) for n in descriptor.shape)
        strides = tuple(int(s) for s in descriptor.strides)
    except TypeError:  # symbolic sizes: not a concrete array
        return None
    storage = _GPU if descriptor.storage in (dtypes.StorageType.GPU_Global, dtypes.StorageType.GPU_Shared) else _CPU
    return ArrayLayout(None, np.dtype(descriptor.dtype.as_numpy_dtype()), shape, strides, storage)


def first_overlap(values: dict[str, Any]) -> Optional[tuple[str, str]]:
    """The names of two array-likes among ``values`` whose memory overlaps (None: all distinct).

    Anything that is not an array-like, and empty or unknown memory, never overlaps.

    >>> import numpy as np
    >>> a = np.zeros(8)
    >>> first_overlap({"x": a[:5], "y": a[4:]}), first_overlap({"x": a[:4], "y": a[4:], "n": 3})
    (('x', 'y'), None)
    """
    ranges = sorted((r, name) for name, value in values.items()
                    if (layout := array_layout(value)) is not None and (r := layout.byte_range()) is not None)
    for (first, first_name), (second, second_name) in zip(ranges, ranges[1:]):
        if second[0] < first[1]:
            return first_name, second_name
    return None
