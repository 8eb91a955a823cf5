"""Face fluxes on the x-faces and y-faces of the compute domain."""

from __future__ import annotations

from typing import Any

from orchestra import orchestrate

from driver.factory import StencilFactory
from driver.grid import GridFields
from driver.stencils.fluxes import x_face_fluxes, y_face_fluxes


class FluxComputation:
    """Mass flux, circulation and Bernoulli face value on every face of the compute domain.

    Faces on and next to tile edges get special face values (see
    :mod:`driver.stencils.fluxes`); the regions are placed by the
    ``west``/``east``/``south``/``north`` externals.
    """

    def __init__(self, factory: StencilFactory, grid: GridFields) -> None:
        self.grid = grid
        self._x_faces = factory.x_faces(x_face_fluxes)
        self._y_faces = factory.y_faces(y_face_fluxes)
        orchestrate(obj=self, config=factory.dace_config)

    def __call__(
        self, h: Any, vx: Any, vy: Any, vz: Any, bernoulli: Any,
        mass_flux_x: Any, mass_flux_y: Any, circulation_x: Any, circulation_y: Any,
        bernoulli_x: Any, bernoulli_y: Any,
    ) -> None:
        """Fill the face fields from the cell fields (halos must be current)."""
        self._x_faces(
            h, vx, vy, vz, bernoulli,
            self.grid.x_length, self.grid.x_normal_x, self.grid.x_normal_y, self.grid.x_normal_z,
            self.grid.x_tangent_x, self.grid.x_tangent_y, self.grid.x_tangent_z,
            self.grid.x_kink_west, self.grid.x_kink_east, mass_flux_x, circulation_x, bernoulli_x,
        )
        self._y_faces(
            h, vx, vy, vz, bernoulli,
            self.grid.y_length, self.grid.y_normal_x, self.grid.y_normal_y, self.grid.y_normal_z,
            self.grid.y_tangent_x, self.grid.y_tangent_y, self.grid.y_tangent_z,
            self.grid.y_kink_south, self.grid.y_kink_north, mass_flux_y, circulation_y, bernoulli_y,
        )
