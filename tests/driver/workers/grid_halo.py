"""MPI worker: halo-updated geometry equals the geometry computed for the halo.

Usage: python grid_halo.py N_TILE LAYOUT N_HALO
Checks on every rank (exit code 0 when all hold):
* scalar halo update of centre coordinates reproduces the locally computed
  halo geometry bit for bit, and of cell areas to round-off (corner squares
  at cube corners excluded);
* a wind (u, v) updated as a vector pair, expressed in the halo cells' own
  basis, equals its Cartesian components updated as scalars, bit for bit
  (the basis turns with the tiles' index axes exactly as halo updates turn
  vector components);
* the total area of the sphere is 4 pi R^2 to round-off.
"""

import sys

import numpy as np
from mpi4py import MPI

from orchestra.comm import Communicator, CubedSpherePartitioner, HaloUpdater, TilePartitioner, abort_on_exception

from driver.constants import RADIUS
from driver.grid import GridGeometry, Subdomain


def main() -> None:
    n_tile, layout, n_halo = (int(a) for a in sys.argv[1:4])
    partitioner = CubedSpherePartitioner(TilePartitioner((layout, layout)))
    comm = Communicator.world(partitioner)
    sub = Subdomain.of_rank(partitioner, comm.rank, n_tile, n_halo)
    geo = GridGeometry.build(sub)
    halo = HaloUpdater(comm, n_halo)
    real = geo.real_cell
    inner = np.zeros(real.shape, bool)
    inner[sub.compute] = True

    def exchanged(values: np.ndarray) -> np.ndarray:
        out = np.where(inner, values, np.nan)
        halo.update(out)
        return out

    # Areas sum spherical triangles whose vertex order turns with the tile: round-off only.
    area = exchanged(geo.area)
    area_error = np.max(np.abs(area[real] / geo.area[real] - 1))
    assert area_error < 1e-13, f"rank {comm.rank}: halo areas differ by {area_error:.1e} (relative)"
    for axis in range(3):
        centre = exchanged(geo.centres[..., axis])
        assert np.array_equal(centre[real], geo.centres[..., axis][real]), f"rank {comm.rank}: centre differs"

    # A wind field: (u, v) in each cell's basis. Its halo, updated as a vector
    # pair and turned into Cartesian vectors with the halo cells' basis, must
    # equal the Cartesian components updated as scalars.
    x, y = np.meshgrid(np.arange(area.shape[0]), np.arange(area.shape[1]), indexing="ij")
    u = np.where(inner, np.cos(0.7 * x + 0.3 * y + comm.rank), np.nan)
    v = np.where(inner, np.sin(0.2 * x - 0.5 * y + 2 * comm.rank), np.nan)
    cartesian = u[..., None] * geo.basis_i + v[..., None] * geo.basis_j
    halo.update_vector(u, v)
    from_vector = u[..., None] * geo.basis_i + v[..., None] * geo.basis_j
    for axis in range(3):
        from_scalar = exchanged(cartesian[..., axis])
        assert np.array_equal(from_vector[..., axis][real], from_scalar[real]), (
            f"rank {comm.rank}: vector halo differs by {np.nanmax(np.abs(from_vector[..., axis] - from_scalar)[real])}"
        )

    total = sum(comm.allgather(float(geo.compute(geo.area).sum())))
    error = abs(total / (4 * np.pi * RADIUS**2) - 1)
    assert error < 1e-13, f"total area relative error {error}"
    if comm.rank == 0:
        print(f"grid halo OK: C{n_tile}, layout {layout}, n_halo {n_halo}, area error {error:.1e}")


if __name__ == "__main__":
    with abort_on_exception(MPI.COMM_WORLD):
        main()
