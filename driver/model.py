"""Assembling one rank's model from a configuration: grid, state, dynamical core, diagnostics."""

from __future__ import annotations

from typing import Optional

import numpy as np

from orchestra import DaceConfig
from orchestra.comm import Communicator

from driver.config import RunConfig
from driver.diagnostics import Diagnostics
from driver.dycore import DycoreOptions, DynamicalCore
from driver.factory import StencilFactory
from driver.grid import GridFields, GridGeometry, GridInfo, Subdomain
from driver.state import ModelState
from driver.testcases import TestCase, initialize, make_test_case


class Model:
    """One rank's share of the model (building it is collective: every rank must).

    Attributes: ``config``, ``communicator``, ``subdomain``, ``geometry``
    (numpy), ``grid`` (storages), ``grid_info``, ``factory``, ``state``,
    ``test_case``, ``dycore``, ``diagnostics``, ``halo_updater``.
    """

    def __init__(self, config: RunConfig, communicator: Communicator, dace_config: DaceConfig) -> None:
        self.config = config
        self.communicator = communicator
        self.subdomain = Subdomain.of_rank(
            communicator.partitioner, communicator.rank, config.resolution, config.n_halo
        )
        self.geometry = GridGeometry.build(self.subdomain)
        self.factory = StencilFactory(
            self.subdomain, config.nz, dace_config, scratch_intermediates=config.scratch_intermediates
        )
        self.grid = GridFields(self.geometry, config.backend)
        self.grid_info = GridInfo(self.geometry)
        self.state = ModelState.zeros(self.factory)
        self.test_case: TestCase = make_test_case(config.test_case, config.alpha)
        initialize(self.state, self.geometry, self.test_case)
        self.halo_updater = communicator.halo_updater(config.n_halo)
        self.diagnostics = Diagnostics(communicator, self.geometry, communicator.halo_updater(config.n_halo))
        options = DycoreOptions(
            dt=config.dt,
            n_substeps=config.n_substeps,
            solve_momentum=self.test_case.solve_momentum,
            hyperdiffusion=config.hyperdiffusion,
            diffusion_coefficient=config.diffusion_coefficient,
        )
        self.dycore = DynamicalCore(self.state, self.grid, self.grid_info, self.factory, self.halo_updater, options)

    def update_halos(self) -> None:
        """Fill the halos of ``h`` and ``(u, v)`` (collective).

        The dynamical core exchanges halos before each stage, but with a
        prescribed wind (case 1) it exchanges only ``h``: the wind's halos are
        set here, once, after the state is initialized or read from a restart.
        """
        self.halo_updater.update(self.state.h)
        self.halo_updater.update_vector(self.state.u, self.state.v)

    def exact_surface(self, time: float) -> Optional[np.ndarray]:
        """The analytic free surface on the compute domain at ``time`` (s), or None."""
        return self.test_case.exact_height(self.geometry.compute(self.geometry.centres), time)
