"""Global diagnostics: total mass, energy, potential enstrophy and normalized height errors.

Integrals are sums over cells of ``value * area``. Each rank sums its compute
domain; the per-rank sums are gathered and added in rank order, so every
rank gets the same (layout-dependent only through round-off) result.

Error norms follow Williamson et al. (1992), eqs. (82)-(84)::

    l1   = I(|h - hT|) / I(|hT|)
    l2   = sqrt(I((h - hT)^2)) / sqrt(I(hT^2))
    linf = max|h - hT| / max|hT|

with ``h`` the free-surface height and ``I`` the global integral.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

import numpy as np

from orchestra.comm import Communicator, HaloUpdater

from driver.constants import GRAVITY
from driver.grid import GridGeometry
from driver.host_copies import to_host
from driver.state import ModelState


@dataclasses.dataclass(frozen=True)
class Invariants:
    """Global integrals of one state: mass (m3), total energy (m5 s-2), potential enstrophy (m2 s-2).

    Potential enstrophy ``(zeta + f)^2 / (2 h)`` is NaN where some layer depth
    is zero or negative (e.g. around the cosine bell of case 1).
    """

    mass: float
    energy: float
    enstrophy: float


@dataclasses.dataclass(frozen=True)
class ErrorNorms:
    """Normalized l1, l2 and l-infinity errors of the free-surface height."""

    l1: float
    l2: float
    linf: float


class Diagnostics:
    """Computes :class:`Invariants` and :class:`ErrorNorms` of a rank's state (collective calls)."""

    def __init__(self, communicator: Communicator, geometry: GridGeometry, halo_updater: HaloUpdater) -> None:
        self.communicator = communicator
        self.geometry = geometry
        self.halo_updater = halo_updater

    def _global_sum(self, *values: float) -> np.ndarray:
        gathered = self.communicator.allgather(tuple(float(v) for v in values))
        return np.sum(np.array(gathered), axis=0)

    def free_surface(self, state: ModelState) -> np.ndarray:
        """Free-surface height ``hs + sum_k h_k`` on the compute domain."""
        compute = self.geometry.subdomain.compute
        return to_host(state.surface_height)[compute] + to_host(state.h)[compute].sum(axis=-1)

    def relative_vorticity(self, state: ModelState) -> np.ndarray:
        """Relative vorticity (1/s) on the compute domain, from face-averaged winds (Stokes)."""
        g = self.geometry
        u, v = to_host(state.u).copy(), to_host(state.v).copy()  # copies: the state's halos stay as they are
        self.halo_updater.update_vector(u, v)
        wind = u[..., None, :] * g.basis_i[..., None] + v[..., None, :] * g.basis_j[..., None]  # [i, j, xyz, k]
        # circ_x[i] is on the face between cells i and i + 1 (the west face of cell i + 1)
        circ_x = dot_faces(0.5 * (wind[:-1] + wind[1:]), g.x_tangent[1:]) * g.x_length[1:, :, None]
        circ_y = dot_faces(0.5 * (wind[:, :-1] + wind[:, 1:]), g.y_tangent[:, 1:]) * g.y_length[:, 1:, None]
        (i0, i1), (j0, j1) = ((c.start, c.stop) for c in g.subdomain.compute)
        east = circ_x[i0:i1, j0:j1]
        west = circ_x[i0 - 1 : i1 - 1, j0:j1]
        north = circ_y[i0:i1, j0:j1]
        south = circ_y[i0:i1, j0 - 1 : j1 - 1]
        return (east - west + south - north) / g.compute(g.area)[..., None]

    def invariants(self, state: ModelState) -> Invariants:
        """Total mass, energy and potential enstrophy (collective)."""
        g = self.geometry
        compute = g.subdomain.compute
        area = g.compute(g.area)[..., None]
        h = to_host(state.h)[compute]
        u, v = to_host(state.u)[compute], to_host(state.v)[compute]
        hs = to_host(state.surface_height)[compute]
        surface = hs + h.sum(axis=-1)
        kinetic = 0.5 * h * (u * u + v * v)
        potential = 0.5 * GRAVITY * (surface * surface - hs * hs)
        absolute = self.relative_vorticity(state) + to_host(state.coriolis)[compute][..., None]
        positive = bool(np.all(h > 0))
        enstrophy = 0.5 * absolute * absolute / np.where(h > 0, h, 1.0) if positive else np.zeros_like(h)
        mass, energy, potential_enstrophy, dry = self._global_sum(
            np.sum(h * area), np.sum(kinetic * area) + np.sum(potential * area[..., 0]), np.sum(enstrophy * area),
            float(not positive),
        )
        return Invariants(float(mass), float(energy), float("nan") if dry else float(potential_enstrophy))

    def error_norms(self, state: ModelState, exact_surface: np.ndarray) -> ErrorNorms:
        """Normalized errors of the free surface against ``exact_surface`` (compute domain)."""
        area = self.geometry.compute(self.geometry.area)
        error = self.free_surface(state) - exact_surface
        sums = self._global_sum(
            np.sum(np.abs(error) * area), np.sum(np.abs(exact_surface) * area),
            np.sum(error * error * area), np.sum(exact_surface * exact_surface * area),
        )
        local_maxima = (float(np.abs(error).max()), float(np.abs(exact_surface).max()))
        maxima = np.max(np.array(self.communicator.allgather(local_maxima)), axis=0)
        return ErrorNorms(
            l1=float(sums[0] / sums[1]), l2=float(np.sqrt(sums[2] / sums[3])), linf=float(maxima[0] / maxima[1])
        )


def dot_faces(wind: np.ndarray, direction: np.ndarray) -> np.ndarray:
    """``wind . direction`` for winds ``[i, j, xyz, k]`` and unit vectors ``[i, j, xyz]``."""
    return np.einsum("ijck,ijc->ijk", wind, direction)


def relative_change(new: float, old: float) -> Optional[float]:
    """``(new - old) / |old|``, or None if ``old`` is zero or either is not finite."""
    if old == 0 or not (np.isfinite(old) and np.isfinite(new)):
        return None
    return (new - old) / abs(old)
