"""All tendencies of one Runge-Kutta stage."""

from __future__ import annotations

from typing import Any

from orchestra import orchestrate

from driver.components.cell_quantities import CellQuantities
from driver.components.diffusion import Hyperdiffusion
from driver.components.fluxes import FluxComputation
from driver.factory import StencilFactory
from driver.grid import GridFields, GridInfo
from driver.stencils.tendencies import flux_divergence, momentum_tendency


class Tendencies:
    """``dh`` and the Cartesian wind tendency ``(dvx, dvy, dvz)`` from a state with current halos.

    Compile-time flags: ``solve_momentum`` (False for the advection test,
    where the wind is prescribed) and ``hyperdiffusion``.
    """

    def __init__(
        self, factory: StencilFactory, grid: GridFields, grid_info: GridInfo, surface_height: Any,
        coriolis: Any, solve_momentum: bool, hyperdiffusion: bool, diffusion_coefficient: float, dt: float,
    ) -> None:
        self.grid = grid
        self.grid_info = grid_info
        self.coriolis = coriolis
        self.solve_momentum = solve_momentum
        self.hyperdiffusion = hyperdiffusion
        for name in (
            "vx", "vy", "vz", "bernoulli", "mass_flux_x", "mass_flux_y",
            "circulation_x", "circulation_y", "bernoulli_x", "bernoulli_y",
        ):
            setattr(self, name, factory.scratch())
        self.cells = CellQuantities(factory, grid, surface_height)
        self.fluxes = FluxComputation(factory, grid)
        self.diffusion = Hyperdiffusion(factory, grid, diffusion_coefficient, dt, solve_momentum)
        self._divergence = factory.compute(flux_divergence)
        self._momentum = factory.compute(momentum_tendency)
        orchestrate(obj=self, config=factory.dace_config)

    def __call__(self, h: Any, u: Any, v: Any, dh: Any, dvx: Any, dvy: Any, dvz: Any) -> None:
        """Fill ``dh`` (and ``dvx, dvy, dvz`` when solving momentum)."""
        if self.hyperdiffusion:  # read before the first stencil: a callback between two stencils ends a fused kernel
            da_min: float = self.grid_info.min_area()
        self.cells(h, u, v, self.vx, self.vy, self.vz, self.bernoulli)
        self.fluxes(
            h, self.vx, self.vy, self.vz, self.bernoulli,
            self.mass_flux_x, self.mass_flux_y, self.circulation_x, self.circulation_y,
            self.bernoulli_x, self.bernoulli_y,
        )
        self._divergence(self.mass_flux_x, self.mass_flux_y, self.grid.rarea, dh)
        if self.solve_momentum:
            self._momentum(
                self.vx, self.vy, self.vz, self.bernoulli,
                self.circulation_x, self.circulation_y, self.bernoulli_x, self.bernoulli_y,
                self.coriolis, self.grid.rarea, self.grid.centre_x, self.grid.centre_y, self.grid.centre_z,
                self.grid.x_length, self.grid.x_normal_x, self.grid.x_normal_y, self.grid.x_normal_z,
                self.grid.y_length, self.grid.y_normal_x, self.grid.y_normal_y, self.grid.y_normal_z,
                dvx, dvy, dvz,
            )
        if self.hyperdiffusion:
            self.diffusion(h, self.vx, self.vy, self.vz, dh, dvx, dvy, dvz, da_min)
