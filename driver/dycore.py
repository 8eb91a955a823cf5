"""The dynamical core: one model step of the shallow-water equations on the cubed sphere."""

from __future__ import annotations

import dataclasses

from orchestra import orchestrate
from orchestra.comm import CallbackHaloExchanger, HaloUpdater

from driver.components import RungeKuttaStage, Tendencies
from driver.factory import StencilFactory
from driver.grid import GridFields, GridInfo
from driver.state import ModelState
from driver.stencils.timestep import copy_state

#: Stage weights c of the three-stage SSP Runge-Kutta scheme (Shu and Osher 1988),
#: ``q = q0 + c (q + dt tendency(q) - q0)`` (see :mod:`driver.stencils.timestep`).
SSP_RK3_WEIGHTS = (1.0, 0.25, 2.0 / 3.0)


@dataclasses.dataclass(frozen=True)
class DycoreOptions:
    """Options fixed when the core is built (all of them compile-time under orchestration).

    Attributes:
        dt: the model time step (s); ``n_substeps`` Runge-Kutta steps of
            ``dt / n_substeps`` each make one model step.
        n_substeps: Runge-Kutta steps per model step.
        solve_momentum: False for pure advection (Williamson case 1): the wind
            stays as initialized.
        hyperdiffusion: add fourth-order hyperdiffusion.
        diffusion_coefficient: dimensionless strength of the hyperdiffusion
            (see :class:`~driver.components.Hyperdiffusion`).
    """

    dt: float
    n_substeps: int = 1
    solve_momentum: bool = True
    hyperdiffusion: bool = True
    diffusion_coefficient: float = 0.002

    @property
    def substep_dt(self) -> float:
        """Length of one Runge-Kutta step (s)."""
        return self.dt / self.n_substeps


class DynamicalCore:
    """Advances ``state`` by one model step per call.

    ``__call__`` loops over ``n_substeps`` SSP-RK3 steps; each keeps the state
    (``h0, u0, v0``) and runs three :class:`~driver.components.RungeKuttaStage`
    s, each exchanging halos through callbacks before computing tendencies.
    Orchestrated (one compiled program for the whole step) unless
    ``FV3_DACEMODE`` is ``Python``.
    """

    def __init__(
        self, state: ModelState, grid: GridFields, grid_info: GridInfo, factory: StencilFactory,
        halo_updater: HaloUpdater, options: DycoreOptions,
    ) -> None:
        self.state = state
        self.options = options
        self.n_substeps = options.n_substeps
        dt = options.substep_dt
        self.h0, self.u0, self.v0 = factory.scratch(), factory.scratch(), factory.scratch()
        tendency_fields = (factory.scratch(), factory.scratch(), factory.scratch(), factory.scratch())
        halo = CallbackHaloExchanger(state, ["h"], [("u", "v")], updater=halo_updater)
        depth_halo = CallbackHaloExchanger(state, ["h"], (), updater=halo_updater)
        self.tendencies = Tendencies(
            factory, grid, grid_info, state.surface_height, state.coriolis,
            solve_momentum=options.solve_momentum, hyperdiffusion=options.hyperdiffusion,
            diffusion_coefficient=options.diffusion_coefficient, dt=dt,
        )
        stages = [
            RungeKuttaStage(factory, grid, self.tendencies, halo, depth_halo, tendency_fields, weight, dt)
            for weight in SSP_RK3_WEIGHTS
        ]
        self.stage_1, self.stage_2, self.stage_3 = stages
        self._copy_state = factory.compute(copy_state)
        orchestrate(obj=self, config=factory.dace_config)

    def __call__(self) -> None:
        """Advance the state by one model step."""
        for _ in range(self.n_substeps):
            self._copy_state(self.state.h, self.state.u, self.state.v, self.h0, self.u0, self.v0)
            self.stage_1(self.state.h, self.state.u, self.state.v, self.h0, self.u0, self.v0)
            self.stage_2(self.state.h, self.state.u, self.state.v, self.h0, self.u0, self.v0)
            self.stage_3(self.state.h, self.state.u, self.state.v, self.h0, self.u0, self.v0)
