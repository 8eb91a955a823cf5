"""The model state of one rank: prognostic fields and the static fields they need."""

from __future__ import annotations

import dataclasses
from typing import Any

from driver.factory import StencilFactory

#: Names of the prognostic fields, in the order restart files and output list them.
PROGNOSTIC_NAMES = ("h", "u", "v")


@dataclasses.dataclass
class ModelState:
    """Fields ``[i, j(, k)]`` with halos, allocated for the backend.

    Attributes:
        h: layer depth (m), k = 0 the bottom layer.
        u, v: wind (m/s) along the cell's ``basis_i`` and ``basis_j`` (see
            :class:`driver.grid.GridGeometry`); a vector pair for halo updates.
        surface_height: height of the bottom topography (m), 2-D.
        coriolis: Coriolis parameter (1/s), 2-D (test cases may tilt the axis).
    """

    h: Any
    u: Any
    v: Any
    surface_height: Any
    coriolis: Any

    @classmethod
    def zeros(cls, factory: StencilFactory) -> "ModelState":
        """A state of zeros shaped for ``factory``'s subdomain."""
        return cls(
            h=factory.zeros(),
            u=factory.zeros(),
            v=factory.zeros(),
            surface_height=factory.zeros_ij(),
            coriolis=factory.zeros_ij(),
        )

    def prognostic(self) -> dict[str, Any]:
        """The prognostic fields by name."""
        return {name: getattr(self, name) for name in PROGNOSTIC_NAMES}
