"""Orchestra's own cost per call on a model holding its state, as users write them.

The model holds a state object (a dataclass of six fields) and a dict of
tracers, and loops over a module-level tuple of tracer names, calling one
small stencil per field: what a model written for NDSL or Pace looks like.
Its fields are NDSL-like ``Quantity`` containers (``--kind quantity``),
containers whose array interface orchestra cannot prove forwarded
(``opaque``: watched by their data token), or plain gt4py storages
(``array``). Tiny arrays (4x4x2), so the library is short and orchestra's
part of each call (bind, check of the folded values, marshal, return) is
read from the timing report (``ORCHESTRA_TIMINGS``)::

    python scripts/time_call_overhead.py --tracers 6 44 --kinds quantity opaque array
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from gt4py.cartesian.gtscript import PARALLEL, Field, computation, interval

F = Field[np.float64]
STATE_FIELDS = ("u", "v", "t", "p", "w", "tmp")


class Quantity:
    """NDSL's container pattern: the array protocol forwarded to the wrapped storage."""

    def __init__(self, data: Any) -> None:
        self._data = data

    def __descriptor__(self) -> Any:
        import dace

        return dace.data.create_datadescriptor(self._data)

    @property
    def __array_interface__(self) -> dict:
        return self._data.__array_interface__

    @property
    def shape(self) -> tuple:
        return self._data.shape


class OpaqueQuantity(Quantity):
    """Builds its interface dict itself: orchestra compares its data token on every call."""

    @property
    def __array_interface__(self) -> dict:
        return dict(self._data.__array_interface__)


KINDS = {"quantity": Quantity, "opaque": OpaqueQuantity, "array": None}


def axpy(a: F, b: F, out: F, s: float):
    with computation(PARALLEL), interval(...):
        out = a + s * b


@dataclasses.dataclass
class State:
    u: Any
    v: Any
    t: Any
    p: Any
    w: Any
    tmp: Any


class Model:
    def __init__(self, config: Any, kind: str, tracers: int) -> None:
        from gt4py import storage

        from orchestra import FrozenStencil, orchestrate

        shape, wrap = (4, 4, 2), KINDS[kind]

        def field() -> Any:
            array = storage.from_array(np.random.default_rng(0).uniform(size=shape), backend=config.backend)
            return wrap(array) if wrap else array

        self.state = State(*(field() for _ in STATE_FIELDS))
        self.tracers = {name: field() for name in TRACER_NAMES[:tracers]}
        self.axpy = FrozenStencil(axpy, backend=config.backend, origin=(0, 0, 0), domain=shape)
        orchestrate(obj=self, config=config)

    def __call__(self, dt: float):
        state = self.state
        self.axpy(state.u, state.v, state.tmp, dt)
        self.axpy(state.t, state.tmp, state.p, dt)
        self.axpy(state.w, state.p, state.tmp, dt)
        for name in TRACERS:
            self.axpy(self.tracers[name], state.u, state.tmp, dt)


TRACER_NAMES = tuple(f"q{index}" for index in range(64))
TRACERS: tuple[str, ...] = ()  # set per worker: the names the model loops over


def worker(kind: str, tracers: int, calls: int, cache: str) -> None:
    import orchestra
    from orchestra import DaceConfig

    global TRACERS
    TRACERS = TRACER_NAMES[:tracers]
    config = DaceConfig(None, backend="dace:cpu", orchestration="BuildAndRun", cache_root=Path(cache), timings=True)
    model = Model(config, kind, tracers)
    for _ in range(calls):
        model(0.1)
    summary = orchestra.timing_report()
    entry = summary["Model.__call__"]
    parts = {name: 1e6 * entry["parts"][name]["median"] for name in ("bind", "check", "marshal", "return", "library")}
    print(f"{kind:<9} {len(STATE_FIELDS) + tracers:>7} {1e6 * entry['overhead']['median']:9.1f} "
          + " ".join(f"{parts[name]:8.1f}" for name in ("bind", "check", "marshal", "return", "library")))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tracers", type=int, nargs="+", default=[6, 44])
    parser.add_argument("--kinds", nargs="+", default=list(KINDS), choices=list(KINDS))
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--cache", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker[0], int(args.worker[1]), args.calls, args.cache)
        return
    print(f"us per call (median of {args.calls}), load {os.getloadavg()[0]:.1f}")
    print(f"{'fields':<9} {'arrays':>7} {'orchestra':>9} {'bind':>8} {'check':>8} {'marshal':>8} {'return':>8} {'library':>8}")
    environment = dict(os.environ, OMP_NUM_THREADS="1", ORCHESTRA_LOG_LEVEL="WARNING")
    with tempfile.TemporaryDirectory(prefix="orchestra_overhead_") as cache:
        for tracers in args.tracers:
            for kind in args.kinds:
                done = subprocess.run([sys.executable, __file__, "--worker", kind, str(tracers), "--calls",
                                       str(args.calls), "--cache", cache], env=environment, capture_output=True,
                                      text=True)
                lines = [line for line in done.stdout.splitlines() if line.strip()]
                print(lines[-1] if done.returncode == 0 and lines else f"{kind} {tracers}: failed\n{done.stderr[-1500:]}")


if __name__ == "__main__":
    main()
