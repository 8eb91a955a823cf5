"""One stage of the SSP Runge-Kutta scheme: halo update, tendencies, update."""

from __future__ import annotations

from typing import Any

from orchestra import orchestrate
from orchestra.comm import CallbackHaloExchanger

from driver.components.tendencies import Tendencies
from driver.factory import StencilFactory
from driver.grid import GridFields
from driver.stencils.timestep import stage_update, stage_update_depth


class RungeKuttaStage:
    """``q = q0 + weight * (q + dt * tendency(q) - q0)`` for the state's h, u, v.

    The halos of ``h`` (scalar) and ``(u, v)`` (vector pair) are updated
    first, through a :class:`~orchestra.comm.CallbackHaloExchanger` on the
    state. With ``solve_momentum`` False only ``h`` is exchanged and updated.
    """

    def __init__(
        self, factory: StencilFactory, grid: GridFields, tendencies: Tendencies,
        halo: CallbackHaloExchanger, depth_halo: CallbackHaloExchanger,
        tendency_fields: tuple[Any, Any, Any, Any], weight: float, dt: float,
    ) -> None:
        self.grid = grid
        self.tendencies = tendencies
        self.solve_momentum = tendencies.solve_momentum
        self.halo = halo
        self.depth_halo = depth_halo
        self.dh, self.dvx, self.dvy, self.dvz = tendency_fields
        externals = {"weight": weight, "dt": dt}
        self._update = factory.compute(stage_update, externals=externals)
        self._update_depth = factory.compute(stage_update_depth, externals=externals)
        orchestrate(obj=self, config=factory.dace_config)

    def __call__(self, h: Any, u: Any, v: Any, h0: Any, u0: Any, v0: Any) -> None:
        """Advance ``h, u, v`` (the state's arrays) by one stage from ``h0, u0, v0``."""
        if self.solve_momentum:
            self.halo.update()
            self.tendencies(h, u, v, self.dh, self.dvx, self.dvy, self.dvz)
            self._update(
                h, u, v, h0, u0, v0, self.dh, self.dvx, self.dvy, self.dvz,
                self.grid.basis_i_x, self.grid.basis_i_y, self.grid.basis_i_z,
                self.grid.basis_j_x, self.grid.basis_j_y, self.grid.basis_j_z,
            )
        else:
            self.depth_halo.update()
            self.tendencies(h, u, v, self.dh, self.dvx, self.dvy, self.dvz)
            self._update_depth(h, h0, self.dh)
