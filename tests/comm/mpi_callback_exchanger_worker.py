"""Worker: CallbackHaloExchanger on a dict state and on an object, update() and interface() (NDSL's
WrappedHaloUpdater forms), each equal to the direct call on copies of the same arrays.
Usage: mpirun -n 6 python mpi_callback_exchanger_worker.py
"""

from types import SimpleNamespace

import numpy as np

from orchestra.comm import CallbackHaloExchanger, Communicator, CubedSpherePartitioner, TilePartitioner

NX, H = 4, 2


def fields(rank: int) -> dict:
    rng = np.random.default_rng(rank)
    return {"q": rng.random((NX + 2 * H, NX + 2 * H, 2)), "u": rng.random((NX + 2 * H, NX + 1 + 2 * H, 2)),
            "v": rng.random((NX + 1 + 2 * H, NX + 2 * H, 2))}


def main() -> None:
    comm = Communicator.world(CubedSpherePartitioner(TilePartitioner((1, 1))))
    with comm.abort_on_exception():
        updater = comm.halo_updater(H, domain=(NX, NX))
        state = fields(comm.rank)
        expected = {name: array.copy() for name, array in state.items()}
        CallbackHaloExchanger(state, ["q"], [("u", "v")], updater=updater).update()   # on a dict
        updater.update(expected["q"])
        updater.update_vector(expected["u"], expected["v"])
        edges = CallbackHaloExchanger(SimpleNamespace(**state), vector_pairs=[("u", "v")], updater=updater, comm=comm)
        edges.interface()                                                               # on an object
        comm.synchronize_vector_interfaces(expected["u"], expected["v"], H)
        for name in state:
            assert np.array_equal(state[name], expected[name]), f"rank {comm.rank}: {name} differs"
        assert not np.array_equal(state["q"], fields(comm.rank)["q"])  # something was exchanged
        try:
            CallbackHaloExchanger(state, ["q"], comm=comm).update()
        except TypeError as error:
            assert "without updater=" in str(error)
        else:
            raise AssertionError("update() without an updater did not fail")
        print(f"OK exchanger rank={comm.rank}", flush=True)


if __name__ == "__main__":
    main()
