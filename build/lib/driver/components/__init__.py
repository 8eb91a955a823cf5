"""Orchestrated components of the dynamical core, each calling stencils from ``__call__``.

Nesting (every class is orchestrated when ``FV3_DACEMODE`` is not ``Python``)::

    DynamicalCore                       sub-step loop, RK3 stages
      RungeKuttaStage (x3)              halo update (callback), tendencies, update
        Tendencies                      compile-time branches: momentum, hyperdiffusion
          CellQuantities                Cartesian wind, vertical sweep, Bernoulli function
          FluxComputation               face values and fluxes (tile-edge regions)
          Hyperdiffusion                del-4 (cube-corner regions, run-time da_min)
"""

from driver.components.cell_quantities import CellQuantities
from driver.components.diffusion import Hyperdiffusion
from driver.components.fluxes import FluxComputation
from driver.components.stage import RungeKuttaStage
from driver.components.tendencies import Tendencies

__all__ = ["CellQuantities", "FluxComputation", "Hyperdiffusion", "RungeKuttaStage", "Tendencies"]
