"""Halo messages of another size than the receiving rank expects: the error that names both ranks.

Each rank of an exchange computes the size of every message from its own
arrays. When a neighbour passes arrays of another shape (one more vertical
level, a horizontal size that leaves another compute domain) or dtype, MPI
refuses a larger message as truncated (``MPI_ERR_IN_STATUS``, naming neither
rank nor array, and only on the receiving side) and takes a smaller one
silently, leaving stale values in the halo. Nothing on one rank can tell
beforehand: each rank's arrays agree with each other and with its partitioner.

So :meth:`~orchestra.comm.halo.HaloUpdater.wait` compares the sizes of the
messages it received with the sizes it expected (one list comparison per
call) and raises :func:`size_mismatch` on every rank that received a message
of another size. The messages and their number do not depend on the arrays'
shapes, so every message still arrives and nothing hangs; under MPI the error
ends the job with one message (:mod:`orchestra.comm.abort`).
"""

from __future__ import annotations

from typing import Any, Sequence

from orchestra.comm.errors import DecompositionError


def message_sizes(messages: Sequence[Any]) -> list[int]:
    """The bytes each of ``messages`` (:class:`~orchestra.comm.halo_packing.Message`) holds."""
    return [message.stop - message.start for message in messages]


def size_mismatch(
    rank: int, arrays: Sequence[Any], peers: Sequence[int], expected: Sequence[int], received: Sequence[int]
) -> DecompositionError:
    """The error for messages from ``peers`` that held ``received`` bytes where ``rank``'s ``arrays`` expect ``expected``."""
    differing = [(peer, want, got) for peer, want, got in zip(peers, expected, received) if want != got]
    peer, want, got = differing[0]
    others = sorted({p for p, _, _ in differing} - {peer})
    also = f" (rank(s) {', '.join(map(str, others))} too)" if others else ""
    shapes = ", ".join(f"{tuple(a.shape)} {a.dtype}" for a in arrays)
    return DecompositionError(
        f"halo update on rank {rank}: rank {peer} sent {got} bytes where rank {rank}'s arrays expect "
        f"{want}{also}: the arrays rank {peer} passed to this update differ in shape or dtype from rank "
        f"{rank}'s, which are {shapes}. Every rank must pass the same fields in the same order, with the "
        f"same dtype and the same shape apart from its own compute domain (the same number of vertical "
        f"levels); check how rank {peer} (or rank {rank}) allocates them"
    )
