"""Face values and fluxes across x-faces (west faces) and y-faces (south faces).

Face values are fourth-order centred interpolations of the two cells on each
side, except near tile edges (horizontal regions), where grid lines kink:

* next to an edge, the four-cell stencil would straddle the kink; the face
  value is the two-cell average;
* on the edge, the two-cell average is second order at the midpoint of the
  chord between the two centres, which lies a fraction of a cell away from
  the face midpoint along the edge; the grid's "kink" weights add the
  along-edge derivative times that offset, from each side's cells before and
  after along the edge (one-sided at a cube corner, a corner region).

The layer depth carried by the mass flux gets an upwind bias that makes it
third order (and dissipative) away from tile edges.

Every face quantity is computed from the two sides' data with the same
formula, on every rank that holds the face: the fluxes that leave one cell
enter its neighbour exactly, so mass is conserved to round-off.
"""

from gt4py.cartesian import gtscript
from gt4py.cartesian.gtscript import PARALLEL, computation, horizontal, interval, region

from driver.stencils.types import FloatField, FloatFieldIJ


@gtscript.function
def centred_fourth_order(q_far_left, q_left, q_right, q_far_right):
    return (7.0 / 12.0) * (q_left + q_right) - (1.0 / 12.0) * (q_far_left + q_far_right)


@gtscript.function
def kinked_average(q_left, q_right, step_left, step_right, weight_left, weight_right):
    """Two-cell average moved along the edge to the face midpoint (see the module docstring)."""
    return 0.5 * (q_left + q_right) + (weight_left * step_left + weight_right * step_right)


@gtscript.function
def upwind_bias(q_far_left, q_left, q_right, q_far_right, normal_velocity):
    """Added to the fourth-order value, gives the third-order upwind-biased one."""
    bias = (q_far_right - 3.0 * q_right + 3.0 * q_left - q_far_left) / 12.0
    return bias if normal_velocity > 0.0 else -bias


def x_face_fluxes(
    h: FloatField,
    vx: FloatField,
    vy: FloatField,
    vz: FloatField,
    bernoulli: FloatField,
    x_length: FloatFieldIJ,
    x_normal_x: FloatFieldIJ,
    x_normal_y: FloatFieldIJ,
    x_normal_z: FloatFieldIJ,
    x_tangent_x: FloatFieldIJ,
    x_tangent_y: FloatFieldIJ,
    x_tangent_z: FloatFieldIJ,
    x_kink_west: FloatFieldIJ,
    x_kink_east: FloatFieldIJ,
    mass_flux: FloatField,
    circulation: FloatField,
    bernoulli_face: FloatField,
):
    """On the west face of each cell: mass flux ``h V.n l``, circulation ``V.t l``, Bernoulli value."""
    from __externals__ import east, north, south, west

    with computation(PARALLEL), interval(...):
        h_face = centred_fourth_order(h[-2, 0, 0], h[-1, 0, 0], h, h[1, 0, 0])
        vx_face = centred_fourth_order(vx[-2, 0, 0], vx[-1, 0, 0], vx, vx[1, 0, 0])
        vy_face = centred_fourth_order(vy[-2, 0, 0], vy[-1, 0, 0], vy, vy[1, 0, 0])
        vz_face = centred_fourth_order(vz[-2, 0, 0], vz[-1, 0, 0], vz, vz[1, 0, 0])
        b_face = centred_fourth_order(bernoulli[-2, 0, 0], bernoulli[-1, 0, 0], bernoulli, bernoulli[1, 0, 0])
        normal_velocity = vx_face * x_normal_x + vy_face * x_normal_y + vz_face * x_normal_z
        h_face = h_face + upwind_bias(h[-2, 0, 0], h[-1, 0, 0], h, h[1, 0, 0], normal_velocity)
        with horizontal(region[west + 1, :], region[east - 1, :]):
            h_face = 0.5 * (h[-1, 0, 0] + h)
            vx_face = 0.5 * (vx[-1, 0, 0] + vx)
            vy_face = 0.5 * (vy[-1, 0, 0] + vy)
            vz_face = 0.5 * (vz[-1, 0, 0] + vz)
            b_face = 0.5 * (bernoulli[-1, 0, 0] + bernoulli)
        with horizontal(region[west, :], region[east, :]):
            h_face = kinked_average(
                h[-1, 0, 0], h, h[-1, 1, 0] - h[-1, -1, 0], h[0, 1, 0] - h[0, -1, 0], x_kink_west, x_kink_east
            )
            vx_face = kinked_average(
                vx[-1, 0, 0], vx, vx[-1, 1, 0] - vx[-1, -1, 0], vx[0, 1, 0] - vx[0, -1, 0], x_kink_west, x_kink_east
            )
            vy_face = kinked_average(
                vy[-1, 0, 0], vy, vy[-1, 1, 0] - vy[-1, -1, 0], vy[0, 1, 0] - vy[0, -1, 0], x_kink_west, x_kink_east
            )
            vz_face = kinked_average(
                vz[-1, 0, 0], vz, vz[-1, 1, 0] - vz[-1, -1, 0], vz[0, 1, 0] - vz[0, -1, 0], x_kink_west, x_kink_east
            )
            b_face = kinked_average(
                bernoulli[-1, 0, 0], bernoulli, bernoulli[-1, 1, 0] - bernoulli[-1, -1, 0],
                bernoulli[0, 1, 0] - bernoulli[0, -1, 0], x_kink_west, x_kink_east,
            )
        # at a cube corner the cells before (south) or after (north) along the edge do not exist
        with horizontal(region[west, south], region[east, south]):
            h_face = kinked_average(
                h[-1, 0, 0], h, h[-1, 1, 0] - h[-1, 0, 0], h[0, 1, 0] - h, x_kink_west, x_kink_east
            )
            vx_face = kinked_average(
                vx[-1, 0, 0], vx, vx[-1, 1, 0] - vx[-1, 0, 0], vx[0, 1, 0] - vx, x_kink_west, x_kink_east
            )
            vy_face = kinked_average(
                vy[-1, 0, 0], vy, vy[-1, 1, 0] - vy[-1, 0, 0], vy[0, 1, 0] - vy, x_kink_west, x_kink_east
            )
            vz_face = kinked_average(
                vz[-1, 0, 0], vz, vz[-1, 1, 0] - vz[-1, 0, 0], vz[0, 1, 0] - vz, x_kink_west, x_kink_east
            )
            b_face = kinked_average(
                bernoulli[-1, 0, 0], bernoulli, bernoulli[-1, 1, 0] - bernoulli[-1, 0, 0],
                bernoulli[0, 1, 0] - bernoulli, x_kink_west, x_kink_east,
            )
        with horizontal(region[west, north], region[east, north]):
            h_face = kinked_average(
                h[-1, 0, 0], h, h[-1, 0, 0] - h[-1, -1, 0], h - h[0, -1, 0], x_kink_west, x_kink_east
            )
            vx_face = kinked_average(
                vx[-1, 0, 0], vx, vx[-1, 0, 0] - vx[-1, -1, 0], vx - vx[0, -1, 0], x_kink_west, x_kink_east
            )
            vy_face = kinked_average(
                vy[-1, 0, 0], vy, vy[-1, 0, 0] - vy[-1, -1, 0], vy - vy[0, -1, 0], x_kink_west, x_kink_east
            )
            vz_face = kinked_average(
                vz[-1, 0, 0], vz, vz[-1, 0, 0] - vz[-1, -1, 0], vz - vz[0, -1, 0], x_kink_west, x_kink_east
            )
            b_face = kinked_average(
                bernoulli[-1, 0, 0], bernoulli, bernoulli[-1, 0, 0] - bernoulli[-1, -1, 0],
                bernoulli - bernoulli[0, -1, 0], x_kink_west, x_kink_east,
            )
        with horizontal(region[west, :], region[west + 1, :], region[east - 1, :], region[east, :]):
            normal_velocity = vx_face * x_normal_x + vy_face * x_normal_y + vz_face * x_normal_z
        mass_flux = h_face * normal_velocity * x_length
        circulation = (vx_face * x_tangent_x + vy_face * x_tangent_y + vz_face * x_tangent_z) * x_length
        bernoulli_face = b_face


def y_face_fluxes(
    h: FloatField,
    vx: FloatField,
    vy: FloatField,
    vz: FloatField,
    bernoulli: FloatField,
    y_length: FloatFieldIJ,
    y_normal_x: FloatFieldIJ,
    y_normal_y: FloatFieldIJ,
    y_normal_z: FloatFieldIJ,
    y_tangent_x: FloatFieldIJ,
    y_tangent_y: FloatFieldIJ,
    y_tangent_z: FloatFieldIJ,
    y_kink_south: FloatFieldIJ,
    y_kink_north: FloatFieldIJ,
    mass_flux: FloatField,
    circulation: FloatField,
    bernoulli_face: FloatField,
):
    """On the south face of each cell: as :func:`x_face_fluxes`, along j."""
    from __externals__ import east, north, south, west

    with computation(PARALLEL), interval(...):
        h_face = centred_fourth_order(h[0, -2, 0], h[0, -1, 0], h, h[0, 1, 0])
        vx_face = centred_fourth_order(vx[0, -2, 0], vx[0, -1, 0], vx, vx[0, 1, 0])
        vy_face = centred_fourth_order(vy[0, -2, 0], vy[0, -1, 0], vy, vy[0, 1, 0])
        vz_face = centred_fourth_order(vz[0, -2, 0], vz[0, -1, 0], vz, vz[0, 1, 0])
        b_face = centred_fourth_order(bernoulli[0, -2, 0], bernoulli[0, -1, 0], bernoulli, bernoulli[0, 1, 0])
        normal_velocity = vx_face * y_normal_x + vy_face * y_normal_y + vz_face * y_normal_z
        h_face = h_face + upwind_bias(h[0, -2, 0], h[0, -1, 0], h, h[0, 1, 0], normal_velocity)
        with horizontal(region[:, south + 1], region[:, north - 1]):
            h_face = 0.5 * (h[0, -1, 0] + h)
            vx_face = 0.5 * (vx[0, -1, 0] + vx)
            vy_face = 0.5 * (vy[0, -1, 0] + vy)
            vz_face = 0.5 * (vz[0, -1, 0] + vz)
            b_face = 0.5 * (bernoulli[0, -1, 0] + bernoulli)
        with horizontal(region[:, south], region[:, north]):
            h_face = kinked_average(
                h[0, -1, 0], h, h[1, -1, 0] - h[-1, -1, 0], h[1, 0, 0] - h[-1, 0, 0], y_kink_south, y_kink_north
            )
            vx_face = kinked_average(
                vx[0, -1, 0], vx, vx[1, -1, 0] - vx[-1, -1, 0], vx[1, 0, 0] - vx[-1, 0, 0], y_kink_south, y_kink_north
            )
            vy_face = kinked_average(
                vy[0, -1, 0], vy, vy[1, -1, 0] - vy[-1, -1, 0], vy[1, 0, 0] - vy[-1, 0, 0], y_kink_south, y_kink_north
            )
            vz_face = kinked_average(
                vz[0, -1, 0], vz, vz[1, -1, 0] - vz[-1, -1, 0], vz[1, 0, 0] - vz[-1, 0, 0], y_kink_south, y_kink_north
            )
            b_face = kinked_average(
                bernoulli[0, -1, 0], bernoulli, bernoulli[1, -1, 0] - bernoulli[-1, -1, 0],
                bernoulli[1, 0, 0] - bernoulli[-1, 0, 0], y_kink_south, y_kink_north,
            )
        with horizontal(region[west, south], region[west, north]):
            h_face = kinked_average(
                h[0, -1, 0], h, h[1, -1, 0] - h[0, -1, 0], h[1, 0, 0] - h, y_kink_south, y_kink_north
            )
            vx_face = kinked_average(
                vx[0, -1, 0], vx, vx[1, -1, 0] - vx[0, -1, 0], vx[1, 0, 0] - vx, y_kink_south, y_kink_north
            )
            vy_face = kinked_average(
                vy[0, -1, 0], vy, vy[1, -1, 0] - vy[0, -1, 0], vy[1, 0, 0] - vy, y_kink_south, y_kink_north
            )
            vz_face = kinked_average(
                vz[0, -1, 0], vz, vz[1, -1, 0] - vz[0, -1, 0], vz[1, 0, 0] - vz, y_kink_south, y_kink_north
            )
            b_face = kinked_average(
                bernoulli[0, -1, 0], bernoulli, bernoulli[1, -1, 0] - bernoulli[0, -1, 0],
                bernoulli[1, 0, 0] - bernoulli, y_kink_south, y_kink_north,
            )
        with horizontal(region[east, south], region[east, north]):
            h_face = kinked_average(
                h[0, -1, 0], h, h[0, -1, 0] - h[-1, -1, 0], h - h[-1, 0, 0], y_kink_south, y_kink_north
            )
            vx_face = kinked_average(
                vx[0, -1, 0], vx, vx[0, -1, 0] - vx[-1, -1, 0], vx - vx[-1, 0, 0], y_kink_south, y_kink_north
            )
            vy_face = kinked_average(
                vy[0, -1, 0], vy, vy[0, -1, 0] - vy[-1, -1, 0], vy - vy[-1, 0, 0], y_kink_south, y_kink_north
            )
            vz_face = kinked_average(
                vz[0, -1, 0], vz, vz[0, -1, 0] - vz[-1, -1, 0], vz - vz[-1, 0, 0], y_kink_south, y_kink_north
            )
            b_face = kinked_average(
                bernoulli[0, -1, 0], bernoulli, bernoulli[0, -1, 0] - bernoulli[-1, -1, 0],
                bernoulli - bernoulli[-1, 0, 0], y_kink_south, y_kink_north,
            )
        with horizontal(region[:, south], region[:, south + 1], region[:, north - 1], region[:, north]):
            normal_velocity = vx_face * y_normal_x + vy_face * y_normal_y + vz_face * y_normal_z
        mass_flux = h_face * normal_velocity * y_length
        circulation = (vx_face * y_tangent_x + vy_face * y_tangent_y + vz_face * y_tangent_z) * y_length
        bernoulli_face = b_face
