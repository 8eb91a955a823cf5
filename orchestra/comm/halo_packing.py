"""Packing the halo messages of one exchange with indexed copies: one copy per array.

A halo exchange moves, for every neighbour, a few thin rectangles of every
array. Copied rectangle by rectangle, an exchange of ``a`` arrays with ``m``
neighbours costs ``a * m`` copies to pack and as many to unpack, each a
kernel launch from Python when the arrays live on a GPU. Here every message
of an exchange lies in **one send buffer** and one receive buffer (each
message a 64-byte aligned segment, each array's block an aligned part of it),
and the element pairs (offset in the array's memory, position in the buffer)
of all messages are computed once, when the exchange is first seen:

* packing is one indexed copy per array: ``buffer[positions] = array[offsets]``;
* unpacking is one per array and sign: ``array[offsets] = buffer[positions]``,
  the positions already turned by the quarter turns between the two ranks'
  orientations, and a vector component that changes sign across a rotated
  cube edge copied negated (``-x``, a sign flip: bitwise what numpy's
  ``negative`` gives);
* staged through host memory, each buffer crosses the bus in one copy, not
  one per message.

That is :class:`IndexedPacking`, the default for cupy arrays: each copy is
one elementwise kernel. On the CPU, numpy's fancy indexing is slower than
copying the rectangles as slices (0.56 against 0.26 ms for one 48x48x79
field on 6 ranks, `scripts/bench_halo.py`), so numpy arrays use
:class:`SlicedPacking` into the same buffers; ``indexed=True`` runs the
indexed copies on numpy too, which is how the CPU tests check the indices
the GPU uses.
"""

from __future__ import annotations

import dataclasses
import functools
from types import ModuleType
from typing import Any, Optional, Protocol, Sequence

import numpy as np

from orchestra.comm.errors import DecompositionError
from orchestra.comm.halo_plan import HaloTransfer, Slices

#: Byte alignment of each message and of each array's block in it.
ALIGN = 64

#: For n quarter turns: (which received component, sign) for our u, then for our v.
VECTOR_TURNS: tuple[tuple[tuple[int, int], tuple[int, int]], ...] = (
    ((0, 1), (1, 1)),
    ((1, -1), (0, 1)),
    ((0, -1), (1, -1)),
    ((1, 1), (0, -1)),
)


#: per message: (peer, tag, one transfer per array of the exchange)
Groups = Sequence[tuple[int, int, Sequence[HaloTransfer]]]


def _aligned(nbytes: int) -> int:
    return -(-nbytes // ALIGN) * ALIGN


def element_strides(array: Any) -> tuple[int, ...]:
    """The array's strides in elements; refuses layouts indexed copies cannot address."""
    itemsize = array.dtype.itemsize
    strides = tuple(int(s) for s in array.strides)
    if any(s < 0 or s % itemsize for s in strides):
        raise DecompositionError(
            f"halo update needs arrays with non-negative strides that are whole elements, got "
            f"strides {strides} for itemsize {itemsize}; pass a gt4py storage or a plain array"
        )
    return tuple(s // itemsize for s in strides)


def element_offsets(array: Any, where: Slices) -> np.ndarray:
    """Offsets (in elements, from the array's first element) of ``array[where]``, in C order."""
    ranges = [np.arange(s.start, s.stop, dtype=np.int64) for s in where]
    ranges += [np.arange(n, dtype=np.int64) for n in array.shape[len(where) :]]
    grids = np.ix_(*ranges)
    offsets = sum(g * s for g, s in zip(grids, element_strides(array)))
    return np.ascontiguousarray(offsets, dtype=np.int64).reshape(-1)


def element_span(array: Any) -> int:
    """How many elements the array's memory spans, from its first element to its last."""
    strides = element_strides(array)
    return 1 + sum((n - 1) * s for n, s in zip(array.shape, strides)) if array.size else 0


def flat_view(xp: ModuleType, array: Any, span: int) -> Any:
    """A 1-D view of the ``span`` elements from the array's first one, in memory order (nothing copied)."""
    return xp.lib.stride_tricks.as_strided(array, shape=(span,), strides=(array.dtype.itemsize,))


@dataclasses.dataclass
class IndexedCopy:
    """``target[target_index] = (-)source[source_index]`` for one array of an exchange."""

    array: int  #: which array of the exchange
    array_index: Any  #: element offsets in the array (xp int64)
    buffer_index: Any  #: element positions in the buffer, in the array's dtype (xp int64)
    negate: bool = False


@dataclasses.dataclass
class Message:
    """One message of an exchange: a byte range of the exchange's buffer."""

    peer: int
    tag: int
    start: int
    stop: int


def _block_shape(transfer: HaloTransfer, array: Any) -> tuple[int, ...]:
    si, sj = transfer.source
    return (si.stop - si.start, sj.stop - sj.start, *array.shape[2:])


class Layout:
    """Where each message and block of one direction (sends or receives) lies in its buffer.

    Block ``c`` of a message holds the sender's array ``c``. On the send side
    its shape is that array's source rectangle; on the receive side (give
    ``n_scalars``) it is the source rectangle of the array it fills, which
    across an odd number of quarter turns is the other component of a vector
    pair (a staggered pair's two components differ in shape).
    """

    def __init__(self, groups: Groups, arrays: Sequence[Any], n_scalars: Optional[int] = None):
        self.groups = list(groups)
        self.messages: list[Message] = []
        #: per message, per array: the block's first element in that array's dtype
        self.block_starts: list[list[int]] = []
        #: per message, per array: the block's shape, in the sender's orientation
        self.block_shapes: list[list[tuple[int, ...]]] = []
        offset = 0
        for peer, tag, transfers in groups:
            start, starts, shapes = offset, [], []
            for c, array in enumerate(arrays):
                filled = c if n_scalars is None else _filled_by(c, n_scalars, transfers[0].rotations)
                shape = _block_shape(transfers[filled], array)
                item = array.dtype.itemsize
                starts.append(offset // item)
                shapes.append(shape)
                end = offset + int(np.prod(shape)) * item
                offset += _aligned(end - offset)
            # Without the last block's padding, so that a sender whose last array differs in size
            # sends a message of another size (orchestra.comm.halo_sizes).
            self.messages.append(Message(peer, tag, start, end))
            self.block_starts.append(starts)
            self.block_shapes.append(shapes)
        self.nbytes = offset


def _received_component(a: int, n_scalars: int, rotations: int) -> tuple[int, bool]:
    """Which received block fills array ``a``'s halo, and whether negated (vector turns)."""
    if a < n_scalars:
        return a, False
    first = n_scalars + (a - n_scalars) // 2 * 2
    component, sign = VECTOR_TURNS[rotations][a - first]
    return first + component, sign < 0


def _filled_by(c: int, n_scalars: int, rotations: int) -> int:
    """Which array's halo received block ``c`` fills (the inverse of :func:`_received_component`)."""
    if c < n_scalars:
        return c
    first = n_scalars + (c - n_scalars) // 2 * 2
    return next(a for a in (first, first + 1) if _received_component(a, n_scalars, rotations)[0] == c)


def pack_copies(
    xp: ModuleType,
    arrays: Sequence[Any],
    layout: Layout,
) -> list[IndexedCopy]:
    """One copy per array gathering its send blocks of every message into the buffer."""
    array_index: list[list[np.ndarray]] = [[] for _ in arrays]
    buffer_index: list[list[np.ndarray]] = [[] for _ in arrays]
    for (_, _, transfers), starts in zip(layout.groups, layout.block_starts):
        for a, (transfer, array, start) in enumerate(zip(transfers, arrays, starts)):
            offsets = element_offsets(array, transfer.source)
            array_index[a].append(offsets)
            buffer_index[a].append(start + np.arange(offsets.size, dtype=np.int64))
    return [
        IndexedCopy(
            a,
            xp.asarray(np.concatenate(array_index[a])),
            xp.asarray(np.concatenate(buffer_index[a])),
        )
        for a in range(len(arrays))
        if array_index[a]
    ]


def unpack_copies(
    xp: ModuleType,
    arrays: Sequence[Any],
    layout: Layout,
    n_scalars: int,
) -> list[IndexedCopy]:
    """Copies scattering every received block into its halo, turned and signed; one per array and sign."""
    pieces: dict[tuple[int, bool], tuple[list[np.ndarray], list[np.ndarray]]] = {}
    for (_, _, transfers), starts, shapes in zip(
        layout.groups, layout.block_starts, layout.block_shapes
    ):
        n = transfers[0].rotations
        for a, (transfer, array) in enumerate(zip(transfers, arrays)):
            source, negate = _received_component(a, n_scalars, n)
            shape = shapes[source]
            positions = starts[source] + np.arange(int(np.prod(shape)), dtype=np.int64).reshape(
                shape
            )
            turned = np.rot90(positions, n, axes=(0, 1)) if n else positions
            target = element_offsets(array, transfer.target)
            assert turned.size == target.size, (turned.shape, transfer.target)
            offsets, positions_list = pieces.setdefault((a, negate), ([], []))
            offsets.append(target)
            positions_list.append(np.ascontiguousarray(turned).reshape(-1))
    return [
        IndexedCopy(
            a, xp.asarray(np.concatenate(offsets)), xp.asarray(np.concatenate(positions)), negate
        )
        for (a, negate), (offsets, positions) in sorted(pieces.items())
    ]


def typed(buffer: Any, dtype: np.dtype) -> Any:
    """The byte buffer seen as elements of ``dtype`` (its size is a multiple of ALIGN)."""
    usable = buffer.size // dtype.itemsize * dtype.itemsize
    return buffer[:usable].view(dtype)


def gather(xp: ModuleType, copy: IndexedCopy, array_flat: Any, buffer: Any) -> None:
    """Pack: ``buffer[buffer_index] = array_flat[array_index]``."""
    if xp is np:
        buffer[copy.buffer_index] = array_flat[copy.array_index]
    else:
        _cupy_kernel(False)(array_flat, copy.array_index, copy.buffer_index, buffer)


def scatter(xp: ModuleType, copy: IndexedCopy, buffer: Any, array_flat: Any) -> None:
    """Unpack: ``array_flat[array_index] = (-)buffer[buffer_index]``."""
    if xp is np:
        values = buffer[copy.buffer_index]
        array_flat[copy.array_index] = np.negative(values) if copy.negate else values
    else:
        _cupy_kernel(copy.negate)(buffer, copy.buffer_index, copy.array_index, array_flat)


@functools.cache
def _cupy_kernel(negate: bool) -> Any:
    """``target[target_index] = (-)source[source_index]``, one thread per element (cupy)."""
    import cupy

    sign = "-" if negate else ""
    return cupy.ElementwiseKernel(
        "raw T source, int64 source_index, int64 target_index",
        "raw T target",
        f"target[target_index] = {sign}source[source_index]",
        f"orchestra_halo_copy{'_negated' if negate else ''}",
    )


class Buffers(Protocol):
    """One direction's buffer: where its blocks lie, and the buffer typed per dtype (``dtype.str``)."""

    layout: Layout
    typed: dict[str, Any]


class IndexedPacking:
    """Pack and unpack with one indexed copy per array (and sign): one kernel each on a GPU."""

    def __init__(
        self,
        xp: ModuleType,
        arrays: Sequence[Any],
        sends: Buffers,
        receives: Buffers,
        n_scalars: int,
    ) -> None:
        self.xp = xp
        self.sends, self.receives = sends.typed, receives.typed
        self.packs = pack_copies(xp, arrays, sends.layout)
        self.unpacks = unpack_copies(xp, arrays, receives.layout, n_scalars)
        #: elements each array spans: fixed, since the exchange is keyed by shapes and strides
        self.spans = [element_span(array) for array in arrays]

    def _flat(self, arrays: Sequence[Any]) -> list[Any]:
        return [flat_view(self.xp, array, span) for array, span in zip(arrays, self.spans)]

    def pack(self, arrays: Sequence[Any]) -> None:
        """Fill the send buffer from the arrays."""
        flats = self._flat(arrays)
        for copy in self.packs:
            gather(self.xp, copy, flats[copy.array], self.sends[arrays[copy.array].dtype.str])

    def unpack(self, arrays: Sequence[Any]) -> None:
        """Fill the arrays' halos from the receive buffer."""
        flats = self._flat(arrays)
        for copy in self.unpacks:
            scatter(self.xp, copy, self.receives[arrays[copy.array].dtype.str], flats[copy.array])


def _block_views(arrays: Sequence[Any], buffers: Buffers) -> list[list[Any]]:
    """Per message, per array: the block's view of the buffer, in the sender's orientation."""
    views = []
    for starts, shapes in zip(buffers.layout.block_starts, buffers.layout.block_shapes):
        message = []
        for array, start, shape in zip(arrays, starts, shapes):
            size = int(np.prod(shape))
            message.append(buffers.typed[array.dtype.str][start : start + size].reshape(shape))
        views.append(message)
    return views


class SlicedPacking:
    """Pack and unpack rectangle by rectangle with slices: the fastest way with numpy."""

    def __init__(
        self,
        xp: ModuleType,
        arrays: Sequence[Any],
        sends: Buffers,
        receives: Buffers,
        n_scalars: int,
    ) -> None:
        self.xp = xp
        #: (which array, its block's view, the slices it comes from)
        self.sends = [
            (a, view, transfer.source)
            for (_, _, transfers), views in zip(sends.layout.groups, _block_views(arrays, sends))
            for a, (view, transfer) in enumerate(zip(views, transfers))
        ]
        #: per message, per array: (the received block, turned; negated or not; the halo slices)
        self.receives = []
        for (_, _, transfers), views in zip(receives.layout.groups, _block_views(arrays, receives)):
            n = transfers[0].rotations
            turned = [xp.rot90(v, n, axes=(0, 1)) if n else v for v in views]
            fills = []
            for a, transfer in enumerate(transfers):
                source, negate = _received_component(a, n_scalars, n)
                fills.append((turned[source], negate, transfer.target))
            self.receives.append(fills)

    def pack(self, arrays: Sequence[Any]) -> None:
        """Fill the send buffer from the arrays."""
        for a, view, where in self.sends:
            view[...] = arrays[a][where]

    def unpack(self, arrays: Sequence[Any]) -> None:
        """Fill the arrays' halos from the receive buffer."""
        for fills in self.receives:
            for array, (block, negate, where) in zip(arrays, fills):
                if negate:
                    # Not ``negative(block, out=array[where])``: numpy 2.4.6 computes that wrongly when the
                    # input steps 8 elements and the output is strided (found while testing channel walls).
                    array[where] = self.xp.negative(block)
                else:
                    array[where] = block
