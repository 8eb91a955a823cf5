"""An MPI communicator that knows the decomposition.

:class:`Communicator` wraps an mpi4py communicator and a
:class:`~orchestra.comm.partitioner.Partitioner` whose ``total_ranks`` must
equal the communicator's size. It offers the collectives a model needs
(barrier, broadcast, allgather), gather and scatter of whole tiles for output
and tests, the non-blocking point-to-point calls the halo updater uses, and
job-wide abort on error.

Fields are local arrays ``[i, j(, k...)]`` with ``n_halo`` ghost layers on
each horizontal side; gathers and scatters move compute domains only.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any, Callable, Iterator, Optional, Sequence

import numpy as np

from orchestra.calls.callbacks import dace_inhibitor
from orchestra.comm.abort import abort_on_exception
from orchestra.comm.array_module import array_module, to_host
from orchestra.comm.errors import DecompositionError
from orchestra.comm.partitioner import Partitioner

if TYPE_CHECKING:
    from orchestra.comm.halo import HaloUpdater
    from orchestra.comm.vector_interface import (
        VectorInterfaceRequest,
        VectorInterfaceSynchronizer,
    )
    from orchestra.comm.walls import Walls


class Communicator:
    """``mpi_comm`` (an mpi4py communicator) decomposed by ``partitioner``."""

    def __init__(self, mpi_comm: Any, partitioner: Partitioner) -> None:
        size = mpi_comm.Get_size()
        if size != partitioner.total_ranks:
            raise DecompositionError(
                f"{partitioner!r} needs {partitioner.total_ranks} ranks but the MPI communicator "
                f"has {size}; run with mpirun -n {partitioner.total_ranks} or change the layout"
            )
        self._comm = mpi_comm
        self._partitioner = partitioner
        self._tile_comm: Any = None
        self._interfaces: Optional[VectorInterfaceSynchronizer] = None

    @classmethod
    def world(cls, partitioner: Partitioner) -> Communicator:
        """A communicator over ``MPI.COMM_WORLD``."""
        from mpi4py import MPI

        return cls(MPI.COMM_WORLD, partitioner)

    @property
    def mpi_comm(self) -> Any:
        """The wrapped mpi4py communicator."""
        return self._comm

    @property
    def rank(self) -> int:
        """This process's rank."""
        return self._comm.Get_rank()

    @property
    def size(self) -> int:
        """Number of ranks."""
        return self._comm.Get_size()

    @property
    def partitioner(self) -> Partitioner:
        """The decomposition."""
        return self._partitioner

    @property
    def tile_index(self) -> int:
        """The tile this rank works on."""
        return self._partitioner.tile_index(self.rank)

    def __repr__(self) -> str:
        return f"Communicator(rank={self.rank}, size={self.size}, {self._partitioner!r})"

    # --- collectives -----------------------------------------------------------------

    def barrier(self) -> None:
        """Wait for every rank."""
        self._comm.Barrier()

    def bcast(self, obj: Any, root: int = 0) -> Any:
        """``obj`` from ``root`` on every rank (pickled; for small objects)."""
        return self._comm.bcast(obj, root=root)

    def allgather(self, obj: Any) -> list[Any]:
        """Every rank's ``obj``, in rank order, on every rank (pickled)."""
        return self._comm.allgather(obj)

    def gather_results(self, compute: Callable[[], Any], root: int = 0) -> Optional[list[Any]]:
        """``compute()`` on every rank, the results in rank order on ``root``; None on the other ranks.

        Every rank reaches the collective even if ``compute`` raised: a rank
        that raised raises its error after it, and ``root`` raises one
        RuntimeError naming the failed ranks, so no rank waits for one that
        failed.
        """
        try:
            outcome: tuple[bool, Any] = (True, compute())
        except Exception as error:  # sent to root as text; raised here after the collective
            outcome, failure = (False, f"{type(error).__name__}: {error}"), error
        gathered = self._comm.gather(outcome, root=root)
        if not outcome[0]:
            raise failure
        if gathered is None:
            return None
        failed = {rank: text for rank, (ok, text) in enumerate(gathered) if not ok}
        if failed:
            raise RuntimeError("; ".join(f"rank {rank}: {text}" for rank, text in sorted(failed.items())))
        return [result for _ok, result in gathered]

    def duplicate(self) -> Communicator:
        """A communicator with its own message space (collective: every rank must call)."""
        return Communicator(self._comm.Dup(), self._partitioner)

    # --- whole tiles -------------------------------------------------------------------

    def _tile_size(self, field: Any, n_halo: int) -> tuple[int, int]:
        nx = field.shape[0] - 2 * n_halo
        ny = field.shape[1] - 2 * n_halo
        if nx < 1 or ny < 1:
            raise DecompositionError(
                f"field of shape {field.shape} has no compute domain with n_halo={n_halo}"
            )
        return nx * self._partitioner.layout[0], ny * self._partitioner.layout[1]

    @staticmethod
    def _interior(field: Any, n_halo: int) -> np.ndarray:
        return np.ascontiguousarray(
            to_host(field[n_halo : field.shape[0] - n_halo, n_halo : field.shape[1] - n_halo])
        )

    def _assemble(
        self, pieces: Sequence[tuple[int, np.ndarray]], n_tile: tuple[int, int], tiles: int
    ) -> np.ndarray:
        first = pieces[0][1]
        out = np.empty((tiles, *n_tile, *first.shape[2:]), dtype=first.dtype)
        for rank, piece in pieces:
            (i0, i1), (j0, j1) = self._partitioner.subdomain_extent(rank, *n_tile)
            out[self._partitioner.tile_index(rank) % tiles, i0:i1, j0:j1] = piece
        return out

    def _get_tile_comm(self) -> Any:
        if self._tile_comm is None:
            self._tile_comm = self._comm.Split(
                self.tile_index, self._partitioner.rank_within_tile(self.rank)
            )
        return self._tile_comm

    def gather_tile(self, field: Any, n_halo: int, root: int = 0) -> Optional[np.ndarray]:
        """This tile's compute domains as one ``(nx_tile, ny_tile, ...)`` numpy array.

        Returned on the rank of the tile with ``rank_within_tile == root``; None
        elsewhere. Collective over all ranks (each tile gathers separately);
        the first call splits the communicator by tile.
        """
        tile_comm = self._get_tile_comm()
        pieces = tile_comm.gather((self.rank, self._interior(field, n_halo)), root=root)
        if pieces is None:
            return None
        return self._assemble(pieces, self._tile_size(field, n_halo), tiles=1)[0]

    def scatter_tile(self, tile_field: Any, n_halo: int, out: Any = None, root: int = 0) -> Any:
        """Split ``tile_field`` (given on the tile's ``root``) into the compute domains of its ranks.

        Writes into the interior of ``out`` when given (its halo is left as it
        is) and returns it; otherwise returns a new numpy array with a zero
        halo. Collective over all ranks.
        """
        tile_comm = self._get_tile_comm()
        pieces = None
        if tile_comm.Get_rank() == root:
            tile_field = to_host(tile_field)
            first_rank = (
                self.tile_index * self._partitioner.ranks_per_tile
            )  # tile_comm rank k is this + k
            pieces = []
            for rank in range(first_rank, first_rank + self._partitioner.ranks_per_tile):
                (i0, i1), (j0, j1) = self._partitioner.subdomain_extent(rank, *tile_field.shape[:2])
                pieces.append(np.ascontiguousarray(tile_field[i0:i1, j0:j1]))
        piece = tile_comm.scatter(pieces, root=root)
        if out is None:
            h = n_halo
            out = np.zeros(
                (piece.shape[0] + 2 * h, piece.shape[1] + 2 * h, *piece.shape[2:]), piece.dtype
            )
        xp = array_module(out)
        out[n_halo : out.shape[0] - n_halo, n_halo : out.shape[1] - n_halo] = xp.asarray(piece)
        return out

    def gather(self, field: Any, n_halo: int, root: int = 0) -> Optional[np.ndarray]:
        """Every rank's compute domain in one ``(n_tiles, nx_tile, ny_tile, ...)`` array on ``root``.

        None on the other ranks. Collective; meant for output and tests.
        """
        pieces = self._comm.gather((self.rank, self._interior(field, n_halo)), root=root)
        if pieces is None:
            return None
        return self._assemble(
            pieces, self._tile_size(field, n_halo), tiles=self._partitioner.n_tiles
        )

    # --- point to point ----------------------------------------------------------------

    def isend(self, buffer: Any, dest: int, tag: int) -> Any:
        """Start sending a contiguous ``buffer`` to ``dest``; returns an MPI request."""
        return self._comm.Isend(buffer, dest=dest, tag=tag)

    def irecv(self, buffer: Any, source: int, tag: int) -> Any:
        """Start receiving into a contiguous ``buffer`` from ``source``; returns an MPI request."""
        return self._comm.Irecv(buffer, source=source, tag=tag)

    @staticmethod
    def waitall(requests: Sequence[Any]) -> None:
        """Complete all ``requests``."""
        if requests:
            from mpi4py import MPI

            MPI.Request.Waitall(list(requests))

    @staticmethod
    def wait_received(requests: Sequence[Any]) -> list[int]:
        """Complete receive ``requests``; the bytes each message held.

        A message larger than its buffer is not an error here (MPI refuses it
        as truncated, ``MPI_ERR_IN_STATUS``, naming neither rank nor array):
        its size is returned like the others, for the caller to compare with
        what it expected and say which rank sent what. Other errors are raised.
        """
        if not requests:
            return []
        from mpi4py import MPI

        statuses = [MPI.Status() for _ in requests]
        try:
            MPI.Request.Waitall(list(requests), statuses)
        except MPI.Exception as error:
            codes = [status.Get_error() for status in statuses]
            known = (MPI.SUCCESS, MPI.ERR_TRUNCATE, MPI.ERR_PENDING)
            if error.Get_error_class() != MPI.ERR_IN_STATUS or any(code not in known for code in codes):
                raise
            sizes = [status.Get_count(MPI.BYTE) for status in statuses]
            pending = [k for k, code in enumerate(codes) if code == MPI.ERR_PENDING]  # not completed yet
            for k, size in zip(pending, Communicator.wait_received([requests[k] for k in pending])):
                sizes[k] = size
            return sizes
        return [status.Get_count(MPI.BYTE) for status in statuses]

    # --- halo and failure --------------------------------------------------------------

    def halo_updater(
        self,
        n_halo: int,
        walls: Optional[Walls] = None,
        domain: Optional[tuple[int, int]] = None,
    ) -> HaloUpdater:
        """A :class:`~orchestra.comm.halo.HaloUpdater` (collective: every rank must call).

        ``walls``: the rule for ghost rows beyond channel walls (:mod:`orchestra.comm.walls`).
        ``domain``: this rank's compute domain ``(nx, ny)`` in cells, needed to exchange
        interface-staggered plain arrays (:mod:`orchestra.comm.staggering`).
        """
        from orchestra.comm.halo import HaloUpdater

        return HaloUpdater(self, n_halo, walls=walls, domain=domain)

    @dace_inhibitor
    def start_synchronize_vector_interfaces(
        self, x: Any, y: Any, n_halo: Optional[int] = None
    ) -> VectorInterfaceRequest:
        """Start making the edge points shared with neighbours agree; ``.wait()`` the result.

        ``x`` is ``[i cell, j interface]``, ``y`` ``[i interface, j cell]`` (arrays
        or Quantity-like objects with ``.data``); each rank's south edge of ``x``
        and west edge of ``y`` overwrite the neighbours' copies of those points,
        turned across rotated tile edges (:mod:`orchestra.comm.vector_interface`).
        ``n_halo`` is needed for plain arrays; Quantity-likes give it by their
        ``origin``. Collective: every rank calls it, in the same order.
        """
        if self._interfaces is None:
            from orchestra.comm.vector_interface import VectorInterfaceSynchronizer

            self._interfaces = VectorInterfaceSynchronizer(self)
        return self._interfaces.start(x, y, n_halo)

    @dace_inhibitor
    def synchronize_vector_interfaces(self, x: Any, y: Any, n_halo: Optional[int] = None) -> None:
        """:meth:`start_synchronize_vector_interfaces` and wait (blocking)."""
        self.start_synchronize_vector_interfaces(x, y, n_halo).wait()

    def abort(self, exit_code: int = 1) -> None:
        """End every rank of the job now."""
        self._comm.Abort(exit_code)

    @contextlib.contextmanager
    def abort_on_exception(self) -> Iterator[None]:
        """Print ``rank N: <traceback>`` and abort the whole job if the block raises."""
        with abort_on_exception(self._comm):
            yield
