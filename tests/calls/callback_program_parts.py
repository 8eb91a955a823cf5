"""The fixed parts every random callback program (:mod:`tests.calls.random_callback_programs`) uses.

The stencils are defined once here, so gt4py compiles each for ``Python``
mode once per cache, whatever the number of programs drawn; the programs
differ in how they call them (FrozenStencil or the plain gt4py object with
``origin=``/``domain=``, which arrays, where, in loops and branches) and in
their callbacks. The plain objects come from :func:`plain_stencil`: gt4py
names a plain stencil after the module that calls ``gtscript.stencil``, so
made in each program's own module they would be compiled again per program.
"""

from __future__ import annotations

import numpy as np
from gt4py.cartesian import gtscript
from gt4py.cartesian.gtscript import FORWARD, PARALLEL, Field, I, J, computation, horizontal, interval, region

from orchestra import dace_inhibitor

FloatField = Field[np.float64]


def smooth(q: FloatField, out: FloatField):
    with computation(PARALLEL), interval(...):
        out = 0.5 * q + 0.125 * (q[1, 0, 0] + q[-1, 0, 0] + q[0, 1, 0] + q[0, -1, 0])
        with horizontal(region[I[0], :]):
            out = q + 0.5 * (q[1, 0, 0] - q)
        with horizontal(region[:, J[-1]]):
            out = 0.75 * q


def sweep(q: FloatField, out: FloatField, weight: float):
    with computation(FORWARD):
        with interval(0, 1):
            out = weight * q
        with interval(1, None):
            out = 0.5 * out[0, 0, -1] + weight * q


def plain_stencil(definition, backend: str):
    """The plain gt4py stencil object of ``definition`` (``gtscript.stencil``), named after this module."""
    return gtscript.stencil(backend=backend, definition=definition)


class Halo:
    """Callbacks shared by every component of a program; each counts its calls into what it is given."""

    def __init__(self) -> None:
        self.calls = 0
        self.factor = 0.75

    @dace_inhibitor
    def fill(self, q):
        """Non-idempotent: a fill on another array, twice or never changes the numbers."""
        self.calls += 1
        corner = (0,) * q.ndim
        q[corner] = 0.5 * q[corner] + 0.001 * self.calls
        q[(-1,) * q.ndim] = q[corner] - q[(1,) * q.ndim]

    @dace_inhibitor
    def fill_pair(self, u, v):
        """A vector pair: the halo of each from the other."""
        self.calls += 1
        u[0] = v[1] + 0.001 * self.calls
        v[-1] = u[-2]

    @dace_inhibitor
    def coefficient(self) -> float:
        self.factor = -0.5 * self.factor + 0.125
        return self.factor
