"""A model whose halo callback raises on one chosen rank (or always): tests/calls/test_callback_errors.py."""

from __future__ import annotations

import numpy as np

from orchestra import DaceConfig, dace_inhibitor, orchestrate

MESSAGE = "halo exchange failed: neighbour 3 sent 17 values, expected 24"


class Halo:
    def __init__(self, failing: bool, exchange=None) -> None:
        self.failing, self.exchange, self.after = failing, exchange, 0

    @dace_inhibitor
    def update(self, q):
        if self.failing:
            raise ValueError(MESSAGE)
        if self.exchange is not None:
            self.exchange(q)

    @dace_inhibitor
    def later(self, q):
        self.after += 1


class Model:
    def __init__(self, config: DaceConfig, halo: Halo) -> None:
        self.halo = halo
        orchestrate(obj=self, config=config)

    def __call__(self, q):
        self.halo.update(q)
        q[:] = q * 2.0
        self.halo.later(q)


def run(config: DaceConfig, failing: bool, exchange=None) -> tuple[Model, np.ndarray]:
    model = Model(config, Halo(failing, exchange))
    q = np.ones(4)
    model(q)
    return model, q
