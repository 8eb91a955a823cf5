"""A three-level orchestrated model for the call-tree key tests (its text is mutated by them).

Outer (orchestrated) calls Middle (an orchestrated component), which calls
Inner (another one), a plain helper object's method (which calls a static
method) and a function that calls a function; stencils and folded scalars at every level.
"""

import numpy as np
from gt4py.cartesian.gtscript import PARALLEL, Field, computation, interval

from orchestra import DaceConfig, FrozenStencil, orchestrate

FloatField = Field[np.float64]
SHAPE = (7, 6, 2)


def scale(q: FloatField, factor: float):
    with computation(PARALLEL), interval(...):
        q = q * factor + 0.125


def shift(q: FloatField, amount: float):
    with computation(PARALLEL), interval(...):
        q = q + amount * 0.5


def frozen(definition, config: DaceConfig) -> FrozenStencil:
    return FrozenStencil(definition, backend=config.backend, origin=(1, 1, 0), domain=(5, 4, 2))


def twice(amount):
    return once(amount) * 2.0


def once(amount):
    return amount + 0.375


class Helper:
    """A plain object: its method is parsed implicitly, its attribute folded in."""

    def __init__(self, config: DaceConfig) -> None:
        self.offset = 0.75
        self.unused_setting = 3.0
        self.shift = frozen(shift, config)

    @staticmethod
    def damped(amount):
        return amount * 0.625

    def apply(self, q):
        self.shift(q, self.damped(self.offset))


class Inner:
    def __init__(self, config: DaceConfig) -> None:
        self.k = 1.5
        self.scale = frozen(scale, config)
        orchestrate(obj=self, config=config)

    def __call__(self, q):
        self.scale(q, self.k)


class Middle:
    def __init__(self, config: DaceConfig) -> None:
        self.inner = Inner(config)
        self.helper = Helper(config)
        self.a = 0.25
        self.shift = frozen(shift, config)
        orchestrate(obj=self, config=config)

    def __call__(self, q):
        self.inner(q)
        self.helper.apply(q)
        self.shift(q, twice(self.a))


class Outer:
    def __init__(self, config: DaceConfig) -> None:
        self.middle = Middle(config)
        self.b = 2.0
        self.scale = frozen(scale, config)
        orchestrate(obj=self, config=config)

    def __call__(self, q):
        self.middle(q)
        self.scale(q, self.b)
