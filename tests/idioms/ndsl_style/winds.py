"""Grid-vector interpolation whose data lives in Quantity containers (FV3's ``d2a2c_vect`` shape).

Every array is a :class:`~tests.idioms.ndsl_style.infrastructure.Quantity`:
held by the component, held by the state dataclass passed in as a
compile-time argument, or passed as a run-time argument. A 2-D edge weight
takes its own origin (``{"_all_": ..., "edge_w": (0, 0)}``); the C-grid winds
are returned as the component's own quantities, and a property exposes one.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from orchestra import orchestrate
from tests.idioms.ndsl_style import stencils as fv
from tests.idioms.ndsl_style.infrastructure import Quantity, QuantityFactory, StencilFactory


@dataclasses.dataclass
class WindState:
    u: Quantity
    v: Quantity


class DGridToCGrid:
    def __init__(self, stencil_factory: StencilFactory, quantity_factory: QuantityFactory, edge_w: Quantity) -> None:
        grid = stencil_factory.grid_indexing
        self._ua, self._va = quantity_factory.zeros(), quantity_factory.zeros()
        self._uc, self._vc = quantity_factory.zeros(), quantity_factory.zeros()
        self._edge_w = edge_w
        self._d_to_a = stencil_factory.from_dims_halo(fv.d_to_a_winds, compute_halos=(1, 1))
        self._a_to_c = stencil_factory.from_origin_domain(
            fv.a_to_c_winds, origin={"_all_": grid.origin_compute(), "edge_w": (0, 0)},
            domain=grid.domain_compute())
        orchestrate(obj=self, config=stencil_factory.config, dace_compiletime_args=["state"])

    @property
    def uc(self) -> Quantity:
        return self._uc

    def __call__(self, state: WindState, scale: Quantity):
        self._d_to_a(state.u, state.v, self._ua, self._va)
        self._a_to_c(self._ua, self._va, self._edge_w, self.uc, self._vc)
        self._d_to_a(scale, scale, state.u, state.v)
        return self._uc, self._vc
