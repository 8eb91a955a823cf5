"""MPI worker (6 ranks, one GPU): device halo exchanges while the GPU lags behind the host.

Each round fills the compute domain with values of the round, starts the
exchange, queues slow device work, and waits; the halos it received are
copied into a device history. The same rounds run on numpy arrays through a
second updater. Queued device work makes the copy of each received message
from its pinned host buffer run late: an exchange that reused that buffer
before the copy ran would put the next round's values into the halos.
Rank 0 prints ``OK`` when every rank's history equals the numpy one.
"""

import cupy
import numpy as np

from orchestra.comm import Communicator, CubedSpherePartitioner, TilePartitioner

N, HALO, NZ, ROUNDS = 48, 3, 4, 12

if __name__ == "__main__":
    comm = Communicator.world(CubedSpherePartitioner(TilePartitioner((1, 1))))
    with comm.abort_on_exception():
        shape = (N + 2 * HALO, N + 2 * HALO, NZ)
        compute = (slice(HALO, HALO + N), slice(HALO, HALO + N))
        on_device, on_host = cupy.zeros(shape), np.zeros(shape)
        device_halo, host_halo = comm.halo_updater(HALO), comm.halo_updater(HALO)
        device_history, host_history = cupy.empty((ROUNDS, *shape)), np.empty((ROUNDS, *shape))
        busy = cupy.full((1024, 1024), 1.0 / 1024)  # a fixed point of busy @ busy
        for r in range(ROUNDS):
            values = comm.rank * 1e6 + r * 1e3 + np.arange(N * N * NZ, dtype=np.float64).reshape(N, N, NZ)
            on_host[compute] = values
            host_halo.update(on_host)
            host_history[r] = on_host
            on_device[compute] = cupy.asarray(values)
            device_halo.start(on_device)
            for _ in range(20):  # milliseconds of device work queued ahead of the halo copies
                busy = busy @ busy
            device_halo.wait()
            device_history[r] = on_device
        different = int(np.count_nonzero(device_history.get() != host_history))
        failures = comm.allgather(different)
        if any(failures):
            raise AssertionError(f"device halos differ from the host's: cells per rank {failures}")
        if comm.rank == 0:
            print("OK", flush=True)
