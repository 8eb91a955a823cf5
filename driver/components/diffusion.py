"""Fourth-order hyperdiffusion of the layer depth and the Cartesian wind."""

from __future__ import annotations

from typing import Any

from orchestra import orchestrate

from driver.factory import StencilFactory
from driver.grid import GridFields
from driver.stencils.diffusion import hyperdiffusion_tendency, laplacian


class Hyperdiffusion:
    """Adds ``-K del4 q`` to the tendencies, ``K = coefficient * da_min**2 / dt``.

    ``da_min`` is the smallest cell area *on this rank*: a scalar that depends
    on the decomposition, read at run time through the
    :meth:`~driver.grid.GridInfo.min_area` callback (never folded into an
    orchestrated build) by the caller, before its first stencil: a callback
    here, between the tendencies' stencils and these, would end the fused
    kernel they share (``orchestra.passes.fusion.barriers``).
    ``coefficient`` is dimensionless; the damping of the
    shortest resolved wave per step is then about ``64 * coefficient`` on the
    smallest cells. ``diffuse_wind`` is a compile-time flag (False when the
    wind is prescribed).
    """

    def __init__(
        self, factory: StencilFactory, grid: GridFields, coefficient: float, dt: float, diffuse_wind: bool,
    ) -> None:
        self.grid = grid
        self.diffuse_wind = diffuse_wind
        self.lap_h = factory.scratch()
        self.lap_vx = factory.scratch()
        self.lap_vy = factory.scratch()
        self.lap_vz = factory.scratch()
        self._laplacian = factory.compute(laplacian, extend=1)
        self._damp = factory.compute(hyperdiffusion_tendency, externals={"strength": coefficient / dt})
        orchestrate(obj=self, config=factory.dace_config)

    def __call__(
        self, h: Any, vx: Any, vy: Any, vz: Any, dh: Any, dvx: Any, dvy: Any, dvz: Any, da_min: float
    ) -> None:
        """Add the hyperdiffusion of ``h`` (and of the wind) to ``dh`` (and ``dvx, dvy, dvz``).

        ``da_min``: this rank's smallest cell area (``GridInfo.min_area()``),
        read by the caller before its first stencil.
        """
        self._laplacian(h, self.grid.x_weight, self.grid.y_weight, self.grid.rarea, self.lap_h)
        self._damp(self.lap_h, self.grid.x_weight, self.grid.y_weight, self.grid.rarea, dh, da_min)
        if self.diffuse_wind:
            self._laplacian(vx, self.grid.x_weight, self.grid.y_weight, self.grid.rarea, self.lap_vx)
            self._laplacian(vy, self.grid.x_weight, self.grid.y_weight, self.grid.rarea, self.lap_vy)
            self._laplacian(vz, self.grid.x_weight, self.grid.y_weight, self.grid.rarea, self.lap_vz)
            self._damp(self.lap_vx, self.grid.x_weight, self.grid.y_weight, self.grid.rarea, dvx, da_min)
            self._damp(self.lap_vy, self.grid.x_weight, self.grid.y_weight, self.grid.rarea, dvy, da_min)
            self._damp(self.lap_vz, self.grid.x_weight, self.grid.y_weight, self.grid.rarea, dvz, da_min)
