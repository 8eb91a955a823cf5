"""Stencils of the NDSL-style components (finite-volume fluxes, damping, tracer updates).

Simplified numerics in the shape of FV3's: upwind-biased fourth-order edge
values, flux-form updates divided by cell area, high-order damping by
repeated Laplacians. What matters here is the Python around them.
"""

from __future__ import annotations

import numpy as np
from gt4py.cartesian import gtscript
from gt4py.cartesian.gtscript import BACKWARD, FORWARD, PARALLEL, Field, I, J, computation, exp, horizontal, interval, log, region

FloatField = Field[np.float64]
FloatFieldIJ = Field[gtscript.IJ, np.float64]


def x_edge_flux(q: FloatField, courant: FloatField, flux: FloatField):
    with computation(PARALLEL), interval(...):
        edge = (7.0 / 12.0) * (q[-1, 0, 0] + q) - (1.0 / 12.0) * (q[-2, 0, 0] + q[1, 0, 0])
        if courant > 0.0:
            flux = courant * (q[-1, 0, 0] + (1.0 - courant) * (edge - q[-1, 0, 0]))
        else:
            flux = courant * (q + (1.0 + courant) * (edge - q))


def y_edge_flux(q: FloatField, courant: FloatField, flux: FloatField):
    with computation(PARALLEL), interval(...):
        edge = (7.0 / 12.0) * (q[0, -1, 0] + q) - (1.0 / 12.0) * (q[0, -2, 0] + q[0, 1, 0])
        if courant > 0.0:
            flux = courant * (q[0, -1, 0] + (1.0 - courant) * (edge - q[0, -1, 0]))
        else:
            flux = courant * (q + (1.0 + courant) * (edge - q))


def advect_along_y(q: FloatField, area: FloatFieldIJ, fy: FloatField, q_out: FloatField):
    with computation(PARALLEL), interval(...):
        q_out = q + (fy - fy[0, 1, 0]) / area * 0.5


def advect_along_x(q: FloatField, area: FloatFieldIJ, fx: FloatField, q_out: FloatField):
    with computation(PARALLEL), interval(...):
        q_out = q + (fx - fx[1, 0, 0]) / area * 0.5


def multiply_fluxes(fx: FloatField, fy: FloatField, x_flux: FloatField, y_flux: FloatField):
    with computation(PARALLEL), interval(...):
        fx = fx * x_flux
        fy = fy * y_flux


def copy_field(q_in: FloatField, q_out: FloatField):
    with computation(PARALLEL), interval(...):
        q_out = q_in


def laplacian(q: FloatField, rarea: FloatFieldIJ, d2: FloatField):
    with computation(PARALLEL), interval(...):
        d2 = (q[1, 0, 0] + q[-1, 0, 0] + q[0, 1, 0] + q[0, -1, 0] - 4.0 * q) * rarea


def diffusive_fluxes(d2: FloatField, fx2: FloatField, fy2: FloatField, sign: float):
    with computation(PARALLEL), interval(...):
        fx2 = sign * (d2[-1, 0, 0] - d2)
        fy2 = sign * (d2[0, -1, 0] - d2)


def add_damping(fx: FloatField, fx2: FloatField, fy: FloatField, fy2: FloatField, damp: float):
    with computation(PARALLEL), interval(...):
        fx = fx + damp * fx2
        fy = fy + damp * fy2


def add_damping_with_mass(fx: FloatField, fx2: FloatField, fy: FloatField, fy2: FloatField,
                          mass: FloatField, damp: float):
    with computation(PARALLEL), interval(...):
        fx = fx + damp * 0.5 * (mass[-1, 0, 0] + mass) * fx2
        fy = fy + damp * 0.5 * (mass[0, -1, 0] + mass) * fy2


def absolute_courant(cx: FloatField, cy: FloatField, cmax: FloatField):
    with computation(PARALLEL), interval(...):
        cmax = max(abs(cx), abs(cy))


def divide_fluxes(mfx: FloatField, mfy: FloatField, cx: FloatField, cy: FloatField, frac: float):
    with computation(PARALLEL), interval(...):
        mfx = mfx * frac
        mfy = mfy * frac
        cx = cx * frac
        cy = cy * frac


def apply_mass_flux(dp1: FloatField, mfx: FloatField, mfy: FloatField, rarea: FloatFieldIJ, dp2: FloatField):
    with computation(PARALLEL), interval(...):
        dp2 = dp1 + (mfx - mfx[1, 0, 0] + mfy - mfy[0, 1, 0]) * rarea


def adjust_tracer(q: FloatField, dp1: FloatField, fx: FloatField, fy: FloatField, rarea: FloatFieldIJ,
                  dp2: FloatField):
    with computation(PARALLEL), interval(...):
        q = (q * dp1 + (fx - fx[1, 0, 0] + fy - fy[0, 1, 0]) * rarea) / dp2


def a_to_c_winds(ua: FloatField, va: FloatField, edge_w: FloatFieldIJ, uc: FloatField, vc: FloatField):
    with computation(PARALLEL), interval(...):
        uc = 0.5 * (ua[-1, 0, 0] + ua) * edge_w
        vc = 0.5 * (va[0, -1, 0] + va) * edge_w


def d_to_a_winds(u: FloatField, v: FloatField, ua: FloatField, va: FloatField):
    with computation(PARALLEL), interval(...):
        ua = 0.5 * (u + u[0, 1, 0])
        va = 0.5 * (v + v[1, 0, 0])


def c_grid_pressure(delp: FloatField, pt: FloatField, u: FloatField, v: FloatField,
                    delpc: FloatField, ptc: FloatField, dt2: float):
    """A half step of thickness and temperature on the C grid; the tile's first column and row kept."""
    with computation(PARALLEL), interval(...):
        delpc = delp + dt2 * (u - u[0, 1, 0] + v - v[1, 0, 0])
        ptc = (pt * delp + dt2 * (u * pt[0, -1, 0] - v * pt[-1, 0, 0])) / delpc
        with horizontal(region[I[0], :], region[:, J[0]]):
            ptc = pt


def d_grid_update(delpc: FloatField, ptc: FloatField, delp: FloatField, pt: FloatField, w: FloatField,
                  dt: float):
    """The full step from the C-grid values, then a vertical sweep of w (exp and log of FV3's kind)."""
    with computation(PARALLEL), interval(...):
        delp = 0.5 * (delp + delpc)
        pt = pt + dt * (ptc - pt)
    with computation(FORWARD):
        with interval(0, 1):
            w = w * exp(-dt)
        with interval(1, None):
            w = 0.5 * (w + w[0, 0, -1]) + dt * log(delp)


def wind_update(u: FloatField, v: FloatField, pt: FloatField, dt: float):
    """D-grid winds pushed by the temperature gradient across their faces."""
    with computation(PARALLEL), interval(...):
        u = u - dt * (pt - pt[0, -1, 0])
        v = v - dt * (pt - pt[-1, 0, 0])


def rayleigh_damping(u: FloatField, v: FloatField, w: FloatField, damp: float):
    """Damping applied top-down (a BACKWARD sweep)."""
    with computation(BACKWARD), interval(...):
        u = u * (1.0 - damp)
        v = v * (1.0 - damp)
        w = w * (1.0 - damp) + 0.1 * damp * w
