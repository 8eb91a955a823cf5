"""The stencils the idiom models call (small gt4py definitions, float64 fields)."""

from __future__ import annotations

import numpy as np
from gt4py.cartesian import gtscript
from gt4py.cartesian.gtscript import BACKWARD, FORWARD, PARALLEL, Field, I, computation, horizontal, interval, region

FloatField = Field[np.float64]
FloatFieldIJ = Field[gtscript.IJ, np.float64]
SHAPE = (7, 6, 3)  #: every array of the corpus
HALO = 1  #: points around the compute domain
DOMAIN = (SHAPE[0] - 2 * HALO, SHAPE[1] - 2 * HALO, SHAPE[2])
ORIGIN = (HALO, HALO, 0)


def axpy(x: FloatField, y: FloatField, a: float):
    with computation(PARALLEL), interval(...):
        y = y + a * x


def scale(q: FloatField, a: float):
    with computation(PARALLEL), interval(...):
        q = q * a


def copy_scaled(q_in: FloatField, q_out: FloatField, a: float):
    with computation(PARALLEL), interval(...):
        q_out = q_in * a + 1.0


def add_into(x: FloatField, y: FloatField, out: FloatField):
    with computation(PARALLEL), interval(...):
        out = x + y


def flux_x(q: FloatField, flux: FloatField, c: float):
    with computation(PARALLEL), interval(...):
        flux = c * (q[1, 0, 0] - q[-1, 0, 0])


def flux_y(q: FloatField, flux: FloatField, c: float):
    with computation(PARALLEL), interval(...):
        flux = c * (q[0, 1, 0] - q[0, -1, 0])


def apply_fluxes(q: FloatField, fx: FloatField, fy: FloatField, area: FloatFieldIJ):
    with computation(PARALLEL), interval(...):
        q = q - (fx + fy) * area


def toggled(x: FloatField, y: FloatField, on: bool):
    with computation(PARALLEL), interval(...):
        if on:
            y = y + x


def column_sum(q: FloatField, out: FloatField):
    with computation(FORWARD), interval(0, 1):
        out = q
    with computation(FORWARD), interval(1, None):
        out = out[0, 0, -1] + q
    with computation(BACKWARD), interval(0, -1):
        out = 0.5 * (out + out[0, 0, 1])


@gtscript.function
def _times_one(x):
    return x * 1.0


@gtscript.function
def _times_two(x):
    return x * 2.0


def apply_external(q: FloatField, out: FloatField):
    from __externals__ import func

    with computation(PARALLEL), interval(...):
        out = out + func(q)


#: the function externals ``apply_external`` is built with, one stencil each
EXTERNAL_FUNCTIONS = {"one": _times_one, "two": _times_two}


def edge_sweep(q: FloatField, out: FloatField):
    """Offsets, a region at the west edge and a FORWARD sweep: what a plain gt4py stencil object computes."""
    with computation(PARALLEL), interval(...):
        out = 0.5 * q + 0.125 * (q[1, 0, 0] + q[-1, 0, 0] + q[0, 1, 0] + q[0, -1, 0])
        with horizontal(region[I[0], :]):
            out = q + 0.5 * (q[1, 0, 0] - q)
    with computation(FORWARD), interval(1, None):
        out = out + 0.25 * out[0, 0, -1]
