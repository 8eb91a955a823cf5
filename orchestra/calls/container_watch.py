"""Noticing, on every call, that an array container now wraps other data.

An array container (NDSL's ``Quantity``; :func:`orchestra.key.array_like.is_container`)
may wrap another array after ``quantity.data = new_array`` while staying the
same object, so the fast call path (:mod:`orchestra.calls.fast_path`) must
look inside each container it marshalled, on every call. Reading the
container's array interface for that costs about 1.5 us (numpy builds a new
dict each time): 75 us per call for a model holding 50 quantities.

Most containers forward the interface of an array they hold: NDSL's
``Quantity.__array_interface__`` is ``return self._data.__array_interface__``.
For such a class the watch reads the forwarded object the way the property
does (``self._data``, the same attribute reads) and compares it by identity
with the array marshalled: about 0.1 us. This is proven from the property's
bytecode, never assumed from names: the getter must be exactly
``return self.<a>[.<b>...].<interface>`` and the object reached a numpy (or
cupy) array, whose data pointer, shape and strides are fixed for its
lifetime (the watch keeps a reference to it, so its identity is never
reused). Any other container (an interface built from several attributes, a
computed view, a buffer object) is watched by its full data token, as before.
"""

from __future__ import annotations

import dis
import operator
from typing import Any, Callable, Optional

import numpy as np

from orchestra.key.array_like import data_token, interface_of, is_container

#: interface attribute by storage, as :func:`orchestra.key.array_like.interface_of` reports it
_INTERFACES = {"cpu": "__array_interface__", "gpu": "__cuda_array_interface__"}
#: instructions that compute nothing (3.11+: the frame's start, padding)
_NEUTRAL = {"RESUME", "NOP", "CACHE", "EXTENDED_ARG", "PRECALL"}
#: (class, interface) -> attribute path the property forwards, or None if not provable
_FORWARDS: dict[tuple[type, str], Optional[tuple[str, ...]]] = {}


def forwarded_path(cls: type, interface: str) -> Optional[tuple[str, ...]]:
    """The attribute path ``(a, b, ...)`` such that ``cls``'s ``interface`` property returns ``self.a.b...<interface>``.

    None when the property is anything else (looked up once per class).

    >>> class Quantity:
    ...     def __init__(self, data): self._data = data
    ...     @property
    ...     def __array_interface__(self): return self._data.__array_interface__
    >>> forwarded_path(Quantity, "__array_interface__")
    ('_data',)
    """
    key = (cls, interface)
    if key not in _FORWARDS:
        _FORWARDS[key] = _read_forward(cls, interface)
    return _FORWARDS[key]


def _read_forward(cls: type, interface: str) -> Optional[tuple[str, ...]]:
    prop = next((vars(klass)[interface] for klass in cls.__mro__ if interface in vars(klass)), None)
    getter = getattr(prop, "fget", None) if isinstance(prop, property) else None
    code = getattr(getter, "__code__", None)
    if code is None or code.co_argcount != 1 or code.co_kwonlyargcount or getter.__closure__:
        return None
    steps = [ins for ins in dis.get_instructions(getter) if ins.opname not in _NEUTRAL]
    if len(steps) < 4 or steps[0].opname != "LOAD_FAST" or steps[0].arg != 0 or steps[-1].opname != "RETURN_VALUE":
        return None
    reads = steps[1:-1]
    if any(ins.opname != "LOAD_ATTR" for ins in reads):
        return None
    names = tuple(str(ins.argval) for ins in reads)
    if names[-1] != interface or interface in names[:-1]:
        return None
    return names[:-1]


def _fixed_array(value: Any, interface: str) -> bool:
    """A numpy or cupy array whose interface is the array type's own: fixed while the object lives."""
    if isinstance(value, np.ndarray):
        return getattr(type(value), interface, None) is np.ndarray.__dict__.get(interface)
    return type(value).__module__.partition(".")[0] == "cupy" and type(value).__name__ == "ndarray"


def _read_path(value: Any, path: tuple[str, ...]) -> Any:
    for name in path:
        value = getattr(value, name)
    return value


class ContainerWatch:
    """Whether the containers among a call's values still wrap the data they wrapped when marshalled.

    Built from the values just marshalled; :meth:`moved` is asked with the
    same positions' values of a later call (the same objects: the fast path
    compares them by identity first). Provably forwarding containers are
    checked in three C-level passes (their classes, the forwarded objects,
    identity), the others by their data tokens.
    """

    def __init__(self, values: list) -> None:
        by_identity, by_token = [], []
        for index, value in enumerate(values):
            if not is_container(value):
                continue
            forwarded = _forwarded_array(value)
            if forwarded is None:
                by_token.append((index, data_token(value)))
            else:
                by_identity.append((index, type(value), operator.attrgetter(".".join(forwarded[0])), forwarded[1]))
        self._pick = _picker([index for index, *_ in by_identity])
        self._classes = tuple(cls for _, cls, _, _ in by_identity)
        self._readers = tuple(reader for _, _, reader, _ in by_identity)
        self._arrays = tuple(array for *_, array in by_identity)  # referenced: their identities stay theirs
        self._tokens = tuple(by_token)

    def __bool__(self) -> bool:
        return bool(self._arrays or self._tokens)

    def moved(self, values: list) -> bool:
        """Whether any container now wraps other data (or another layout), or can no longer be read."""
        try:
            containers = self._pick(values)
            return not (
                all(map(operator.is_, map(type, containers), self._classes))
                and all(map(operator.is_, map(operator.call, self._readers, containers), self._arrays))
                and all(data_token(values[index]) == token for index, token in self._tokens)
            )
        except Exception:  # noqa: BLE001 - the forwarded attribute is gone: marshalling says what is wrong
            return True


def _picker(indices: list[int]) -> Callable[[list], tuple]:
    if not indices:
        return lambda values: ()
    if len(indices) == 1:
        return lambda values: (values[indices[0]],)
    return operator.itemgetter(*indices)


def _forwarded_array(container: Any) -> Optional[tuple[tuple[str, ...], Any]]:
    """``(path, array)`` when the container's class provably forwards a fixed array's interface; else None."""
    _, storage = interface_of(container)
    interface = _INTERFACES[storage]
    path = forwarded_path(type(container), interface)
    if path is None:
        return None
    try:
        wrapped = _read_path(container, path)
        if _read_path(container, path) is not wrapped:  # a computed value (a fresh view) is not watched so
            return None
    except Exception:  # noqa: BLE001 - any failure: watch by token
        return None
    if _fixed_array(wrapped, interface) and data_token(wrapped) == data_token(container):
        return path, wrapped
    return None
