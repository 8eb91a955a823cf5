"""Williamson et al. (1992) shallow-water test cases 1, 2, 5 and 6.

Each case is a set of functions of points on the unit sphere (arrays
``(..., 3)``): the free-surface height, the bottom topography, the wind as a
Cartesian vector, the Coriolis parameter and, where one exists, the
analytic solution. :func:`initialize` fills a rank's
:class:`~driver.state.ModelState` with point values at cell centres.

Reference: D. L. Williamson, J. B. Drake, J. J. Hack, R. Jakob and
P. N. Swarztrauber (1992), A standard test set for numerical approximations to
the shallow water equations in spherical geometry, J. Comput. Phys. 102, 211-224.
"""

from __future__ import annotations

import abc
import dataclasses
from typing import TYPE_CHECKING, Optional

import numpy as np

from driver.constants import GRAVITY, OMEGA, RADIUS, SECONDS_PER_DAY
from driver.geometry import cross, dot, east_north, lon_lat, rotate
from driver.host_copies import set_from_host

if TYPE_CHECKING:  # annotations only: reading a configuration must not import gt4py (scripts/run.sh)
    from driver.grid import GridGeometry
    from driver.state import ModelState

#: Velocity of one revolution in 12 days (cases 1 and 2), m/s.
U0_12_DAYS = 2.0 * np.pi * RADIUS / (12.0 * SECONDS_PER_DAY)


@dataclasses.dataclass(frozen=True)
class TestCase(abc.ABC):
    """A test case; ``alpha`` tilts the flow (and, in case 2, the rotation axis)."""

    alpha: float = 0.0

    __test__ = False  # not a pytest test class
    #: Williamson's case number.
    number = 0
    #: False when the wind is prescribed (advection only).
    solve_momentum = True

    @property
    def axis(self) -> np.ndarray:
        """Axis of the solid-body flow: the pole tilted by ``alpha`` towards longitude pi."""
        return np.array([-np.sin(self.alpha), 0.0, np.cos(self.alpha)])

    @abc.abstractmethod
    def height(self, p: np.ndarray) -> np.ndarray:
        """Initial free-surface height above the reference sphere (m)."""

    def surface_height(self, p: np.ndarray) -> np.ndarray:
        """Bottom topography (m); zero unless the case has a mountain."""
        return np.zeros(p.shape[:-1])

    @abc.abstractmethod
    def wind(self, p: np.ndarray) -> np.ndarray:
        """Initial wind, Cartesian (m/s)."""

    def coriolis(self, p: np.ndarray) -> np.ndarray:
        """Coriolis parameter ``2 Omega sin(latitude)`` (1/s)."""
        return 2.0 * OMEGA * p[..., 2]

    def exact_height(self, p: np.ndarray, time: float) -> Optional[np.ndarray]:
        """The analytic free-surface height at ``time`` (s), or None if the case has none."""
        return None

    def solid_body_wind(self, p: np.ndarray, u0: float) -> np.ndarray:
        """``u0 axis x p``: rotation about :attr:`axis` with equatorial speed ``u0``."""
        return u0 * cross(np.broadcast_to(self.axis, p.shape), p)


@dataclasses.dataclass(frozen=True)
class CosineBell(TestCase):
    """Case 1: advection of a cosine bell once around the sphere in 12 days.

    ``alpha = pi/4`` sends the bell straight over four cube corners.
    """

    number = 1
    solve_momentum = False
    h0 = 1000.0
    bell_radius = 1.0 / 3.0  # in units of the Earth radius
    centre_lon_lat = (1.5 * np.pi, 0.0)

    def _bell(self, p: np.ndarray) -> np.ndarray:
        lon_c, lat_c = self.centre_lon_lat
        lon, lat = lon_lat(p)
        cos_r = np.sin(lat_c) * np.sin(lat) + np.cos(lat_c) * np.cos(lat) * np.cos(lon - lon_c)
        r = np.arccos(np.clip(cos_r, -1.0, 1.0))
        return np.where(r < self.bell_radius, 0.5 * self.h0 * (1.0 + np.cos(np.pi * r / self.bell_radius)), 0.0)

    def height(self, p: np.ndarray) -> np.ndarray:
        return self._bell(p)

    def wind(self, p: np.ndarray) -> np.ndarray:
        return self.solid_body_wind(p, U0_12_DAYS)

    def exact_height(self, p: np.ndarray, time: float) -> np.ndarray:
        return self._bell(rotate(p, self.axis, -U0_12_DAYS * time / RADIUS))


@dataclasses.dataclass(frozen=True)
class SteadyZonalFlow(TestCase):
    """Case 2: global steady-state nonlinear geostrophic flow (the solution is the initial state)."""

    number = 2
    gh0 = 2.94e4

    def height(self, p: np.ndarray) -> np.ndarray:
        s = dot(p, np.broadcast_to(self.axis, p.shape))
        return (self.gh0 - (RADIUS * OMEGA * U0_12_DAYS + 0.5 * U0_12_DAYS**2) * s * s) / GRAVITY

    def wind(self, p: np.ndarray) -> np.ndarray:
        return self.solid_body_wind(p, U0_12_DAYS)

    def coriolis(self, p: np.ndarray) -> np.ndarray:
        return 2.0 * OMEGA * dot(p, np.broadcast_to(self.axis, p.shape))

    def exact_height(self, p: np.ndarray, time: float) -> np.ndarray:
        return self.height(p)


@dataclasses.dataclass(frozen=True)
class ZonalFlowOverMountain(TestCase):
    """Case 5: zonal flow impinging on an isolated conical mountain (2000 m)."""

    number = 5
    u0 = 20.0
    h0 = 5960.0
    mountain_height = 2000.0
    mountain_radius = np.pi / 9.0
    mountain_lon_lat = (1.5 * np.pi, np.pi / 6.0)

    def height(self, p: np.ndarray) -> np.ndarray:
        s = p[..., 2]
        return self.h0 - (RADIUS * OMEGA * self.u0 + 0.5 * self.u0**2) * s * s / GRAVITY

    def surface_height(self, p: np.ndarray) -> np.ndarray:
        lon, lat = lon_lat(p)
        lon_c, lat_c = self.mountain_lon_lat
        r = np.sqrt(np.minimum(self.mountain_radius**2, (lon - lon_c) ** 2 + (lat - lat_c) ** 2))
        return self.mountain_height * (1.0 - r / self.mountain_radius)

    def wind(self, p: np.ndarray) -> np.ndarray:
        return self.solid_body_wind(p, self.u0)


@dataclasses.dataclass(frozen=True)
class RossbyHaurwitzWave(TestCase):
    """Case 6: Rossby-Haurwitz wave of wavenumber 4."""

    number = 6
    omega = 7.848e-6
    k = 7.848e-6
    wavenumber = 4
    h0 = 8000.0

    def height(self, p: np.ndarray) -> np.ndarray:
        lon, lat = lon_lat(p)
        w, k, r, a = self.omega, self.k, self.wavenumber, RADIUS
        c = np.cos(lat)
        a_term = 0.5 * w * (2.0 * OMEGA + w) * c**2 + 0.25 * k**2 * (
            (r + 1.0) * c ** (2 * r + 2) + (2.0 * r**2 - r - 2.0) * c ** (2 * r) - 2.0 * r**2 * c ** (2 * r - 2)
        )
        b_factor = 2.0 * (OMEGA + w) * k / ((r + 1.0) * (r + 2.0))
        b_term = b_factor * c**r * ((r**2 + 2.0 * r + 2.0) - (r + 1.0) ** 2 * c**2)
        c_term = 0.25 * k**2 * c ** (2 * r) * ((r + 1.0) * c**2 - (r + 2.0))
        return self.h0 + a**2 / GRAVITY * (a_term + b_term * np.cos(r * lon) + c_term * np.cos(2 * r * lon))

    def wind(self, p: np.ndarray) -> np.ndarray:
        lon, lat = lon_lat(p)
        w, k, r, a = self.omega, self.k, self.wavenumber, RADIUS
        c, s = np.cos(lat), np.sin(lat)
        u = a * w * c + a * k * c ** (r - 1) * (r * s**2 - c**2) * np.cos(r * lon)
        v = -a * k * r * c ** (r - 1) * s * np.sin(r * lon)
        east, north = east_north(lon, lat)
        return u[..., None] * east + v[..., None] * north


TEST_CASES: dict[int, type[TestCase]] = {
    1: CosineBell,
    2: SteadyZonalFlow,
    5: ZonalFlowOverMountain,
    6: RossbyHaurwitzWave,
}


def make_test_case(number: int, alpha: float = 0.0) -> TestCase:
    """The test case with Williamson's ``number`` (1, 2, 5 or 6)."""
    try:
        return TEST_CASES[number](alpha=alpha)
    except KeyError:
        raise ValueError(f"test case {number!r} is not implemented; choose one of {sorted(TEST_CASES)}") from None


def initialize(state: ModelState, geometry: GridGeometry, case: TestCase) -> None:
    """Fill ``state`` with the case's initial condition (point values at cell centres).

    The compute domain of ``h, u, v`` is set (halos are left to the halo
    update); the depth is split equally between the layers, each with the
    same wind. Surface height and Coriolis parameter are set everywhere,
    halos included.
    """
    p = geometry.centres
    compute = geometry.subdomain.compute
    nz = state.h.shape[2]
    hs = case.surface_height(p)
    depth = case.height(p) - hs
    wind = case.wind(p)
    set_from_host(state.surface_height, ..., hs)
    set_from_host(state.coriolis, ..., case.coriolis(p))
    set_from_host(state.h, compute, (depth[compute] / nz)[..., None])
    set_from_host(state.u, compute, dot(wind, geometry.basis_i)[compute][..., None])
    set_from_host(state.v, compute, dot(wind, geometry.basis_j)[compute][..., None])
