"""The vertical sweep: free surface of the layer stack, and the Bernoulli function.

Layers (k = 0 at the bottom) of equal density are stacked on the surface
height ``hs``; every layer feels the pressure gradient of the free surface
``hs + sum_k h_k`` (a FORWARD sweep accumulates it). With one layer this is
the single-layer shallow-water equations.
"""

from gt4py.cartesian.gtscript import FORWARD, PARALLEL, computation, interval

from driver.constants import GRAVITY
from driver.stencils.types import FloatField, FloatFieldIJ


def bernoulli_function(
    h: FloatField,
    vx: FloatField,
    vy: FloatField,
    vz: FloatField,
    surface_height: FloatFieldIJ,
    free_surface: FloatFieldIJ,
    bernoulli: FloatField,
):
    """``bernoulli = g * (hs + sum_k h_k) + |V|^2 / 2``; also leaves the free surface height."""
    with computation(FORWARD), interval(0, 1):
        free_surface = surface_height
    with computation(FORWARD), interval(...):
        free_surface = free_surface + h
    with computation(PARALLEL), interval(...):
        bernoulli = GRAVITY * free_surface + 0.5 * (vx * vx + vy * vy + vz * vz)
