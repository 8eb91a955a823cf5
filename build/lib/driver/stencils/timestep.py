"""Runge-Kutta stage updates.

A stage of the Shu-Osher form ``q = (1 - c) q0 + c (q + dt dq)``, with ``q0``
the state at the start of the step, is written ``q = q0 + c (q + dt dq - q0)``:
``c = 2/3`` has no exact floating-point value, and ``fl(1/3) + fl(2/3)`` (or
``fl(1 - 1/3)``) differs from 1 by ~5e-17, which would make the total mass
drift by that much per step; here ``c`` only scales an increment. ``c``
(``weight``) and ``dt`` are externals (one stencil per stage). The momentum
tendency, a Cartesian vector, is projected onto the cell's basis.
"""

from gt4py.cartesian.gtscript import PARALLEL, computation, interval

from driver.stencils.types import FloatField, FloatFieldIJ


def copy_state(h: FloatField, u: FloatField, v: FloatField, h0: FloatField, u0: FloatField, v0: FloatField):
    """Keep the state at the start of a step."""
    with computation(PARALLEL), interval(...):
        h0 = h
        u0 = u
        v0 = v


def stage_update(
    h: FloatField,
    u: FloatField,
    v: FloatField,
    h0: FloatField,
    u0: FloatField,
    v0: FloatField,
    dh: FloatField,
    dvx: FloatField,
    dvy: FloatField,
    dvz: FloatField,
    basis_i_x: FloatFieldIJ,
    basis_i_y: FloatFieldIJ,
    basis_i_z: FloatFieldIJ,
    basis_j_x: FloatFieldIJ,
    basis_j_y: FloatFieldIJ,
    basis_j_z: FloatFieldIJ,
):
    """Update layer depth and wind."""
    from __externals__ import dt, weight

    with computation(PARALLEL), interval(...):
        du = dvx * basis_i_x + dvy * basis_i_y + dvz * basis_i_z
        dv = dvx * basis_j_x + dvy * basis_j_y + dvz * basis_j_z
        h = h0 + weight * ((h + dt * dh) - h0)
        u = u0 + weight * ((u + dt * du) - u0)
        v = v0 + weight * ((v + dt * dv) - v0)


def stage_update_depth(h: FloatField, h0: FloatField, dh: FloatField):
    """Update the layer depth only (advection test: the wind is prescribed)."""
    from __externals__ import dt, weight

    with computation(PARALLEL), interval(...):
        h = h0 + weight * ((h + dt * dh) - h0)
