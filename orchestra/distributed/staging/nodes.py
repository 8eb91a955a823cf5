"""Which ranks share a node: an MPI shared-memory split, made once per communicator.

``ORCHESTRA_RANKS_PER_NODE=N`` splits each real node further into groups of
``N`` consecutive ranks, so tests on one machine can pretend to run on
several nodes.
"""

from __future__ import annotations

import os
from typing import Any

from orchestra.errors import ConfigurationError

RANKS_PER_NODE_VARIABLE = "ORCHESTRA_RANKS_PER_NODE"

#: Node communicators made so far, by id of the parent communicator (the parent is kept alive with it).
_NODE_COMMS: dict[int, tuple[Any, Any, int]] = {}


def ranks_per_node_from_environment() -> int:
    """``ORCHESTRA_RANKS_PER_NODE`` as a positive int; 0 when unset (real nodes)."""
    text = os.environ.get(RANKS_PER_NODE_VARIABLE, "").strip()
    if not text:
        return 0
    if not text.isdigit() or int(text) < 1:
        raise ConfigurationError(
            f"{RANKS_PER_NODE_VARIABLE}={text!r}: expected a positive number of ranks per pretend node, "
            "or unset it to group ranks by the node they run on"
        )
    return int(text)


def node_communicator(mpi_comm: Any) -> Any:
    """The communicator of the ranks on this rank's node (collective over ``mpi_comm`` on first use).

    Every rank of ``mpi_comm`` must call it at the same point the first time;
    later calls return the same communicator without communicating, unless
    ``ORCHESTRA_RANKS_PER_NODE`` changed in between (tests), which all ranks see alike.
    """
    from mpi4py import MPI

    ranks_per_node = ranks_per_node_from_environment()
    known = _NODE_COMMS.get(id(mpi_comm))
    if known is not None and known[0] is mpi_comm and known[2] == ranks_per_node:
        return known[1]
    node = mpi_comm.Split_type(MPI.COMM_TYPE_SHARED, key=mpi_comm.Get_rank())
    if ranks_per_node:
        pretend = node.Split(color=node.Get_rank() // ranks_per_node, key=node.Get_rank())
        node.Free()
        node = pretend
    _NODE_COMMS[id(mpi_comm)] = (mpi_comm, node, ranks_per_node)
    return node
