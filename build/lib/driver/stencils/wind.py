"""Wind components in each cell's basis to 3-D Cartesian vectors."""

from gt4py.cartesian.gtscript import PARALLEL, computation, interval

from driver.stencils.types import FloatField, FloatFieldIJ


def wind_to_cartesian(
    u: FloatField,
    v: FloatField,
    basis_i_x: FloatFieldIJ,
    basis_i_y: FloatFieldIJ,
    basis_i_z: FloatFieldIJ,
    basis_j_x: FloatFieldIJ,
    basis_j_y: FloatFieldIJ,
    basis_j_z: FloatFieldIJ,
    vx: FloatField,
    vy: FloatField,
    vz: FloatField,
):
    """``V = u e_i + v e_j``, componentwise."""
    with computation(PARALLEL), interval(...):
        vx = u * basis_i_x + v * basis_j_x
        vy = u * basis_i_y + v * basis_j_y
        vz = u * basis_i_z + v * basis_j_z
