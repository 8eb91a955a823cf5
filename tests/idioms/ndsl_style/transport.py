"""Finite-volume transport in the style of FV3's ``fvtp2d``: nested PPM components and optional damping.

``FiniteVolumeTransport`` calls two nested orchestrated flux components,
an inner advective update, and (when damping is on) ``DelnFlux``, which loops
over damping orders through lists of stencils with varied bounds, returns
early when its coefficient is negligible, and tests its optional arguments
with ``is None``.
"""

from __future__ import annotations

from typing import Any, Optional

from orchestra import orchestrate
from tests.idioms.ndsl_style import stencils as fv
from tests.idioms.ndsl_style.infrastructure import QuantityFactory, StencilFactory


class XPiecewiseParabolic:
    def __init__(self, stencil_factory: StencilFactory) -> None:
        grid = stencil_factory.grid_indexing
        nx, ny, nz = grid.domain_compute()
        self._compute_flux = stencil_factory.from_origin_domain(
            fv.x_edge_flux, origin=grid.origin_compute(), domain=(nx + 1, ny, nz))
        orchestrate(obj=self, config=stencil_factory.config)

    def __call__(self, q, c, flux):
        self._compute_flux(q, c, flux)


class YPiecewiseParabolic:
    def __init__(self, stencil_factory: StencilFactory) -> None:
        grid = stencil_factory.grid_indexing
        nx, ny, nz = grid.domain_compute()
        self._compute_flux = stencil_factory.from_origin_domain(
            fv.y_edge_flux, origin=grid.origin_compute(), domain=(nx, ny + 1, nz))
        orchestrate(obj=self, config=stencil_factory.config)

    def __call__(self, q, c, flux):
        self._compute_flux(q, c, flux)


class DelnFlux:
    """High-order damping of fluxes: ``nord + 1`` Laplacians, each on a smaller region."""

    def __init__(self, stencil_factory: StencilFactory, quantity_factory: QuantityFactory, rarea: Any,
                 nord: int, damp_c: float) -> None:
        grid = stencil_factory.grid_indexing
        self._no_compute = damp_c <= 1.0e-4
        self._nmax = nord + 1
        self._damp = damp_c
        self._rarea = rarea
        self._d2 = quantity_factory.zeros()
        self._d2_work = quantity_factory.zeros()
        self._fx2, self._fy2 = quantity_factory.zeros(), quantity_factory.zeros()
        self._copy = stencil_factory.from_dims_halo(fv.copy_field, compute_halos=(2, 2))
        self._laplacian_stencils = []
        self._flux_stencils = []
        for n in range(self._nmax):
            halo = self._nmax - n
            self._laplacian_stencils.append(stencil_factory.from_dims_halo(fv.laplacian, compute_halos=(halo, halo)))
            self._flux_stencils.append(
                stencil_factory.from_dims_halo(fv.diffusive_fluxes, compute_halos=(halo - 1, halo - 1)))
        self._add = stencil_factory.from_dims_halo(fv.add_damping)
        self._add_with_mass = stencil_factory.from_dims_halo(fv.add_damping_with_mass)
        orchestrate(obj=self, config=stencil_factory.config)

    def __call__(self, q, fx, fy, d2=None, mass=None):
        if self._no_compute is True:
            return fx, fy
        if d2 is None:
            self._copy(q, self._d2)
        else:
            self._copy(d2, self._d2)
        for n in range(self._nmax):
            self._laplacian_stencils[n](self._d2, self._rarea, self._d2_work)
            sign = -1.0 if n % 2 == 0 else 1.0
            self._flux_stencils[n](d2=self._d2_work, fx2=self._fx2, fy2=self._fy2, sign=sign)
            self._copy(self._d2_work, self._d2)
        if mass is None:
            self._add(fx, self._fx2, fy, self._fy2, self._damp)
        else:
            self._add_with_mass(fx, self._fx2, fy, self._fy2, mass, self._damp)
        return fx, fy


class FiniteVolumeTransport:
    """Fluxes of ``q`` through cell faces: inner advection, outer PPM fluxes, optional damping."""

    def __init__(self, stencil_factory: StencilFactory, quantity_factory: QuantityFactory, grid_data: Any,
                 nord: int = 1, damp_c: float = 0.0) -> None:
        self.grid_data = grid_data
        self._q_x = quantity_factory.zeros()
        self._q_y = quantity_factory.zeros()
        self._fx_inner, self._fy_inner = quantity_factory.zeros(), quantity_factory.zeros()
        self.x_piecewise_parabolic_inner = XPiecewiseParabolic(stencil_factory)
        self.y_piecewise_parabolic_inner = YPiecewiseParabolic(stencil_factory)
        self.x_piecewise_parabolic_outer = XPiecewiseParabolic(stencil_factory)
        self.y_piecewise_parabolic_outer = YPiecewiseParabolic(stencil_factory)
        self._advect_y = stencil_factory.from_dims_halo(fv.advect_along_y, compute_halos=(3, 0))
        self._advect_x = stencil_factory.from_dims_halo(fv.advect_along_x, compute_halos=(0, 3))
        self._multiply = stencil_factory.from_dims_halo(fv.multiply_fluxes)
        self.delnflux: Optional[DelnFlux] = None
        if damp_c > 0.0:
            self.delnflux = DelnFlux(stencil_factory, quantity_factory, grid_data.rarea, nord, damp_c)
        orchestrate(obj=self, config=stencil_factory.config)

    def __call__(self, q, crx, cry, x_area_flux, y_area_flux, fx, fy, x_mass_flux=None, y_mass_flux=None,
                 mass=None):
        grid_data = self.grid_data
        self.y_piecewise_parabolic_inner(q, cry, self._fy_inner)
        self._advect_y(q, grid_data.area, self._fy_inner, self._q_y)
        self.x_piecewise_parabolic_outer(self._q_y, crx, fx)
        self.x_piecewise_parabolic_inner(q, crx, self._fx_inner)
        self._advect_x(q, grid_data.area, self._fx_inner, self._q_x)
        self.y_piecewise_parabolic_outer(self._q_x, cry, fy)
        if x_mass_flux is None:
            self._multiply(fx, fy, x_area_flux, y_area_flux)
        else:
            self._multiply(fx, fy, x_mass_flux, y_mass_flux)
        if self.delnflux is not None:
            self.delnflux(q, fx, fy, mass=mass)
