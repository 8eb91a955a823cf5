"""Cell-centred quantities every flux needs: Cartesian wind and the Bernoulli function."""

from __future__ import annotations

from typing import Any

from orchestra import orchestrate

from driver.factory import StencilFactory
from driver.grid import GridFields
from driver.stencils.column import bernoulli_function
from driver.stencils.wind import wind_to_cartesian


class CellQuantities:
    """On every cell (halos included): ``V = u e_i + v e_j`` and ``g (hs + sum h) + |V|^2/2``.

    The Bernoulli function comes from a FORWARD sweep up the layer stack.
    """

    def __init__(self, factory: StencilFactory, grid: GridFields, surface_height: Any) -> None:
        self.grid = grid
        self.surface_height = surface_height
        self.free_surface = factory.zeros_ij()
        self._to_cartesian = factory.full(wind_to_cartesian)
        self._bernoulli = factory.full(bernoulli_function)
        orchestrate(obj=self, config=factory.dace_config)

    def __call__(self, h: Any, u: Any, v: Any, vx: Any, vy: Any, vz: Any, bernoulli: Any) -> None:
        """Fill ``vx, vy, vz`` and ``bernoulli`` from ``h, u, v``."""
        self._to_cartesian(
            u, v,
            self.grid.basis_i_x, self.grid.basis_i_y, self.grid.basis_i_z,
            self.grid.basis_j_x, self.grid.basis_j_y, self.grid.basis_j_z,
            vx, vy, vz,
        )
        self._bernoulli(h, vx, vy, vz, self.surface_height, self.free_surface, bernoulli)
