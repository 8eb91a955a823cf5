"""The idiom corpus: the Python that FV3/NDSL model code is written in, one small model per idiom.

Each idiom was seen in the ``__call__`` methods of NDSL-based dynamical-core
components (PyFV3's transport, damping, tracer advection, C- and D-grid
solvers, remapping, the acoustics loop; NDSL's halo wrappers and timers) and
is written here in our own words. ``test_idiom_corpus.py`` runs each model
in ``Python`` mode and orchestrated and compares every array bit for bit;
``REFUSED`` lists what orchestra refuses at parse time, with the message
that must name the rewrite. ``docs/orchestration.md`` ("Model code as it is
written") has one row per idiom; a test keeps the two lists equal.
"""

from __future__ import annotations

import dataclasses
import math
from types import SimpleNamespace
from typing import Any, Callable, Optional, Tuple

import numpy as np
from dace.frontend.python.interface import nounroll as dace_nounroll

from orchestra import DaceConfig, FrozenStencil, dace_inhibitor, orchestrate
from tests.idioms import stencils as st
from tests.idioms.stencils import DOMAIN, ORIGIN


@dataclasses.dataclass(frozen=True)
class Idiom:
    name: str  #: what the idiom is (the row of the docs table)
    seen_in: str  #: where model code uses it
    model: Callable[[DaceConfig], Any]
    call: Callable[[Any, SimpleNamespace], Any]


IDIOMS: list[Idiom] = []


def idiom(name: str, seen_in: str, call: Optional[Callable[[Any, SimpleNamespace], Any]] = None):
    """Class decorator: register a model class as an idiom (called ``model(f.x, f.y)`` by default)."""

    def register(cls: type) -> type:
        IDIOMS.append(Idiom(name, seen_in, cls, call or (lambda model, f: model(f.x, f.y))))
        return cls

    return register


def stencil(config: DaceConfig, definition: Callable, origin: Any = ORIGIN, domain: Any = DOMAIN) -> FrozenStencil:
    return FrozenStencil(definition, backend=config.backend, origin=origin, domain=domain)


class Component:
    """A nested orchestrated component: ``self.inner(x, y, a)``."""

    def __init__(self, config: DaceConfig, factor: float = 0.5) -> None:
        self._axpy = stencil(config, st.axpy)
        self._factor = factor
        orchestrate(obj=self, config=config)

    def __call__(self, x, y, a: float):
        self._axpy(x, y, a * self._factor)


class OptionalComponent:
    """A component with an optional argument it tests again (``mass=None`` passed on)."""

    def __init__(self, config: DaceConfig) -> None:
        self._axpy = stencil(config, st.axpy)
        orchestrate(obj=self, config=config)

    def __call__(self, x, y, mass=None):
        if mass is None:
            self._axpy(x, y, 0.5)
        else:
            self._axpy(mass, y, 0.25)


# --------------------------------------------------------------- calls
@idiom("stencil called with positional arguments from self and arguments", "every component")
class PositionalCall:
    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        self._axpy(x, y, 0.5)


@idiom("stencil called with keyword arguments only, in another order", "delnflux, d_sw kinetic energy")
class KeywordCall:
    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        self._axpy(a=0.5, y=y, x=x)


@idiom("stencil called with positional then keyword arguments", "fvtp2d, map_single")
class MixedCall:
    def __init__(self, config):
        self._copy = stencil(config, st.copy_scaled)
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        self._copy(x, q_out=y, a=0.25)


@idiom("nested component called with keyword arguments", "dyn_core update_height_on_d_grid")
class NestedKeywordCall:
    def __init__(self, config):
        self.inner = Component(config)
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        self.inner(y=y, a=0.25, x=x)


@idiom("the same array passed twice to one stencil (read twice)", "c_sw corner filling, fxadv")
class SameArrayTwice:
    def __init__(self, config):
        self._add = stencil(config, st.add_into)
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        self._add(x, x, y)


@idiom("the same array as input and output of one stencil", "delnflux copy_corners(q_in=d2, q_out=d2)")
class SameArrayInOut:
    def __init__(self, config):
        self._copy = stencil(config, st.copy_scaled)
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        self._copy(q_in=y, q_out=y, a=0.5)


@idiom("plain (not orchestrated) helper method called from __call__", "tracer_2d_1l _halo_exchange_tracers")
class HelperMethod:
    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        orchestrate(obj=self, config=config)

    def _half_step(self, x, y):
        self._axpy(x, y, 0.5)

    def __call__(self, x, y):
        self._half_step(x, y)
        self._half_step(y, x)


@idiom("static methods: one computing a coefficient, one updating arrays", "helpers of model classes")
class StaticMethods:
    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        self._weight = 0.75
        orchestrate(obj=self, config=config)

    @staticmethod
    def _coefficient(weight):
        return weight * 0.5 + 1.0

    @staticmethod
    def _relax(q, target):
        q[:] = 0.5 * (q + target)

    def __call__(self, x, y):
        self._axpy(x, y, self._coefficient(self._weight))
        self._relax(y, x)


@idiom("a property returning an array passed to a stencil", "grid data accessors")
class PropertyArray:
    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        self._weights = _array(11)
        orchestrate(obj=self, config=config)

    @property
    def weights(self):
        return self._weights

    def __call__(self, x, y):
        self._axpy(self.weights, y, 0.5)


@idiom("array owned by a nested component read by its owner", "dyn_core reading c_sw's delpc")
class ComponentArray:
    def __init__(self, config):
        self.csw = SimpleNamespace(delpc=_array(12))
        self.inner = Component(config)
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        self.inner(self.csw.delpc, y, 1.0)


@idiom("metric terms read through a grid object (self.grid_data.rarea)", "68 reads in PyFV3")
class GridData:
    def __init__(self, config):
        self._apply = stencil(config, st.apply_fluxes)
        self._fx = stencil(config, st.flux_x)
        self._fy = stencil(config, st.flux_y)
        self.grid_data = SimpleNamespace(rarea=_array(13)[:, :, 0].copy())
        self._tmp_fx, self._tmp_fy = _zeros(), _zeros()
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        self._fx(x, self._tmp_fx, 0.5)
        self._fy(x, self._tmp_fy, 0.5)
        self._apply(y, self._tmp_fx, self._tmp_fy, self.grid_data.rarea)


class _BaseStep:
    """A component another one extends."""

    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)

    def __call__(self, x, y):
        self._axpy(x, y, 0.5)

    def correct(self, x, y):
        self._axpy(y, x, 0.125)


@idiom("a subclass's method calling the base's: `super().__call__(x, y)`, `Base.correct(self, x, y)`",
       "components extending another (a variant of a scheme adding a step)")
class ExtendsBase(_BaseStep):
    def __init__(self, config):
        super().__init__(config)
        self._copy = stencil(config, st.copy_scaled)
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        super().__call__(x, y)
        self._copy(y, x, 0.25)
        _BaseStep.correct(self, x, y)


# ------------------------------------------------------ optional arguments
@idiom("optional argument left None, tested with `is None`", "fvtp2d, delnflux, map_single",
       call=lambda model, f: model(f.x, f.y))
class OptionalNone:
    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        orchestrate(obj=self, config=config)

    def __call__(self, x, y, mass=None):
        if mass is None:
            self._axpy(x, y, 0.5)
        else:
            self._axpy(mass, y, 2.0)


@idiom("optional argument given, tested with `is not None`", "c_sw divergence corner",
       call=lambda model, f: model(f.x, f.y, f.z))
class OptionalGiven:
    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        orchestrate(obj=self, config=config)

    def __call__(self, x, y, mass=None):
        if mass is not None:
            self._axpy(mass, y, 2.0)
        self._axpy(x, y, 0.5)


@idiom("an optional that may be None passed on to a component that tests it again", "delnflux -> DelnFluxNoSG")
class OptionalPassedOn:
    def __init__(self, config):
        self.inner = OptionalComponent(config)
        orchestrate(obj=self, config=config)

    def __call__(self, x, y, mass=None):
        self.inner(x, y, mass=mass)
        self.inner(x, y, mass=x)


@idiom("a scalar argument with a default value", "map_single qmin=0.0, dyn_core n_map=1")
class ScalarDefault:
    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        orchestrate(obj=self, config=config)

    def __call__(self, x, y, qmin: float = 0.125):
        self._axpy(x, y, qmin)


@idiom("an optional array argument given a default in an `if` (`if mass is None: mass = self._default`)",
       "model code with optional fields (masks, mass fluxes)",
       call=lambda model, f: (model(f.x, f.y), model(f.x, f.y, f.z)))
class OptionalArrayDefault:
    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        self._default = fields().z
        orchestrate(obj=self, config=config)

    def __call__(self, x, y, mass=None):
        if mass is None:
            mass = self._default  # DaCe kept the folded None after this assignment
        self._axpy(mass, y, 0.5)
        self._axpy(x, mass, 0.25)


# ------------------------------------------------------------ returns
@idiom("early `return fx, fy` behind a flag, and again at the end", "delnflux",
       call=lambda model, f: model(f.x, f.y))
class EarlyReturn:
    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        self._no_compute = False
        orchestrate(obj=self, config=config)

    def __call__(self, fx, fy):
        if self._no_compute is True:
            return fx, fy
        self._axpy(fx, fy, 0.5)
        return fx, fy


@idiom("component returning its own arrays (`return self.delpc, self.ptc`)", "c_sw")
class ReturnsOwnArrays:
    def __init__(self, config):
        self._copy = stencil(config, st.copy_scaled)
        self.delpc = _zeros()
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        self._copy(x, self.delpc, 2.0)
        return self.delpc, y


# ---------------------------------------------- compile-time collections
@idiom("list of stencils indexed by the loop variable of range(self.n)", "delnflux, del2cubed, divergence_damping")
class StencilListByIndex:
    def __init__(self, config):
        self._nmax = 3
        self._stencils = [stencil(config, st.axpy, domain=(DOMAIN[0] - n, DOMAIN[1], DOMAIN[2])) for n in range(3)]
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        for n in range(self._nmax):
            self._stencils[n](x, y, 0.5 + n)


@idiom("loop variable arithmetic and a test on it inside such a loop", "del2cubed (nt = ntimes - (n + 1))")
class LoopArithmetic:
    def __init__(self, config):
        self._ntimes = 3
        self._update = [stencil(config, st.axpy) for _ in range(3)]
        self._scale = stencil(config, st.scale)
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        for n in range(self._ntimes):
            nt = self._ntimes - (n + 1)
            if nt > 0:
                self._scale(y, 0.5)
            self._update[n](x, y, 1.0 + nt)


@idiom("two lists indexed by the same loop variable, one of them of coefficients", "divergence_damping")
class ParallelLists:
    def __init__(self, config):
        self._stencils = [stencil(config, st.axpy), stencil(config, st.axpy)]
        self._coefficients = [0.25, 0.75]
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        for n in range(len(self._stencils)):
            self._stencils[n](x, y, self._coefficients[n])


@idiom("list of components indexed by the loop variable", "mapn_tracer remap objects")
class ComponentListByIndex:
    def __init__(self, config):
        self._components = [Component(config, 0.5), Component(config, 2.0)]
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        for i in range(2):
            self._components[i](x, y, 0.25)


@idiom("enumerate over a list of components", "mapn_tracer")
class EnumerateComponents:
    def __init__(self, config):
        self._components = [Component(config, 0.5), Component(config, 2.0)]
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        for i, component in enumerate(self._components):
            component(x, y, 1.0 + i)


@idiom("zip over stencils and coefficients", "NDSL helpers")
class ZipStencils:
    def __init__(self, config):
        self._stencils = [stencil(config, st.axpy), stencil(config, st.axpy)]
        self._coefficients = (0.5, 0.125)
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        for stencil_, a in zip(self._stencils, self._coefficients):
            stencil_(x, y, a)


@idiom("zip over stencils and the Quantities each updates, held by the model",
       "NDSL helpers pairing stencils with their fields")
class ZipStencilsQuantities:
    def __init__(self, config):
        self._stencils = [stencil(config, st.scale), stencil(config, st.scale)]
        self._quantities = [_quantity(34), _quantity(35)]
        self._axpy = stencil(config, st.axpy)
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        for stencil_, q in zip(self._stencils, self._quantities):
            stencil_(q, 3.0)
            self._axpy(q, y, 0.5)


@idiom("enumerate (with a start) over a list of arrays, zip of lists inside", "tracer and per-level loops")
class EnumerateArrays:
    def __init__(self, config):
        self._arrays = (_array(36), _array(37), _array(38))
        self._coefficients = [0.5, 0.25]
        self._scale = stencil(config, st.scale)
        self._axpy = stencil(config, st.axpy)
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        for n, (q, a) in enumerate(zip(self._arrays, self._coefficients), start=1):
            self._scale(q, a * n)
            self._axpy(q, y, 1.0)
        for q in reversed(self._arrays):
            self._axpy(y, q, 0.125)


@idiom("a loop over a slice of a list of stencils (`self.stencils[1:]`), and its last one by `[-1]`",
       "per-order stencil tables skipping the first order")
class StencilListSlice:
    def __init__(self, config):
        self._stencils = [stencil(config, st.axpy), stencil(config, st.scale), stencil(config, st.scale)]
        self._nmax = 2
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        self._stencils[-3](x, y, 0.5)
        for stencil_ in self._stencils[1:]:
            stencil_(y, 1.5)
        for stencil_, a in zip(self._stencils[-self._nmax:], (0.5, 2.0)):
            stencil_(x, a)


@idiom("zip over tracer names and the components remapping them, the tracer dict indexed by the name",
       "mapn_tracer-style loops pairing names with objects", call=lambda model, f: model(f.tracers, f.y))
class ZipNamesComponents:
    def __init__(self, config):
        self._names = ("qliquid", "qvapor")
        self._remap = [Component(config, 0.5), Component(config, 2.0)]
        orchestrate(obj=self, config=config, dace_compiletime_args=["tracers"])

    def __call__(self, tracers, y):
        for name, remap in zip(self._names, self._remap):
            remap(tracers[name], y, 0.25)


@idiom("zip over two lists of arrays given as compile-time arguments", "NDSL helpers taking lists of quantities",
       call=lambda model, f: model([f.x, f.z], [f.y, f.quantity]))
class ZipArgumentLists:
    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        orchestrate(obj=self, config=config, dace_compiletime_args=["inputs", "outputs"])

    def __call__(self, inputs, outputs):
        for source, target in zip(inputs, outputs):
            self._axpy(source, target, 0.5)


@idiom("nested lists: a loop inside a loop, each indexing", "per-order, per-level stencil tables")
class NestedLists:
    def __init__(self, config):
        self._table = [[stencil(config, st.axpy), stencil(config, st.axpy)], [stencil(config, st.scale)]]
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        for i in range(len(self._table)):
            for j in range(len(self._table[i])):
                if i == 0:
                    self._table[i][j](x, y, 0.5 * (j + 1))
                else:
                    self._table[i][j](y, 0.5)


@idiom("a self dict of arrays indexed by a string literal", "d_sw column_namelist['damp_w']")
class SelfDictLiteral:
    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        self._column = {"damp_w": _array(14), "damp_vt": _array(15)}
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        self._axpy(self._column["damp_w"], y, 0.5)
        self._axpy(self._column["damp_vt"], x, 0.5)


@idiom("loop over a dict of tracers given as a compile-time argument (.values())", "tracer_2d_1l",
       call=lambda model, f: model(f.tracers, f.y))
class TracerValues:
    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        orchestrate(obj=self, config=config, dace_compiletime_args=["tracers"])

    def __call__(self, tracers, y):
        for q in tracers.values():
            self._axpy(y, q, 0.5)


@idiom("loop over .items() of a tracer dict", "tracer loops", call=lambda model, f: model(f.tracers, f.y))
class TracerItems:
    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        self._weights = {"qvapor": 0.5, "qliquid": 0.25}
        orchestrate(obj=self, config=config)

    def __call__(self, tracers, y):
        for name, q in tracers.items():
            self._axpy(y, q, self._weights[name])


@idiom("loop over filtered dict keys, tracer indexed by the key", "fillz", call=lambda model, f: model(f.tracers, f.y))
class TracerKeys:
    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        self._names = {"qliquid": True}
        orchestrate(obj=self, config=config, dace_compiletime_args=["tracers"])

    def __call__(self, tracers, y):
        for name in self._names.keys():
            self._axpy(y, tracers[name], 0.5)


@idiom("tracer dict indexed by string literals", "remapping (24 reads)", call=lambda model, f: model(f.tracers, f.y))
class TracerLiteral:
    def __init__(self, config):
        self._add = stencil(config, st.add_into)
        orchestrate(obj=self, config=config, dace_compiletime_args=["tracers"])

    def __call__(self, tracers, y):
        self._add(tracers["qvapor"], tracers["qliquid"], y)


@idiom("slices of a 4-D tracer array passed to a stencil in a loop", "newest PyFV3 tracers[:, :, :, i]")
class TracerSlices:
    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        self._nq = 2
        self.tracers = _array(16, extra=(2,))
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        for i in range(self._nq):
            self._axpy(self.tracers[:, :, :, i], y, 0.5 + i)


# -------------------------------------------------------------- aliases
@idiom("local alias of a stencil (`st = self.stencil`)", "model code generally")
class StencilAlias:
    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        axpy = self._axpy
        axpy(x, y, 0.5)
        axpy(y, x, 0.25)


@idiom("a local bound to one stencil or another by the configuration (`if/elif/else`), called after the `if`",
       "model code choosing a scheme (upwind or centered fluxes) where it is used")
class StencilChosenInBranches:
    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        self._copy = stencil(config, st.copy_scaled)
        self._scheme = "copy"
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        if self._scheme == "axpy":
            op = self._axpy
        elif self._scheme == "copy":
            op = self._copy
        else:
            op = self._axpy
        op(x, y, 0.5)
        op(y, x, 0.25)


@idiom("a local bound to an array, then to another by a run-time flag (`src = self.tmp`, `if flip: src = q`), used after the `if`",
       "model code choosing an input field (`src = q if ... else self.tmp`) by a run-time value",
       call=lambda model, f: (model(f.x, f.y, True), model(f.x, f.y, False)))
class ArrayChosenAtRunTime:
    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        self._held = fields().z
        orchestrate(obj=self, config=config)

    def __call__(self, x, y, flip: bool):
        src = self._held
        if flip:
            src = x
        self._axpy(src, y, 0.5)
        self._axpy(y, src, 0.25)


@idiom("local lists of stencils and of arrays, and literals, in `zip`/`enumerate` loops and indexed (`ops = [self.a, self.b]`)",
       "model code grouping what a loop applies")
class LocalListOfStencils:
    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        self._copy = stencil(config, st.copy_scaled)
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        ops = [self._axpy, self._copy]
        inputs = (x, y)
        for op, q in zip(ops, inputs):
            op(q, y, 0.5)
        for i, q in enumerate((y, x)):
            ops[0](q, x, 0.25 * (i + 1))


@idiom("local alias of a grid object (`g = self.grid`)", "model code generally")
class GridAlias:
    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        self.grid = SimpleNamespace(area=_array(17), dx=_array(18))
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        g = self.grid
        self._axpy(g.area, y, 0.5)
        self._axpy(g.dx, y, 0.25)


@idiom("local alias of an array (`dp2 = self._tmp_dp`) used in a loop", "tracer_2d_1l")
class ArrayAlias:
    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        self._tmp_dp = _zeros()
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        dp2 = self._tmp_dp
        for _ in range(2):
            self._axpy(x, dp2, 0.5)
            self._axpy(dp2, y, 0.25)


@idiom("local alias of a config value used as a loop bound", "dyn_core n_split = self.config.n_split")
class ScalarAlias:
    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        self.config = SimpleNamespace(n_split=3)
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        n_split = self.config.n_split
        for _ in range(n_split):
            self._axpy(x, y, 0.5)


@idiom("local alias of a list element inside the loop (`st = self.stencils[n]`)", "model code generally")
class ElementAlias:
    def __init__(self, config):
        self._stencils = [stencil(config, st.axpy), stencil(config, st.axpy)]
        self._coefficients = [0.5, 0.25]
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        for n in range(2):
            stencil_ = self._stencils[n]
            a = self._coefficients[n]
            stencil_(x, y, a)


@idiom("tuple alias (`a, b = self.x, self.y`)", "model code generally")
class TupleAlias:
    def __init__(self, config):
        self._axpy, self._scale = stencil(config, st.axpy), stencil(config, st.scale)
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        first, second = self._axpy, self._scale
        first(x, y, 0.5)
        second(y, 2.0)


@idiom("local alias of a halo updater, then start()/wait()", "dyn_core halo updaters")
class HaloAlias:
    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        self._halo_updaters = SimpleNamespace(delp=CountingHalo())
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        halo = self._halo_updaters.delp
        halo.start()
        self._axpy(x, y, 0.5)
        halo.wait()


# ------------------------------------------------------------ callbacks
class CountingHalo:
    """A halo updater stand-in: dace_inhibitor methods without arguments (NDSL's WrappedHaloUpdater)."""

    def __init__(self) -> None:
        self.started = 0

    @dace_inhibitor
    def start(self):
        self.started += 1

    @dace_inhibitor
    def wait(self):
        pass

    @dace_inhibitor
    def update(self):
        self.start()
        self.wait()


@idiom("halo updater start()/wait()/update() on a nested object", "dyn_core (22 calls), tracer_2d_1l")
class HaloCalls:
    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        self._halo_updaters = SimpleNamespace(q_con=CountingHalo(), delp=CountingHalo())
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        self._halo_updaters.q_con.start()
        self._axpy(x, y, 0.5)
        self._halo_updaters.q_con.wait()
        self._halo_updaters.delp.update()


@idiom("callback returning a scalar into an annotated variable", "dyn_core dt_acoustic_substep, _get_da_min")
class AnnotatedCallback:
    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        self._da_min = 0.75
        orchestrate(obj=self, config=config)

    @dace_inhibitor
    def _get_da_min(self) -> float:
        return self._da_min

    def __call__(self, x, y):
        da_min: float = self._get_da_min()
        cd = 0.2 * da_min
        self._axpy(x, y, cd)


@idiom("callback that counts its calls (`self.n += 1; return self.n`), its result in a stencil argument",
       "step counters and first-step flags kept in Python")
class CallbackCounter:
    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        self._calls = 0
        orchestrate(obj=self, config=config)

    @dace_inhibitor
    def _tick(self) -> int:
        self._calls += 1
        return self._calls  # the value now, not the one folded in when the program was parsed

    def __call__(self, x, y):
        n = self._tick()
        self._axpy(x, y, 0.5 * n)


@idiom("callback result used in an expression, no annotated variable", "divergence_damping 0.18 * da_min")
class CallbackInExpression:
    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        orchestrate(obj=self, config=config)

    @dace_inhibitor
    def _get_da_min(self) -> float:
        return 0.5

    def __call__(self, x, y):
        self._axpy(x, y, 0.18 * self._get_da_min())
        if self._get_da_min() > 0.25:
            self._axpy(x, y, self._get_da_min())


@idiom("callback returning a tuple, unpacked", "issue 22 (a, b = self.get_two())")
class TupleCallback:
    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        orchestrate(obj=self, config=config)

    @dace_inhibitor
    def _limits(self) -> Tuple[float, float]:
        return 0.25, 1.5

    def __call__(self, x, y):
        low, high = self._limits()
        self._axpy(x, y, low)
        self._axpy(y, x, high - low)


@idiom("math.floor of a callback result as a run-time loop bound", "tracer_2d_1l n_split")
class FloorOfCallback:
    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        orchestrate(obj=self, config=config)

    @dace_inhibitor
    def _cmax(self) -> float:
        return 1.6

    def __call__(self, x, y):
        n_split = math.floor(1.0 + self._cmax())
        for _ in range(n_split):
            self._axpy(x, y, 1.0 / n_split)


@idiom("`if __debug__:` around a logging callback with a string", "fv_dynamics log_on_rank_0")
class DebugLog:
    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        if __debug__:
            log_on_rank_0("Remapping")
        self._axpy(x, y, 0.5)


@dace_inhibitor
def log_on_rank_0(message: str):
    """Module-level callback (logging stays in Python)."""


class Timer:
    """A timer whose ``clock`` context enters and exits through callbacks (NDSL's Timer)."""

    def __init__(self) -> None:
        self.entered = 0

    def clock(self, name: str) -> "_Clock":
        return _Clock(self)


class _Clock:
    def __init__(self, timer: Timer) -> None:
        self.timer = timer

    @dace_inhibitor
    def __enter__(self):
        self.timer.entered += 1

    @dace_inhibitor
    def __exit__(self, *exception):
        pass


@idiom("`with timer.clock(...)` around component calls", "fv_dynamics _compute")
class TimerContext:
    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        self.timer = Timer()
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        with self.timer.clock("acoustics"):
            self._axpy(x, y, 0.5)


# ------------------------------------------------- scalars and control flow
@idiom("config flags and comparisons in `if`", "c_sw grid_type < 3, remap_profile abs(kord) <= 16")
class ConfigFlags:
    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        self.config = SimpleNamespace(grid_type=0, kord=-9, d_con=0.0, stochastic=True)
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        if self.config.grid_type < 3:
            self._axpy(x, y, 0.5)
        if abs(self.config.kord) <= 16:
            self._axpy(x, y, 0.25)
        if self.config.d_con > 1.0e-5 or self.config.stochastic:
            self._axpy(y, x, 0.125)


@idiom("`is True` on a boolean held by the model", "delnflux, mapn_tracer")
class IsTrue:
    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        self._fill_negative = True
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        if self._fill_negative is True:
            self._axpy(x, y, 0.5)


@idiom("boolean expression of flags and the loop variable in a loop", "divergence_damping fillc")
class FlagsInLoop:
    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        self._nonzero_nord = 3
        self.grid_indexing = SimpleNamespace(sw_corner=True, se_corner=False)
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        for n in range(self._nonzero_nord):
            fillc = (n + 1 != self._nonzero_nord) and (self.grid_indexing.sw_corner or self.grid_indexing.se_corner)
            if fillc:
                self._axpy(x, y, 0.5)


@idiom("`raise` in a branch dead for this configuration", "fv_dynamics use_logp, remapping")
class DeadRaise:
    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        self.config = SimpleNamespace(use_logp=False)
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        if self.config.use_logp:
            raise NotImplementedError("unimplemented namelist option use_logp=True")
        self._axpy(x, y, 0.5)


@idiom("a plain gt4py stencil object (`gtscript.stencil(...)`) called with `origin=`/`domain=`: offsets, an edge region, a FORWARD sweep",
       "models written from gt4py's own docs; NDSL's stencil factory underneath")
class PlainGt4pyStencil:
    def __init__(self, config):
        from gt4py.cartesian import gtscript

        self._edge_sweep = gtscript.stencil(backend=config.backend, definition=st.edge_sweep)
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        self._edge_sweep(x, y, origin=ORIGIN, domain=DOMAIN)


@idiom("a call on `None` in a branch dead for this configuration (`if self.call_checkpointer: self.checkpointer(...)`)",
       "dyn_core checkpoint methods without a checkpointer")
class DeadCallOnNone:
    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        self.checkpointer = None
        self.call_checkpointer = self.checkpointer is not None
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        if self.call_checkpointer:
            self.checkpointer("In", x=x, y=y)
        self._axpy(x, y, 0.5)


@idiom("scalar locals from self, math, abs, min and **", "ray_fast, riem_solver3, saturation adjustment",
       call=lambda model, f: model(f.x, f.y, 0.3))
class ScalarArithmetic:
    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        self._tau, self._ptop, self._rf_cutoff = 3.0, 100.0, 0.5
        orchestrate(obj=self, config=config)

    def __call__(self, x, y, dt: float):
        factor = math.exp(-dt / self._tau)
        log_top = math.log(self._ptop)
        cutoff = self._rf_cutoff + min(100.0, 10.0 * dt)
        self._axpy(x, y, factor + 0.01 * log_top + abs(-dt) * cutoff + dt ** 0.5)


@idiom("`//` and `%` of run-time integers (negative too) and floats, with Python's meaning",
       "index and sub-step arithmetic (k // 2, n % n_split)", call=lambda model, f: model(f.x, f.y, -3, -7.5))
class FloorDivisionModulo:
    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        self._n_split = 2
        orchestrate(obj=self, config=config)

    def __call__(self, x, y, n: int, a: float):
        half = n // 2  # -2 in Python; C's division gives -1
        rest = n % self._n_split  # 1 in Python; C's % gives -1
        half //= 1
        self._axpy(x, y, 1.0 * half + 10.0 * rest + 100.0 * (a % 2.0) + 1000.0 * (a // 2.0))


class _SkipsWhenOff:
    """A nested component that returns early, when told at run time."""

    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        orchestrate(obj=self, config=config)

    def __call__(self, x, y, on: bool):
        if not on:
            return
        self._axpy(x, y, 0.5)


@idiom("early `return` in helpers and a nested component, taken at run time",
       "guard clauses (`if not flag: return`), `if ...: return a` / `return b` helpers",
       call=lambda model, f: model(f.x, f.y, True))
class EarlyReturnsInCallees:
    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        self.inner = _SkipsWhenOff(config)
        orchestrate(obj=self, config=config)

    def _coefficient(self, flip: bool):
        if flip:
            return 0.25  # DaCe ended the whole program here
        return 0.5

    def _increments(self, x, flip: bool):
        if flip:
            return x + 1.0, 2.0
        return x * 3.0, 4.0

    def __call__(self, x, y, flip: bool):
        self._axpy(x, y, self._coefficient(flip))
        self.inner(x, y, not flip)
        increment, weight = self._increments(x, flip)
        self._axpy(increment, y, weight)


@idiom("a helper that runs a stencil, called inside another stencil's arguments",
       "`self._stencil(q, self._prepare(q), dt)` in model code")
class HelperInsideArguments:
    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        self._buffer = fields().z.copy()
        orchestrate(obj=self, config=config)

    def _prepared(self, x):
        self._axpy(x, self._buffer, 0.5)  # DaCe's closure resolution did not look in here
        return self._buffer

    def _weight(self, x) -> float:
        return 0.25

    def __call__(self, x, y):
        self._axpy(self._prepared(x), y, self._weight(x) + abs(-0.5))
        self._axpy(self._buffer, x, 0.125)  # the helper's writes reached the model's own array


@idiom("a comparison passed as a boolean stencil argument", "dyn_core zero_data(..., n_map == 1)",
       call=lambda model, f: model(f.x, f.y, 1))
class ComparisonArgument:
    def __init__(self, config):
        self._toggled = stencil(config, st.toggled)
        orchestrate(obj=self, config=config)

    def __call__(self, x, y, n_map: int):
        self._toggled(x, y, n_map == 1)


@idiom("numpy scalar cast of a value held by the model", "PyFV3 Float(...) casts")
class NumpyCast:
    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        self._k_split = 2
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        self._axpy(x, y, np.float64(self._k_split) * 0.25)


@idiom("explicit `nounroll(range(n))` loop", "dyn_core, fv_dynamics (older PyFV3)")
class NoUnrollLoop:
    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        self.config = SimpleNamespace(n_split=3)
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        n_split = self.config.n_split
        for _ in dace_nounroll(range(n_split)):
            self._axpy(x, y, 0.5)


@idiom("run-time loop count given as an argument, temporaries swapped by stencils", "tracer_2d_1l sub-steps",
       call=lambda model, f: model(f.x, f.y, 3))
class RuntimeLoop:
    def __init__(self, config):
        self._copy = stencil(config, st.copy_scaled)
        self._axpy = stencil(config, st.axpy)
        self._dp2 = _zeros()
        orchestrate(obj=self, config=config)

    def __call__(self, x, y, n_split: int):
        for _ in range(n_split):
            self._copy(y, self._dp2, 0.5)
            self._axpy(self._dp2, y, 0.25)


@idiom("vertical solver stencil (FORWARD/BACKWARD) between horizontal ones", "riem_solver3, remapping")
class VerticalSweep:
    def __init__(self, config):
        self._sum = stencil(config, st.column_sum)
        self._axpy = stencil(config, st.axpy)
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        self._axpy(x, y, 0.5)
        self._sum(y, x)


@idiom("per-field origin for a 2-D field ({'_all_': ..., 'area': ...})", "a2b_ord4 edge_w")
class PerFieldOrigin:
    def __init__(self, config):
        self._apply = stencil(config, st.apply_fluxes, origin={"_all_": ORIGIN, "area": (0, 0)})
        self._area = _array(19)[:, :, 0].copy()
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        self._apply(y, x, x, self._area)


@idiom("strided slices assigned in Python (`y[::2] = x[::2] * 3.0`)", "every-other-level and checkerboard fix-ups")
class StridedSlices:
    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        y[::2, :, :] = x[::2, :, :] * 3.0
        self._axpy(x, y, 0.5)


@idiom("a chained comparison of run-time values (`if 0.0 < dt <= self._dt_max:`)", "CFL and limiter checks",
       call=lambda model, f: (model(f.x, f.y, 0.5), model(f.x, f.y, 2.0)))
class ChainedComparison:
    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        self._dt_max = 1.0
        orchestrate(obj=self, config=config)

    def __call__(self, x, y, dt: float):
        if 0.0 < dt <= self._dt_max:
            self._axpy(x, y, dt)
        else:
            self._axpy(y, x, 0.25)


@idiom("an array argument bound again to a new value (`x = x * 2.0`), the caller's array left as it was",
       "model code reusing a parameter's name for a derived field")
class RebindsArgument:
    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        x = x * 2.0  # a new local array in Python; DaCe wrote it into the caller's x
        self._axpy(x, y, 0.5)
        x = x + y
        self._axpy(x, y, 0.25)


@idiom("an array element read into a name, the array then written by a stencil (`top = q[1, 1, 0]`)",
       "a scalar read off a field before the stencil that updates it")
class ElementReadAcrossStencil:
    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        top = x[1, 1, 0]  # a number in Python; DaCe kept a view of the element
        self._axpy(y, x, 1.0)
        self._axpy(x, y, top)


@idiom("elements swapped and cross-updated in Python (`q[0, 0, 0], q[1, 1, 1] = q[1, 1, 1], q[0, 0, 0]`)",
       "corner and edge fix-ups written in Python")
class SwapsElements:
    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        x[0, 0, 0], x[1, 1, 1] = x[1, 1, 1], x[0, 0, 0]
        a = y[2, 2, 2]
        b = y[3, 3, 1]
        y[2, 2, 2] = b * 2.0
        y[3, 3, 1] = a * 3.0
        self._axpy(x, y, 0.5)


# ------------------------------------------------ shapes of whole components
TRACER_NAMES = ["qvapor", "qliquid", "qice"]  #: a module-level list, sliced by a count the model holds


@idiom("enumerate over a module-level list sliced by a count the model holds, indexing a component list",
       "mapn_tracer (older PyFV3)", call=lambda model, f: model(f.tracers, f.y))
class SlicedModuleList:
    def __init__(self, config):
        self._nq = 2
        self._remap = [Component(config, 0.5), Component(config, 2.0)]
        orchestrate(obj=self, config=config, dace_compiletime_args=["tracers"])

    def __call__(self, tracers, y):
        for i, name in enumerate(TRACER_NAMES[0:self._nq]):
            self._remap[i](tracers[name], y, 0.25)


class NullTimer:
    """A timer that does nothing (NDSL's NullTimer), a compile-time default argument."""

    def clock(self, name: str) -> "_NullClock":
        return _NullClock()


class _NullClock:
    @dace_inhibitor
    def __enter__(self):
        pass

    @dace_inhibitor
    def __exit__(self, *exception):
        pass


class StateComponent:
    """A nested component taking the state as a compile-time argument and scalars by keyword."""

    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        orchestrate(obj=self, config=config, dace_compiletime_args=["state"])

    def __call__(self, state, timestep: float, n_map: int):
        self._axpy(state.u, state.v, timestep * n_map)


@idiom("a named method orchestrated, __call__ forwarding *args/**kwargs to it, a default NullTimer",
       "fv_dynamics step_dynamics", call=lambda model, f: (model(f.state, 2), model(f.state, n_map=1)))
class NamedMethod:
    def __init__(self, config):
        self.acoustic_dynamics = StateComponent(config)
        self._timestep, self._k_split = 2.0, 4
        self.config = SimpleNamespace(k_split=2, n_split=3, breed_vortex_inline=False)
        self._axpy = stencil(config, st.axpy)
        orchestrate(obj=self, config=config, method_to_orchestrate="step_dynamics",
                    dace_compiletime_args=["state", "timer"])

    def __call__(self, *args, **kwargs):
        return self.step_dynamics(*args, **kwargs)

    def step_dynamics(self, state, n_map: int, timer=NullTimer()):
        with timer.clock("acoustics"):
            self.acoustic_dynamics(state, timestep=self._timestep / self._k_split, n_map=n_map)
        end_step = n_map == self.config.k_split
        for it in range(self.config.n_split):
            remap_step = False
            if self.config.breed_vortex_inline or (it == self.config.n_split - 1):
                remap_step = True
            if remap_step and end_step:
                self._axpy(state.u, state.v, 0.5)


@idiom("callback and receiving variable annotated with a numpy type (`x: Float = ...`)", "dyn_core da_min: Float")
class NumpyAnnotations:
    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        orchestrate(obj=self, config=config)

    @dace_inhibitor
    def _get_da_min(self) -> np.float64:
        return np.float64(0.3)

    def __call__(self, x, y):
        da_min: np.float64 = self._get_da_min()
        self._axpy(x, y, da_min)


class CGridSolver:
    """Returns its own arrays (c_sw's ``return self.delpc, self.ptc``)."""

    def __init__(self, config):
        self._copy = stencil(config, st.copy_scaled)
        self.delpc, self.ptc = _zeros(), _zeros()
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        self._copy(x, self.delpc, 0.5)
        self._copy(y, self.ptc, 2.0)
        return self.delpc, self.ptc


@idiom("a component's returned arrays ignored, read through the component instead", "dyn_core after c_sw")
class ReturnIgnored:
    def __init__(self, config):
        self.cgrid = CGridSolver(config)
        self._axpy = stencil(config, st.axpy)
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        self.cgrid(x, y)
        self._axpy(self.cgrid.delpc, y, 0.25)


@idiom("a component's returned arrays unpacked, then written into (they are the component's arrays)",
       "model code generally")
class ReturnUnpackedAndWritten:
    def __init__(self, config):
        self.cgrid = CGridSolver(config)
        self._axpy = stencil(config, st.axpy)
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        delpc, ptc = self.cgrid(x, y)
        self._axpy(x, delpc, 0.5)  # writes self.cgrid.delpc, as in Python
        self._axpy(self.cgrid.delpc, ptc, 0.25)
        self._axpy(ptc, y, 1.0)


@idiom("a helper's returned argument unpacked and written into", "map_single returns q1",
       call=lambda model, f: model(f.x, f.y))
class HelperReturnsArgument:
    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        orchestrate(obj=self, config=config)

    def _map(self, q, y):
        self._axpy(y, q, 0.5)
        return q

    def __call__(self, x, y):
        q1 = self._map(x, y)
        self._axpy(y, q1, 0.25)  # writes x, as in Python


@idiom("`is not None` on a stencil attribute and on an attribute left None", "c_sw divergence corner")
class OptionalStencilAttribute:
    def __init__(self, config):
        self._corner = stencil(config, st.scale)
        self._absent = None
        self._axpy = stencil(config, st.axpy)
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        if self._corner is not None:
            self._corner(y, 2.0)
        if self._absent is not None:
            self._absent(y, 3.0)
        self._axpy(x, y, 0.5)


@idiom("a callback taking arrays and returning a scalar", "tracer_2d_1l Courant maximum")
class CallbackWithArrays:
    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        orchestrate(obj=self, config=config)

    @dace_inhibitor
    def _largest(self, x, y) -> float:
        return float(np.max(np.abs(np.asarray(x))) + np.max(np.abs(np.asarray(y))))

    def __call__(self, x, y):
        self._axpy(x, y, 0.5)
        largest = self._largest(x, y)
        self._axpy(y, x, 1.0 / largest)


@idiom("the same array given twice to a nested component", "delnflux(q, fx, fx) shapes")
class SameArrayToComponent:
    def __init__(self, config):
        self.inner = Component(config)
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        self.inner(y, y, 0.5)


@idiom("arrays whose paths differ only in `.` and `_` (`self.u_x`, `self.u.x`; dict keys `\"a.b\"`, `\"a_b\"`)",
       "model code naming temporaries and grid fields freely")
class LookalikePaths:
    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        self.u_x = _array(39)
        self.u = SimpleNamespace(x=_array(40))
        self.table = {"a.b": _array(41), "a_b": _array(42)}
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        self._axpy(self.u_x, y, 1.0)
        self._axpy(self.u.x, y, 2.0)  # DaCe alone named both __g_self_u_x: one array, silently
        self._axpy(y, self.u.x, 0.5)
        self._axpy(self.table["a.b"], y, 0.25)
        self._axpy(y, self.table["a_b"], 0.125)


# ------------------------------------------------------- array containers
def _quantity(seed: int):
    from tests.idioms.ndsl_style.infrastructure import Quantity

    return Quantity(_array(seed), ("x", "y", "z"), ORIGIN, DOMAIN)


@idiom("Quantity-like container (array protocol only) held by the model", "every NDSL component")
class QuantityHeld:
    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        self._delp = _quantity(31)
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        self._axpy(self._delp, y, 0.5)
        self._axpy(y, self._delp, 0.25)


@idiom("a held Quantity and its `.data` in one method (`self.tmp.data[:] = 0`, a stencil on `self.tmp`)",
       "NDSL code reaching a Quantity's array through `.data`")
class QuantityAndItsData:
    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        self._tmp = _quantity(32)
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        self._tmp.data[:] = 0.0
        self._axpy(x, self._tmp, 2.0)
        y[:] = self._tmp.data * 0.5 + y  # reads what the stencil wrote through the other name
        self._axpy(self._tmp, y, 1.0)


class _HoldsStorage:
    def __init__(self, config, storage):
        self._axpy = stencil(config, st.axpy)
        self.storage = storage
        orchestrate(obj=self, config=config)

    def __call__(self, y):
        self._axpy(self.storage, y, 1.0)


@idiom("a component holding the `.data` of a Quantity its parent holds", "temporaries shared between components")
class SharedTemporary:
    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        self._tmp = _quantity(33)
        self.inner = _HoldsStorage(config, self._tmp.data)
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        self._axpy(x, self._tmp, 2.0)
        self.inner(y)  # reads, through its own name, what the stencil above wrote


@idiom("Quantity-like container passed as an argument", "every NDSL component",
       call=lambda model, f: model(f.x, f.quantity))
class QuantityArgument:
    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        orchestrate(obj=self, config=config)

    def __call__(self, x, q):
        self._axpy(x, q, 0.5)


@dataclasses.dataclass
class _State:
    u: Any
    v: Any


@idiom("state dataclass of Quantities as a compile-time argument (`state.u`)", "dyn_core, fv_dynamics",
       call=lambda model, f: model(f.state, f.y))
class QuantityState:
    def __init__(self, config):
        self._add = stencil(config, st.add_into)
        orchestrate(obj=self, config=config, dace_compiletime_args=["state"])

    def __call__(self, state, y):
        self._add(state.u, state.v, y)


@idiom("one stencil definition built twice with different gtscript functions as externals", "c_sw corner fills "
       "(fill_corners_2cells_x and _y)")
class FunctionExternals:
    def __init__(self, config):
        self._one, self._two = (FrozenStencil(st.apply_external, backend=config.backend, origin=ORIGIN, domain=DOMAIN,
                                              externals={"func": st.EXTERNAL_FUNCTIONS[name]}) for name in ("one", "two"))
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        self._one(x, y)
        self._two(y, x)


class _TracerAdvection:
    """A nested component receiving the state object, not declared compile-time anywhere."""

    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        orchestrate(obj=self, config=config)

    def __call__(self, state, dt: float):
        for q in state.tracers.values():
            self._axpy(state.u, q, dt * 1.0)


@dataclasses.dataclass
class _ModelState:
    u: Any
    tracers: dict


@idiom("a state object passed down to nested components (folded in at every depth, none declared compile-time)",
       "a user's own model: every component receives one state",
       call=lambda model, f: model(_ModelState(u=f.x, tracers=f.tracers), 2))
class StatePassedDown:
    def __init__(self, config):
        self._advection = _TracerAdvection(config)
        self._scale = stencil(config, st.scale)
        orchestrate(obj=self, config=config)

    def __call__(self, state, dt: float):  # an int given for dt: the float Python computes with
        self._advection(state, dt * 0.5)
        for q in state.tracers.values():
            self._scale(q, dt / 4)



@idiom("a float32 time step with Python numbers: literals, comparisons exact in float32, explicit casts",
       "a model run in single precision (NDSL's Float = np.float32)",
       call=lambda model, f: tuple(model(f.x, f.y, np.float32(dt)) for dt in (0.1, 0.7)))
class SinglePrecisionStep:
    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        orchestrate(obj=self, config=config)

    @dace_inhibitor
    def _factor(self) -> float:
        return 0.7

    def __call__(self, x, y, dt):
        f: float = self._factor()
        scaled = dt * np.float32(f)  # cast: float32 in both modes
        if dt > 0.5:  # exact in float32: the same comparison in both
            self._axpy(x, y, np.float64(scaled * 0.3))  # a literal: float32 (NumPy's weak Python float)
        if dt <= np.float32(0.1):
            self._axpy(x, y, np.float64(dt / 3.0))


def _array(seed: int, extra: tuple = ()):
    import gt4py.storage as gt_storage

    rng = np.random.default_rng(seed)
    return gt_storage.from_array(rng.uniform(-1.0, 1.0, st.SHAPE + extra), backend="dace:cpu")


def _zeros():
    import gt4py.storage as gt_storage

    return gt_storage.zeros(st.SHAPE, dtype=np.float64, backend="dace:cpu")


def fields() -> SimpleNamespace:
    """Fresh arrays for one run (the same numbers in every mode)."""
    return SimpleNamespace(x=_array(1), y=_array(2), z=_array(3),
                           tracers={"qvapor": _array(4), "qliquid": _array(5)},
                           quantity=_quantity(6), state=_State(u=_quantity(7), v=_quantity(8)))
