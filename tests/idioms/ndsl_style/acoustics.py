"""An acoustic loop in the shape of FV3's ``dyn_core.AcousticDynamics``, in our own words.

The idioms real FV3 code uses around its acoustic sub-steps, each here once:

* a ``DycoreState`` dataclass of quantities, a compile-time argument of
  ``__call__`` and of the checkpoint methods, all orchestrated with **one
  shared name list** ``["state", "tag"]`` although only one of them has
  ``tag`` (NDSL ignores the names a method lacks; so does orchestra);
* a holder of halo updaters (``self._halo_updaters.u__v``), each wrapping a
  dataclass state or a dict, with ``start``/``wait``/``update`` interleaved
  with stencils and ``interface()`` on the last sub-step;
* ``dace_nounroll(range(n_split))`` with a branch on the loop variable;
* getters under ``dace_inhibitor`` returning floats (``dt_acoustic_substep``,
  ``_get_da_min``), received into annotated locals;
* a nested C-grid component whose returned quantities are the caller's next
  arguments.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

from dace.frontend.python.interface import nounroll as dace_nounroll

from orchestra import dace_inhibitor, orchestrate
from tests.idioms.ndsl_style import stencils as fv
from tests.idioms.ndsl_style.infrastructure import Quantity, QuantityFactory, StencilFactory, WrappedHaloUpdater

#: the dimensions of FV3's D-grid winds: u on y interfaces, v on x interfaces
U_DIMS, V_DIMS = ("x", "y_interface", "z"), ("x_interface", "y", "z")


@dataclasses.dataclass
class DycoreState:
    delp: Quantity
    pt: Quantity
    w: Quantity
    u: Quantity
    v: Quantity

    @classmethod
    def random(cls, quantities: QuantityFactory, seed: int) -> DycoreState:
        return cls(
            delp=quantities.random(seed, 1.0, 2.0), pt=quantities.random(seed + 1, 0.9, 1.1),
            w=quantities.random(seed + 2, -0.5, 0.5), u=quantities.random(seed + 3, -0.1, 0.1, U_DIMS),
            v=quantities.random(seed + 4, -0.1, 0.1, V_DIMS),
        )


class CGridSolver:
    """Half a step on the C grid; returns its own quantities (``delpc, ptc = self.cgrid(...)``)."""

    def __init__(self, stencil_factory: StencilFactory, quantity_factory: QuantityFactory) -> None:
        self._delpc, self._ptc = quantity_factory.zeros(), quantity_factory.zeros()
        self._pressure = stencil_factory.from_dims_halo(fv.c_grid_pressure)
        orchestrate(obj=self, config=stencil_factory.config)

    def __call__(self, delp, pt, u, v, dt2: float):
        self._pressure(delp, pt, u, v, self._delpc, self._ptc, dt2)
        return self._delpc, self._ptc


class HaloUpdaters:
    """One updater per group of fields, as FV3 keeps them: on the state dataclass or on a dict."""

    def __init__(self, state: DycoreState, heat: Quantity, updater_of: Any = None, comm: Any = None) -> None:
        made = updater_of or (lambda: None)
        self.delp__pt = WrappedHaloUpdater(state, ["delp", "pt"], updater=made())
        self.u__v = WrappedHaloUpdater(state, [], x_names=["u"], y_names=["v"], updater=made())
        self.w = WrappedHaloUpdater(dict(w=state.w), ["w"], updater=made())
        self.heat = WrappedHaloUpdater({"heat": heat}, ["heat"], updater=made())
        self.interface_u__v = WrappedHaloUpdater(state, [], x_names=["u"], y_names=["v"], comm=comm)


class Checkpointer:
    """Records what the checkpoint methods hand it (tag and a checksum per field); kept in Python."""

    def __init__(self) -> None:
        self.records: list[tuple[str, float]] = []

    @dace_inhibitor
    def __call__(self, savepoint: str, **fields: Any) -> None:
        import numpy as np

        self.records.append((savepoint, float(sum(np.asarray(f.data if hasattr(f, "dims") else f).sum()
                                                  for f in fields.values()))))


class AcousticLoop:
    def __init__(self, stencil_factory: StencilFactory, quantity_factory: QuantityFactory, state: DycoreState,
                 n_split: int, checkpointer: Optional[Checkpointer] = None, updater_of: Any = None,
                 comm: Any = None) -> None:
        config = stencil_factory.config
        self._n_split = n_split
        self._da_min = 0.25
        self._heat = quantity_factory.zeros()
        self._halo_updaters = HaloUpdaters(state, self._heat, updater_of, comm)
        self.cgrid = CGridSolver(stencil_factory, quantity_factory)
        self._d_grid = stencil_factory.from_dims_halo(fv.d_grid_update)
        self._winds = stencil_factory.from_dims_halo(fv.wind_update)
        self._damping = stencil_factory.from_dims_halo(fv.rayleigh_damping)
        self._heating = stencil_factory.from_dims_halo(fv.copy_field)
        self.call_checkpointer = checkpointer is not None
        self.checkpointer = checkpointer
        shared = ["state", "tag"]  # one list for every method, as dyn_core gives it
        orchestrate(obj=self, config=config, dace_compiletime_args=shared)
        for method in ("_checkpoint_csw", "_checkpoint_dsw_in"):
            orchestrate(obj=self, config=config, method_to_orchestrate=method, dace_compiletime_args=shared)

    @dace_inhibitor
    def dt_acoustic_substep(self, timestep: float) -> float:
        return timestep / self._n_split

    @dace_inhibitor
    def _get_da_min(self) -> float:
        return self._da_min

    def _checkpoint_csw(self, state: DycoreState, tag: str):
        if self.call_checkpointer:
            self.checkpointer(f"C_SW-{tag}", delpd=state.delp, ptd=state.pt)

    def _checkpoint_dsw_in(self, state: DycoreState):
        if self.call_checkpointer:
            self.checkpointer("D_SW-In", ud=state.u, vd=state.v, wd=state.w)

    def __call__(self, state: DycoreState, timestep: float):
        dt: float = self.dt_acoustic_substep(timestep)
        dt2 = 0.5 * dt
        n_split = self._n_split
        self._halo_updaters.delp__pt.start()
        self._halo_updaters.u__v.start()
        self._halo_updaters.delp__pt.wait()
        for it in dace_nounroll(range(n_split)):
            self._halo_updaters.w.start()
            self._halo_updaters.u__v.wait()
            self._checkpoint_csw(state, tag="In")
            delpc, ptc = self.cgrid(state.delp, state.pt, state.u, state.v, dt2)
            self._checkpoint_csw(state, tag="Out")
            self._halo_updaters.w.wait()
            self._checkpoint_dsw_in(state)
            self._d_grid(delpc, ptc, state.delp, state.pt, state.w, dt)
            self._halo_updaters.delp__pt.update()
            self._winds(state.u, state.v, state.pt, dt)
            if it != n_split - 1:
                self._halo_updaters.u__v.start()
            else:
                self._halo_updaters.interface_u__v.interface()
        self._heating(state.w, self._heat)
        self._halo_updaters.heat.update()
        da_min: float = self._get_da_min()
        self._damping(state.u, state.v, state.w, 0.01 * da_min)
