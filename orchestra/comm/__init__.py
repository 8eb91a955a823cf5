"""Communication: partitioners, the MPI communicator, halo updates.

Conventions (fixed; other modules rely on them):

* Fields are local arrays ``[i, j(, k...)]``, cell-centred, with ``n_halo``
  ghost layers on each horizontal side: shape ``(nx + 2 n_halo, ny + 2 n_halo, ...)``.
  Fields on cell interfaces have one more point along that axis
  (:mod:`orchestra.comm.staggering`; halo updates need ``domain=(nx, ny)`` for them).
* Cube geometry and tile connectivity: :mod:`orchestra.comm.cube`.
* Rank numbering, neighbours and rotations: :mod:`orchestra.comm.partitioner`.
* Periodic and channel domains: :mod:`orchestra.comm.periodic`; channel walls:
  :mod:`orchestra.comm.walls`.
* Corner handling and vector rotation in halo updates: :mod:`orchestra.comm.halo`.
* Interface-staggered vectors (``Communicator.synchronize_vector_interfaces``):
  :mod:`orchestra.comm.vector_interface`.

Importing this package does not import mpi4py (MPI starts at the first
:meth:`Communicator.world` or abort helper) nor dace.
"""

from orchestra.comm.abort import abort_on_exception, install_mpi_excepthook
from orchestra.comm.callback import CallbackHaloExchanger
from orchestra.comm.communicator import Communicator
from orchestra.comm.cube import (
    Edge,
    EdgeLink,
    cube_connectivity,
    edge_link,
    tile_frame,
    tile_points,
    tile_tangents,
)
from orchestra.comm.errors import DecompositionError, HaloExchangeError
from orchestra.comm.halo import HaloUpdater
from orchestra.comm.index_map import IndexMap
from orchestra.comm.periodic import ChannelPartitioner, PeriodicTilePartitioner
from orchestra.comm.partitioner import (
    CubedSpherePartitioner,
    Direction,
    Neighbour,
    Partitioner,
    TileEdges,
    TilePartitioner,
)
from orchestra.comm.vector_interface import VectorInterfaceRequest, VectorInterfaceSynchronizer
from orchestra.comm.walls import Walls

__all__ = [
    "CallbackHaloExchanger",
    "ChannelPartitioner",
    "Communicator",
    "CubedSpherePartitioner",
    "DecompositionError",
    "Direction",
    "Edge",
    "EdgeLink",
    "HaloExchangeError",
    "HaloUpdater",
    "IndexMap",
    "Neighbour",
    "Partitioner",
    "PeriodicTilePartitioner",
    "TileEdges",
    "TilePartitioner",
    "VectorInterfaceRequest",
    "VectorInterfaceSynchronizer",
    "Walls",
    "abort_on_exception",
    "cube_connectivity",
    "edge_link",
    "install_mpi_excepthook",
    "tile_frame",
    "tile_points",
    "tile_tangents",
]
