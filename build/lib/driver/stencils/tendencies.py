"""Tendencies from face fluxes: mass (flux form) and momentum (vector-invariant form).

Momentum, as 3-D Cartesian vectors tangent to the sphere::

    dV/dt = -(zeta + f) r x V - grad(g (hs + sum h) + |V|^2 / 2)

``zeta`` is the circulation around the cell over its area (Stokes), the
gradient is Gauss's theorem with the face normals, taken relative to the cell
value so that a constant field has no gradient on the curved cell; the result
is projected onto the tangent plane at the cell centre.
"""

from gt4py.cartesian.gtscript import PARALLEL, computation, interval

from driver.stencils.types import FloatField, FloatFieldIJ


def flux_divergence(mass_flux_x: FloatField, mass_flux_y: FloatField, rarea: FloatFieldIJ, dh: FloatField):
    """``dh = -div(h V)``: net outflow through the four faces over the cell area."""
    with computation(PARALLEL), interval(...):
        dh = -(mass_flux_x[1, 0, 0] - mass_flux_x + mass_flux_y[0, 1, 0] - mass_flux_y) * rarea


def momentum_tendency(
    vx: FloatField,
    vy: FloatField,
    vz: FloatField,
    bernoulli: FloatField,
    circulation_x: FloatField,
    circulation_y: FloatField,
    bernoulli_x: FloatField,
    bernoulli_y: FloatField,
    coriolis: FloatFieldIJ,
    rarea: FloatFieldIJ,
    centre_x: FloatFieldIJ,
    centre_y: FloatFieldIJ,
    centre_z: FloatFieldIJ,
    x_length: FloatFieldIJ,
    x_normal_x: FloatFieldIJ,
    x_normal_y: FloatFieldIJ,
    x_normal_z: FloatFieldIJ,
    y_length: FloatFieldIJ,
    y_normal_x: FloatFieldIJ,
    y_normal_y: FloatFieldIJ,
    y_normal_z: FloatFieldIJ,
    dvx: FloatField,
    dvy: FloatField,
    dvz: FloatField,
):
    """The vector-invariant momentum tendency, tangent to the sphere at the cell centre."""
    with computation(PARALLEL), interval(...):
        # counter-clockwise circulation: east and south faces forward, west and north back
        zeta = (circulation_x[1, 0, 0] - circulation_x + circulation_y - circulation_y[0, 1, 0]) * rarea
        absolute_vorticity = zeta + coriolis
        east = (bernoulli_x[1, 0, 0] - bernoulli) * x_length[1, 0]
        west = (bernoulli_x - bernoulli) * x_length
        north = (bernoulli_y[0, 1, 0] - bernoulli) * y_length[0, 1]
        south = (bernoulli_y - bernoulli) * y_length
        grad_x = (east * x_normal_x[1, 0] - west * x_normal_x + north * y_normal_x[0, 1] - south * y_normal_x) * rarea
        grad_y = (east * x_normal_y[1, 0] - west * x_normal_y + north * y_normal_y[0, 1] - south * y_normal_y) * rarea
        grad_z = (east * x_normal_z[1, 0] - west * x_normal_z + north * y_normal_z[0, 1] - south * y_normal_z) * rarea
        tx = -absolute_vorticity * (centre_y * vz - centre_z * vy) - grad_x
        ty = -absolute_vorticity * (centre_z * vx - centre_x * vz) - grad_y
        tz = -absolute_vorticity * (centre_x * vy - centre_y * vx) - grad_z
        radial = tx * centre_x + ty * centre_y + tz * centre_z
        dvx = tx - radial * centre_x
        dvy = ty - radial * centre_y
        dvz = tz - radial * centre_z
