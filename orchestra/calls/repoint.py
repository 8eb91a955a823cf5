"""Arrays replaced between calls: their new data pointers written into the marshalled arguments.

A model that swaps time levels between steps (``state.u, state.u_old =
state.u_old, state.u``), or binds a fresh array of the same shape, hands the
program other array objects on the next call. Marshalling all arguments
again through DaCe (``construct_arguments``: every array described, every
callback given a new C trampoline) costs 0.5-1.2 ms on a state of a dozen
arrays with a few callbacks; the fast path (:mod:`.fast_path`) would pay it
on every call of such a model.

:class:`Repointer` remembers, after a full marshalling, which slot of the
argument vector holds each plain array (found by its data pointer: exactly
one slot, not an initialization argument). On a later call whose only
changes are such arrays, each replaced by an array of the same type, dtype,
shape, strides and storage, and of the same scratch kind, the slot gets the
new pointer and DaCe's pointer-to-object map (which hands callbacks the
model's own array objects) is updated; the arrays are checked for sharing
memory (a replaced array against every other; a full marshalling refuses
sharing with its message). A scalar argument that changed (a model passing
the time, or a varying time step: 0.6 ms per call marshalled afresh) is
converted by DaCe's own conversion into its slot, found by the program's
argument name, after orchestra's scalar check; a value of another Python
type, or a symbol (an initialization argument), is marshalled afresh.
Anything else (a container, another layout, an array the vector holds
twice) is left to a full marshalling, which says what is wrong if something is.
"""

from __future__ import annotations

import ctypes
from typing import Any, Callable, NamedTuple, Optional

import numpy as np

from orchestra.key.array_like import array_layout, is_array_like, is_container, is_scratch


_NUMBERS = (int, float, bool, complex)
_SCALARS = (int, float, bool, complex, np.generic)


def unchanged(new: Any, old: Any) -> bool:
    """Whether a call's value is the one the arguments were marshalled from (the object, or an equal number)."""
    return new is old or (type(new) is type(old) and isinstance(new, _NUMBERS) and new == old)


class _Array(NamedTuple):
    """What the repointing needs to know of one plain array (a numpy or cupy array keeps it while it lives)."""

    value: Any
    key: tuple  #: what must stay the same for a slot to take another array
    pointer: int
    span: Optional[tuple[int, int]]  #: the memory it spans (None: empty)


def _described(value: Any) -> Optional[_Array]:
    """``value`` described, or None if it is not a plain array with data."""
    if not is_array_like(value) or is_container(value):
        return None
    layout = array_layout(value)
    if layout is None or not layout.pointer:
        return None
    key = (type(value), layout.dtype, layout.shape, layout.strides, layout.storage, is_scratch(value))
    return _Array(value, key, layout.pointer, layout.byte_range())


class Repointer:
    """Where each plain array among a call's values sits in the marshalled argument vector."""

    def __init__(self, values: list, names: list[str], compiled: Any,
                 check_scalar: Callable[[str, Any], None]) -> None:
        callargs, initargs = compiled._lastargs
        in_init = {id(argument) for argument in initargs}
        slots_of: dict[int, list[int]] = {}
        for slot, argument in enumerate(callargs):
            if type(argument) is ctypes.c_void_p and id(argument) not in in_init:
                slots_of.setdefault(argument.value, []).append(slot)
        arrays = [_described(value) for value in values]
        pointers = [array.pointer if array is not None else None for array in arrays]
        #: position among the values -> (slot in the argument vector, the layout key it was built with)
        self._slots: dict[int, tuple[int, tuple]] = {}
        for position, (pointer, array) in enumerate(zip(pointers, arrays)):
            if pointer is not None and pointers.count(pointer) == 1 and len(slots_of.get(pointer, ())) == 1:
                self._slots[position] = (slots_of[pointer][0], array.key)
        #: position of a scalar -> (its name, its slot), where the vector follows DaCe's signature one to one
        self._scalars: dict[int, tuple[str, int]] = {}
        signature = list(compiled._sig)
        if len(signature) == len(callargs):
            for position, (name, value) in enumerate(zip(names, values)):
                if isinstance(value, _SCALARS) and name in signature:
                    slot = signature.index(name)
                    if id(callargs[slot]) not in in_init and type(callargs[slot]) is not ctypes.c_void_p:
                        self._scalars[position] = (name, slot)
        self._check_scalar = check_scalar
        #: the memory each value spans (None: not an array, or empty), to see a replaced array share it
        self._spans = [array.span if array is not None else _span(value) for array, value in zip(arrays, values)]
        #: id -> description of the arrays the vector now holds (a swap finds both arrays here)
        self._known = {id(array.value): array for array in arrays if array is not None}

    def repoint(self, values: list, last: list, compiled: Any) -> bool:
        """Point the replaced arrays' slots at the new arrays; False if a full marshalling is needed.

        A full marshalling is also what refuses an array that now shares memory with another.
        """
        updates, spans, scalars = [], self._spans, []
        for position, (new, old) in enumerate(zip(values, last)):
            if unchanged(new, old):
                continue
            if position in self._scalars:
                if type(new) is not type(old):
                    return False
                scalars.append((*self._scalars[position], old, new))
                continue
            entry = self._slots.get(position)
            array = self._known.get(id(new))
            if array is None or array.value is not new:
                array = _described(new)
            if entry is None or array is None or array.key != entry[1]:
                return False
            if spans is self._spans:  # copied on the first replaced array
                spans = list(spans)
            spans[position] = array.span
            updates.append((entry[0], old, array))
        if updates:
            moved = [position for position in range(len(spans)) if spans[position] != self._spans[position]]
            traded = sorted(spans[p] or (0, 0) for p in moved) == sorted(self._spans[p] or (0, 0) for p in moved)
            if not traded and any(_overlaps(spans, position) for position in moved):  # a swap only trades memory
                return False
        for name, _, _, new in scalars:
            self._check_scalar(name, new)
        if updates:
            self._spans = spans
            self._write(updates, compiled)
            for _, old, _ in updates:
                self._known.pop(id(old), None)
            self._known.update((id(array.value), array) for _, _, array in updates)
        if scalars:
            _write_scalars(scalars, compiled)
        return True

    @staticmethod
    def _write(updates: list, compiled: Any) -> None:
        """The new pointers into DaCe's argument vector and its pointer-to-object map."""
        callargs = list(compiled._lastargs[0])
        to_object = compiled._argument_to_pyobject  # shared with the callbacks' trampolines
        descriptors = []
        for slot, old, _ in updates:  # all old entries out first: swapped arrays trade pointers
            found = to_object.get(callargs[slot].value)
            descriptors.append(found[1] if found is not None and found[0] is old else None)
            if descriptors[-1] is not None:
                del to_object[callargs[slot].value]
        for (slot, _, array), descriptor in zip(updates, descriptors):
            callargs[slot] = ctypes.c_void_p(array.pointer)
            if descriptor is not None:
                to_object[array.pointer] = (array.value, descriptor)
        compiled._lastargs = (tuple(callargs), compiled._lastargs[1])


def _write_scalars(scalars: list, compiled: Any) -> None:
    """The changed scalars converted by DaCe into their slots (its value-to-object map kept to the current ones)."""
    from dace.data import make_ctypes_argument

    callargs = list(compiled._lastargs[0])
    to_object = compiled._argument_to_pyobject
    for name, slot, old, new in scalars:
        found = to_object.get(callargs[slot].value)
        if found is not None and found[0] is old:
            del to_object[callargs[slot].value]
        callargs[slot] = make_ctypes_argument(new, compiled._typedict[name], name, allow_views=True,
                                              callback_retval_references=compiled._callback_retval_references,
                                              argument_to_pyobject=to_object)
    compiled._lastargs = (tuple(callargs), compiled._lastargs[1])


def _span(value: Any) -> Optional[tuple[int, int]]:
    """The memory an array-like that is not a plain array spans (a container), or None."""
    layout = array_layout(value) if is_array_like(value) else None
    return layout.byte_range() if layout is not None else None


def _overlaps(ranges: list, position: int) -> bool:
    """Whether the memory of value ``position`` overlaps another value's."""
    mine = ranges[position]
    if mine is None:
        return False
    start, end = mine
    return any(other is not None and index != position and other[0] < end and start < other[1]
               for index, other in enumerate(ranges))
