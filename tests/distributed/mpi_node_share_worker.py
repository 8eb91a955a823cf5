"""Each rank prints how many ranks share its (pretend) node and how many of the given builders are there.

    mpirun -n 4 python tests/distributed/mpi_node_share_worker.py 0 3   # builders: ranks 0 and 3
"""

import sys

from mpi4py import MPI

from orchestra.pipeline.lowering_processes import node_share

builders = [int(rank) for rank in sys.argv[1:]]
ranks_on_node, builders_on_node = node_share(MPI.COMM_WORLD, builders)
print(f"rank={MPI.COMM_WORLD.Get_rank()} ranks_on_node={ranks_on_node} builders_on_node={builders_on_node}", flush=True)
