"""Fourth-order hyperdiffusion as two flux-form Laplacians.

The first Laplacian is computed on the compute domain plus one ring of halo
cells, so the second needs no halo exchange. Beyond a tile edge, the halo
cells next to a cube corner have no neighbour in the corner square: three
cells meet there, and across the face that borders the corner square lies
the other edge's halo cell. Horizontal regions at the cube corners read that
cell instead (the grid's face weights at those faces already use it).
"""

from gt4py.cartesian.gtscript import PARALLEL, computation, horizontal, interval, region

from driver.stencils.types import FloatField, FloatFieldIJ


def laplacian(q: FloatField, x_weight: FloatFieldIJ, y_weight: FloatFieldIJ, rarea: FloatFieldIJ, lap: FloatField):
    """``lap = (1/A) sum_faces (q_neighbour - q) l / d``; run on the compute domain plus one ring."""
    from __externals__ import east, north, south, west

    with computation(PARALLEL), interval(...):
        flux_w = (q - q[-1, 0, 0]) * x_weight
        flux_e = (q[1, 0, 0] - q) * x_weight[1, 0]
        flux_s = (q - q[0, -1, 0]) * y_weight
        flux_n = (q[0, 1, 0] - q) * y_weight[0, 1]
        # the domain starts and ends one cell into the halo: west is halo cell -1
        with horizontal(region[west, south + 1]):
            flux_s = (q - q[1, -1, 0]) * y_weight
        with horizontal(region[west + 1, south]):
            flux_w = (q - q[-1, 1, 0]) * x_weight
        with horizontal(region[east, south + 1]):
            flux_s = (q - q[-1, -1, 0]) * y_weight
        with horizontal(region[east - 1, south]):
            flux_e = (q[1, 1, 0] - q) * x_weight[1, 0]
        with horizontal(region[west, north - 1]):
            flux_n = (q[1, 1, 0] - q) * y_weight[0, 1]
        with horizontal(region[west + 1, north]):
            flux_w = (q - q[-1, -1, 0]) * x_weight
        with horizontal(region[east, north - 1]):
            flux_n = (q[-1, 1, 0] - q) * y_weight[0, 1]
        with horizontal(region[east - 1, north]):
            flux_e = (q[1, -1, 0] - q) * x_weight[1, 0]
        lap = (flux_e - flux_w + flux_n - flux_s) * rarea


def hyperdiffusion_tendency(
    lap: FloatField,
    x_weight: FloatFieldIJ,
    y_weight: FloatFieldIJ,
    rarea: FloatFieldIJ,
    tendency: FloatField,
    da_min: float,
):
    """``tendency -= K del4 q`` with ``K = strength * da_min**2`` (``strength`` external, 1/s)."""
    from __externals__ import strength

    with computation(PARALLEL), interval(...):
        del4 = (
            (lap[1, 0, 0] - lap) * x_weight[1, 0]
            - (lap - lap[-1, 0, 0]) * x_weight
            + (lap[0, 1, 0] - lap) * y_weight[0, 1]
            - (lap - lap[0, -1, 0]) * y_weight
        ) * rarea
        tendency = tendency - strength * da_min * da_min * del4
