"""Tracer advection in the style of FV3's ``tracer_2d_1l``.

The tracers arrive as a dict (a compile-time argument); a halo updater
captured the same dict and exchanges them by name in Python; the number of
sub-steps comes from a callback that reads the Courant numbers the program
just computed (``math.floor(1.0 + cmax)``), so it is known only at run time;
every tracer goes through a ``FiniteVolumeTransport`` shared with another
owner; the layer thickness of one sub-step is aliased to a temporary.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from orchestra import dace_inhibitor, orchestrate
from tests.idioms.ndsl_style import stencils as fv
from tests.idioms.ndsl_style.infrastructure import QuantityFactory, StencilFactory, WrappedHaloUpdater
from tests.idioms.ndsl_style.transport import FiniteVolumeTransport


class TracerAdvection:
    def __init__(self, stencil_factory: StencilFactory, quantity_factory: QuantityFactory,
                 transport: FiniteVolumeTransport, grid_data: Any, tracers: dict) -> None:
        self.grid_data = grid_data
        self.finite_volume_transport = transport
        self._tracers_halo_updater = WrappedHaloUpdater(tracers, list(tracers.keys()))
        self._cmax = quantity_factory.zeros()
        self._tmp_dp = quantity_factory.zeros()
        self._x_area_flux, self._y_area_flux = quantity_factory.zeros(), quantity_factory.zeros()
        self._fx, self._fy = quantity_factory.zeros(), quantity_factory.zeros()
        self._courant = stencil_factory.from_dims_halo(fv.absolute_courant)
        self._divide = stencil_factory.from_dims_halo(fv.divide_fluxes, compute_halos=(1, 1))
        self._apply_mass_flux = stencil_factory.from_dims_halo(fv.apply_mass_flux)
        self._adjust = stencil_factory.from_dims_halo(fv.adjust_tracer)
        self._swap_dp = stencil_factory.from_dims_halo(fv.copy_field)
        orchestrate(obj=self, config=stencil_factory.config, dace_compiletime_args=["tracers"])

    @dace_inhibitor
    def _max_courant(self) -> float:
        return float(np.max(np.asarray(self._cmax.data)))

    def __call__(self, tracers, dp1, mfx, mfy, cx, cy):
        self._courant(cx, cy, self._cmax)
        cmax = self._max_courant()
        n_split = math.floor(1.0 + cmax)
        if n_split > 1.0:
            self._divide(mfx, mfy, cx, cy, 1.0 / n_split)
        dp2 = self._tmp_dp
        for it in range(n_split):
            last_call = it == n_split - 1
            self._apply_mass_flux(dp1, mfx, mfy, self.grid_data.rarea, dp2)
            self._tracers_halo_updater.update()
            for q in tracers.values():
                self.finite_volume_transport(q, cx, cy, self._x_area_flux, self._y_area_flux, self._fx, self._fy,
                                             x_mass_flux=mfx, y_mass_flux=mfy)
                self._adjust(q, dp1, self._fx, self._fy, self.grid_data.rarea, dp2)
            if not last_call:
                self._swap_dp(dp2, dp1)
