"""An mpi4py communicator that records every call made through it and this rank's bytes.

Contract: :class:`MeteredComm` offers only the few operations the build
coordinator (:mod:`orchestra.distributed.coordinator`) needs, and appends one
:class:`Transfer` per call to :attr:`MeteredComm.traffic`, so a test or a
benchmark can read how many calls and bytes a rank spent. Buffers
(``Allreduce``, ``Iallreduce``) count their ``nbytes``; objects count their
pickled size. With ``comm=None`` (one process) every operation is a local
call and nothing is recorded.
"""

from __future__ import annotations

import dataclasses
import pickle
from typing import Any, Callable, Optional

import numpy as np

#: Tag of the point-to-point messages (the builders' requests to rank 0).
MESSAGE_TAG = 0x4F52


@dataclasses.dataclass(frozen=True)
class Transfer:
    """One communication call on this rank.

    ``sent`` and ``received`` are this rank's payload bytes; ``received`` is
    None where it is not known without pickling every rank's object again
    (an ``allgather``).
    """

    operation: str  # "Allreduce", "Iallreduce", "Ibarrier", "Send", "Recv", "allgather", "bcast"
    step: str
    sent: int
    received: Optional[int]


class MeteredComm:
    """``comm`` (an mpi4py communicator, or None for one process) with a record of its traffic."""

    def __init__(self, comm: Any) -> None:
        self.comm = comm
        self.traffic: list[Transfer] = []

    @property
    def rank(self) -> int:
        return 0 if self.comm is None else self.comm.Get_rank()

    @property
    def size(self) -> int:
        return 1 if self.comm is None else self.comm.Get_size()

    def _note(self, operation: str, step: str, sent: int, received: Optional[int]) -> None:
        self.traffic.append(Transfer(operation, step, sent, received))

    def allreduce_min(self, values: np.ndarray, step: str) -> np.ndarray:
        """The elementwise minimum of ``values`` over all ranks."""
        if self.comm is None:
            return values.copy()
        from mpi4py import MPI

        result = np.empty_like(values)
        self.comm.Allreduce(values, result, op=MPI.MIN)
        self._note("Allreduce", step, values.nbytes, result.nbytes)
        return result

    def min_when_done(self, value: int, step: str, wait: Callable[[Any], None]) -> int:
        """The minimum of ``value`` over all ranks, as a non-blocking reduction that ``wait(request)`` completes."""
        if self.comm is None:
            return value
        from mpi4py import MPI

        mine = np.array([value], dtype=np.int64)
        result = np.empty_like(mine)
        wait(self.comm.Iallreduce(mine, result, op=MPI.MIN))
        self._note("Iallreduce", step, mine.nbytes, result.nbytes)
        return int(result[0])

    def barrier_when_done(self, step: str, wait: Callable[[Any], None]) -> None:
        """A non-blocking barrier that ``wait(request)`` completes."""
        if self.comm is not None:
            wait(self.comm.Ibarrier())
            self._note("Ibarrier", step, 0, 0)

    def allgather(self, value: Any, step: str) -> list[Any]:
        """Every rank's ``value`` on every rank (grows with the job: for details only)."""
        if self.comm is None:
            return [value]
        gathered = self.comm.allgather(value)
        self._note("allgather", step, len(pickle.dumps(value)), None)
        return gathered

    def bcast(self, value: Any, root: int, step: str) -> Any:
        """``value`` of ``root`` on every rank."""
        if self.comm is None:
            return value
        value = self.comm.bcast(value, root=root)
        size = len(pickle.dumps(value))
        here = self.rank == root
        self._note("bcast", step, size if here else 0, 0 if here else size)
        return value

    def send(self, value: Any, dest: int, step: str) -> None:
        """Send ``value`` (pickled) to ``dest``; it takes it with :meth:`receive`."""
        from mpi4py import MPI

        data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        self.comm.Send([data, MPI.BYTE], dest=dest, tag=MESSAGE_TAG)
        self._note("Send", step, len(data), 0)

    def receive(self, source: int, step: str) -> Any:
        """The next value :meth:`send` sent from ``source`` to this rank."""
        from mpi4py import MPI

        status = MPI.Status()
        self.comm.Probe(source=source, tag=MESSAGE_TAG, status=status)
        data = bytearray(status.Get_count(MPI.BYTE))
        self.comm.Recv([data, MPI.BYTE], source=source, tag=MESSAGE_TAG)
        self._note("Recv", step, 0, len(data))
        return pickle.loads(data)
