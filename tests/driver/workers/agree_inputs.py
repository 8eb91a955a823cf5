"""Under mpirun: rank 2 alone cannot read an input; every rank must exit 2 and rank 0 print one line naming rank 2."""

import sys

from mpi4py import MPI

from driver.inputs import InputError, agree_on_error

world = MPI.COMM_WORLD
message = "restart error: /data/r.npz: no such restart file" if world.Get_rank() == 2 else None
try:
    agree_on_error(world, message)
except InputError as error:
    if world.Get_rank() == 0:
        print(error, flush=True)
    sys.exit(2)
sys.exit(0)
