"""Test-case initial conditions, and the model's tendencies for them (serial, numpy backend).

One rank of a 6-rank decomposition is built in this process. Its halos are
filled by evaluating the analytic initial condition at the halo cells (they
are the neighbour tiles' actual cells), which is what a halo update would do.
"""

import numpy as np
import pytest

from orchestra import DaceConfig, DaCeOrchestration
from orchestra.comm import CubedSpherePartitioner, TilePartitioner

from driver.components import Tendencies
from driver.constants import GRAVITY, OMEGA, RADIUS
from driver.factory import StencilFactory
from driver.geometry import dot, from_lon_lat
from driver.grid import GridFields, GridGeometry, GridInfo, Subdomain
from driver.state import ModelState
from driver.testcases import U0_12_DAYS, initialize, make_test_case


def one_rank(n_tile: int, case_number: int, rank: int = 0, nz: int = 1, alpha: float = 0.0, hyperdiffusion=False):
    """A rank's state filled everywhere (halos too) with the case's initial condition, and its tendencies."""
    partitioner = CubedSpherePartitioner(TilePartitioner((1, 1)))
    subdomain = Subdomain.of_rank(partitioner, rank, n_tile, 3)
    geometry = GridGeometry.build(subdomain)
    factory = StencilFactory(subdomain, nz, DaceConfig(None, backend="numpy", orchestration=DaCeOrchestration.Python))
    state = ModelState.zeros(factory)
    case = make_test_case(case_number, alpha)
    initialize(state, geometry, case)
    everywhere = (slice(None), slice(None))
    depth = case.height(geometry.centres) - case.surface_height(geometry.centres)
    wind = case.wind(geometry.centres)
    state.h[everywhere] = (depth / nz)[..., None]
    state.u[everywhere] = dot(wind, geometry.basis_i)[..., None]
    state.v[everywhere] = dot(wind, geometry.basis_j)[..., None]
    tendencies = Tendencies(
        factory, GridFields(geometry, "numpy"), GridInfo(geometry), state.surface_height, state.coriolis,
        solve_momentum=case.solve_momentum, hyperdiffusion=hyperdiffusion, diffusion_coefficient=0.005, dt=900.0,
    )
    out = [factory.zeros() for _ in range(4)]
    tendencies(state.h, state.u, state.v, *out)
    compute = subdomain.compute
    return geometry, state, [np.asarray(a)[compute] for a in out]


def test_case2_is_in_balance_and_the_residual_converges():
    """Case 2 is steady: dh and dV vanish up to truncation error, which falls with resolution.

    The largest residuals sit at tile edges, where the scheme is first order
    (kinked grid lines), so the maximum norm falls like dx there.
    """
    residuals = []
    for n_tile in (24, 48):
        _, _, (dh, dvx, dvy, dvz) = one_rank(n_tile, 2)
        dv = np.sqrt(dvx**2 + dvy**2 + dvz**2)
        coriolis_scale = 2 * OMEGA * U0_12_DAYS  # size of each balanced term, m s-2
        assert dv.max() < 2e-2 * coriolis_scale
        assert np.abs(dh).max() * 86400 < 1e-2 * 2.94e4 / GRAVITY  # under 1 % of the depth per day
        residuals.append((np.abs(dh).max(), dv.max()))
    (dh24, dv24), (dh48, dv48) = residuals
    assert dh24 / dh48 > 1.6 and dv24 / dv48 > 1.6


@pytest.mark.parametrize("alpha", [0.0, np.pi / 4])
def test_case2_tilted_is_in_balance(alpha):
    for rank in (0, 2):  # an equatorial tile and the north-polar tile
        _, _, (dh, dvx, dvy, dvz) = one_rank(24, 2, rank=rank, alpha=alpha)
        assert np.sqrt(dvx**2 + dvy**2 + dvz**2).max() < 2e-2 * 2 * OMEGA * U0_12_DAYS
        assert np.abs(dh).max() * 86400 < 30.0  # 1 % of the depth per day


def test_layers_split_the_depth_and_reproduce_one_layer():
    """Equal layers with one wind: depth tendencies add up to the single layer's, winds agree."""
    _, _, (dh1, dvx1, _, _) = one_rank(24, 5, nz=1)
    _, state3, (dh3, dvx3, _, _) = one_rank(24, 5, nz=3)
    assert np.allclose(dh3.sum(axis=-1), dh1[..., 0], rtol=1e-12, atol=1e-12 * np.abs(dh1).max())
    for k in range(3):
        assert np.allclose(dvx3[..., k], dvx1[..., 0], rtol=1e-12, atol=1e-12 * np.abs(dvx1).max())


def test_case1_advects_only_depth():
    geometry, state, (dh, dvx, dvy, dvz) = one_rank(24, 1, rank=4)  # tile 4 holds the bell (lon 270)
    assert np.asarray(state.h).max() == pytest.approx(1000.0, rel=0.1)  # peak between cell centres
    assert np.all(dvx == 0) and np.all(dvy == 0) and np.all(dvz == 0)
    assert np.abs(dh).max() > 0


def test_case1_exact_solution_returns_after_12_days():
    case = make_test_case(1, np.pi / 4)
    points = from_lon_lat(np.linspace(0, 2 * np.pi, 50), np.linspace(-1.2, 1.2, 50))
    assert np.allclose(case.exact_height(points, 12 * 86400.0), case.height(points), atol=1e-9)
    halfway = case.exact_height(from_lon_lat(np.array(np.pi / 2), np.array(0.0)), 6 * 86400.0)
    assert halfway == pytest.approx(1000.0)  # half a revolution moves the bell from lon 270 to lon 90


def test_case5_and_case6_initial_fields():
    case5 = make_test_case(5)
    top = from_lon_lat(np.array(1.5 * np.pi), np.array(np.pi / 6))
    assert case5.surface_height(top) == pytest.approx(2000.0)
    assert case5.height(from_lon_lat(np.array(0.0), np.array(0.0))) == pytest.approx(5960.0)
    case6 = make_test_case(6)
    equator = from_lon_lat(np.linspace(0, 2 * np.pi, 9)[:-1], np.zeros(8))
    wind = case6.wind(equator)
    assert np.allclose(np.abs(dot(wind, equator)), 0, atol=1e-9)  # tangent
    # the wave has wavenumber 4: the height repeats every 90 degrees of longitude
    lon = np.linspace(0, 2 * np.pi, 17)[:-1]
    heights = case6.height(from_lon_lat(lon, np.full(16, 0.5)))
    assert np.allclose(heights[:4], heights[4:8])
    assert RADIUS == 6.37122e6
