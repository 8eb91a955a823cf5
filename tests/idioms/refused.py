"""Idioms orchestra refuses at parse time, each with the message that must name the fix."""

from __future__ import annotations

import numpy as np

from orchestra import dace_inhibitor, orchestrate
from tests.idioms import stencils as st
from tests.idioms.corpus import fields, stencil


class UntypedCallbackResult:
    """A callback's result used without any type: the annotation to add is named."""

    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        orchestrate(obj=self, config=config)

    @dace_inhibitor
    def _limits(self):
        return 0.25, 1.5

    def __call__(self, x, y):
        low, high = self._limits()
        self._axpy(x, y, low + high)


class RuntimeBoundOverList:
    """A loop indexing a list of stencils whose range is known only at run time."""

    def __init__(self, config):
        self._stencils = [stencil(config, st.axpy), stencil(config, st.axpy)]
        orchestrate(obj=self, config=config)

    def __call__(self, x, y, n: int):
        for i in range(n):
            self._stencils[i](x, y, 0.5)


class TryExcept:
    """try/except inside orchestrated code (DaCe compiles no exceptions)."""

    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        try:
            self._axpy(x, y, 0.5)
        except ValueError:
            pass


class StencilPassedToHelper:
    """A stencil handed to a helper method as an argument and called there."""

    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        orchestrate(obj=self, config=config)

    def _apply(self, operator, x, y):
        operator(x, y, 0.5)

    def __call__(self, x, y):
        self._apply(self._axpy, x, y)


class SwapsModelArrays:
    """Two arrays of the model swapped by rebinding its attributes (DaCe swapped names for one call only)."""

    def __init__(self, config):
        from tests.idioms.corpus import _array

        self._axpy = stencil(config, st.axpy)
        self._current, self._next = _array(70), _array(71)
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        self._axpy(x, self._next, 0.5)
        self._current, self._next = self._next, self._current
        self._axpy(self._current, y, 1.0)


class StoresArgument:
    """A run-time argument kept on the model (``self.dt = dt``)."""

    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        self.dt = 1.0
        orchestrate(obj=self, config=config)

    def __call__(self, x, y, dt: float):
        self.dt = dt
        self._axpy(x, y, dt)


class RoundsAndDefaults:
    """``round()`` of a run-time value and the value of ``or`` with a number (C's meanings in DaCe)."""

    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        orchestrate(obj=self, config=config)

    def __call__(self, x, y, a: float):
        self._axpy(x, y, a or 0.5)
        self._axpy(x, y, 1.0 * round(a))


class ReturnsEitherArray:
    """A helper returning one model array or another, chosen by a run-time flag."""

    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        self.a, self.b = fields().x.copy(), fields().y.copy()
        orchestrate(obj=self, config=config)

    def _pick(self, flip: bool):
        if flip:
            return self.b
        return self.a

    def __call__(self, x, y, flip: bool):
        self._axpy(self._pick(flip), y, 0.5)


class ReturnsFromLoop:
    """A helper returning from inside a loop (DaCe would end the whole program there)."""

    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        orchestrate(obj=self, config=config)

    def _first_above(self, n: int):
        for i in range(5):
            if i > n:
                return 0.1 * i
        return 0.0

    def __call__(self, x, y, n: int):
        self._axpy(x, y, self._first_above(n))


class NumpyExpOfArray:
    """NumPy's vectorized exp of an array (the compiled program calls the C library's)."""

    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        y[:] = np.exp(x)
        self._axpy(x, y, 0.5)


class NumpySumInHelper:
    """A pairwise NumPy sum of an array the model holds, in a helper the program parses."""

    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        self._weights = fields().z
        orchestrate(obj=self, config=config)

    def _total(self):
        return np.sum(self._weights)

    def __call__(self, x, y):
        self._axpy(x, y, self._total())


class QuantityFieldOfArgument:
    """`q.field[:] = ...` of a Quantity passed as an argument (DaCe would write the whole array, halo too)."""

    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        orchestrate(obj=self, config=config)

    def __call__(self, q, y):
        q.field[:] = 1.0
        self._axpy(q, y, 0.5)


#: (model, call, pattern the one-line message must match)
class CountsOnTheModel:
    """A step counter kept on the model (``self.nstep += 1``)."""

    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        self.nstep = 0
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        self.nstep += 1
        self._axpy(x, y, 0.5)


class PrintsRunTimeValues:
    """An f-string of a run-time value printed from orchestrated code."""

    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        self._axpy(x, y, 0.5)
        print(f"y[1, 1, 0] = {y[1, 1, 0]:.3f}")


class OpensAFile:
    """File output from orchestrated code."""

    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        self._axpy(x, y, 0.5)
        open("/dev/null", "w")


class _NotOrchestrated:
    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)

    def __call__(self, state, y):
        self._axpy(state.u, y, 0.5)


class ComponentNotOrchestrated:
    """A component whose __init__ forgot orchestrate(), given the state object."""

    def __init__(self, config):
        self._inner = _NotOrchestrated(config)
        orchestrate(obj=self, config=config)

    def __call__(self, state, y):
        self._inner(state, y)



class SinglePrecisionWithCallback:
    """A float32 time step times a callback's Python float: float32 in NumPy, double compiled."""

    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        orchestrate(obj=self, config=config)

    @dace_inhibitor
    def _factor(self) -> float:
        return 0.7

    def __call__(self, x, y, dt):
        f: float = self._factor()
        self._axpy(x, y, np.float64(dt * f))


class SinglePrecisionComparedWithInexactLiteral:
    """A float32 time step compared with 0.1: NumPy rounds 0.1 to float32 first, C++ compares in double."""

    def __init__(self, config):
        self._axpy = stencil(config, st.axpy)
        orchestrate(obj=self, config=config)

    def __call__(self, x, y, dt):
        if dt > 0.1:
            self._axpy(x, y, 0.5)


REFUSED = [
    (SinglePrecisionWithCallback, lambda model, f: model(f.x, f.y, np.float32(0.1)),
     r"refused\.py:\d+: mixed precision in Mult: a float32 scalar meets a float64 scalar: NumPy computes .* "
     r"float32, the compiled program in float64.*np\.float32\(x\)"),
    (SinglePrecisionComparedWithInexactLiteral, lambda model, f: model(f.x, f.y, np.float32(0.1)),
     r"refused\.py:\d+: mixed precision in the condition `dt > 0\.1`: .*literal 0\.1, which float32 cannot hold "
     r"exactly.*np\.float32\(x\)"),
    (UntypedCallbackResult, lambda model, f: model(f.x, f.y),
     r"refused\.py:\d+: the result of the callback self\._limits\(\) is used.*-> tuple\[float"),
    (RuntimeBoundOverList, lambda model, f: model(f.x, f.y, 2),
     r"refused\.py:\d+: the loop indexes self\._stencils.*run-time value.*\bn\b.*self"),
    (TryExcept, lambda model, f: model(f.x, f.y), r"refused\.py:\d+: orchestrated code has a try statement.*dace_inhibitor"),
    (CountsOnTheModel, lambda model, f: model(f.x, f.y),
     r"refused\.py:\d+: orchestrated code updates self\.nstep .*\(int\).*dace_inhibitor.*local variable"),
    (PrintsRunTimeValues, lambda model, f: model(f.x, f.y), r"refused\.py:\d+: .*f-string.*dace_inhibitor"),
    (OpensAFile, lambda model, f: model(f.x, f.y), r"refused\.py:\d+: orchestrated code calls open\(\).*dace_inhibitor"),
    (ComponentNotOrchestrated, lambda model, f: model(f.state, f.y),
     r"refused\.py:\d+: .*calls self\._inner, a tests\.idioms\.refused\._NotOrchestrated that is not orchestrated"
     r".*orchestrate\(obj=self, config=config\) at the end of _NotOrchestrated\.__init__"),
    (SwapsModelArrays, lambda model, f: model(f.x, f.y),
     r"refused\.py:\d+: orchestrated code assigns self\._current .*write into it \(self\._current\[:\] = "),
    (StoresArgument, lambda model, f: model(f.x, f.y, 0.5),
     r"refused\.py:\d+: orchestrated code assigns self\.dt \(`self\.dt = dt`\).*local variable.*dace_inhibitor"),
    (RoundsAndDefaults, lambda model, f: model(f.x, f.y, 2.5),
     r"refused\.py:\d+: `a or 0\.5`: the value of `or` .*compiles to a bool.*if statement"),
    (StencilPassedToHelper, lambda model, f: model(f.x, f.y),
     r"refused\.py:\d+: .*operator is a parameter of _apply: .*self\.stencil\(\.\.\.\)"),
    (ReturnsEitherArray, lambda model, f: model(f.x, f.y, True),
     r"refused\.py:\d+: .*returns different arrays on different paths.*compile-time value"),
    (ReturnsFromLoop, lambda model, f: model(f.x, f.y, 2),
     r"refused\.py:\d+: _first_above returns from inside a loop; .*`break`"),
    (NumpyExpOfArray, lambda model, f: model(f.x, f.y),
     r"refused\.py:\d+: `np\.exp\(x\)`: NumPy computes exp with its own vectorized code.*math\.exp.*stencil"),
    (NumpySumInHelper, lambda model, f: model(f.x, f.y),
     r"refused\.py:\d+: `np\.sum\(self\._weights\)`: NumPy's sum adds up in its own order.*dace_inhibitor"),
    (QuantityFieldOfArgument, lambda model, f: model(f.quantity, f.y),
     r"refused\.py:\d+: `q\.field`: q is a run-time array argument.*whole array.*dace_compiletime_args"),
]
