"""A kernel-bound model of a user's kind, orchestrated and stencil by stencil, in one run.

The model (written as a new user would, from the docs): upwind fluxes with
``if u > 0`` inside the stencils over a dict of tracers, an implicit vertical
diffusion (a tridiagonal solve: a ``FORWARD`` sweep, then ``BACKWARD``), and
column physics with ``exp`` and a branch; 64x64x20 by default, one thread.
Each variant runs in a process of its own (``--worker``); the orchestrated
ones are checked bit for bit against ``Python`` mode with ``dace:cpu``.

Usage::

    python scripts/bench_user_model.py [--n 64] [--nz 20] [--steps 20] [--repeats 5] [--json FILE]

Prints ms per step (median of the repeats) per variant and the ratios to
orchestrated; compare within one run (the machine is shared: the load is
printed).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from gt4py.cartesian.gtscript import BACKWARD, FORWARD, PARALLEL, Field, computation, exp, interval

F = Field[np.float64]
TRACERS = ("qv", "qc", "qr")
#: orchestra's default CPU passes without fusion
UNFUSED = ("split_region_maps", "split_region_maps_outer", "single_parallel_level", "simd_innermost_loops")
#: variant -> (gt4py backend, FV3_DACEMODE, CPU passes or None for orchestra's default, fusion included)
VARIANTS = {
    "orchestrated": ("dace:cpu", "BuildAndRun", None),
    "orchestrated_scratch": ("dace:cpu", "BuildAndRun", None),  # the intermediates declared orchestra.Scratch
    "orchestrated_unfused": ("dace:cpu", "BuildAndRun", UNFUSED),
    "orchestrated_scratch_unfused": ("dace:cpu", "BuildAndRun", UNFUSED),
    "orchestrated_nosimd": ("dace:cpu", "BuildAndRun", ("split_region_maps", "single_parallel_level")),
    "dace_cpu": ("dace:cpu", "Python", None),
    "gt_cpu_kfirst": ("gt:cpu_kfirst", "Python", None),
    "gt_cpu_ifirst": ("gt:cpu_ifirst", "Python", None),
    "numpy": ("numpy", "Python", None),
}


def upwind(q: F, u: F, v: F, out: F, courant: float):
    with computation(PARALLEL), interval(...):
        flux_e = u * q if u > 0.0 else u * q[1, 0, 0]
        flux_w = u[-1, 0, 0] * q[-1, 0, 0] if u[-1, 0, 0] > 0.0 else u[-1, 0, 0] * q
        flux_n = v * q if v > 0.0 else v * q[0, 1, 0]
        flux_s = v[0, -1, 0] * q[0, -1, 0] if v[0, -1, 0] > 0.0 else v[0, -1, 0] * q
        out = q - courant * (flux_e - flux_w + flux_n - flux_s)


def implicit_diffusion(q: F, kappa: F, c: F, d: F):
    with computation(FORWARD):
        with interval(0, 1):
            c = -kappa / (1.0 + 2.0 * kappa)
            d = q / (1.0 + 2.0 * kappa)
        with interval(1, None):
            c = -kappa / (1.0 + 2.0 * kappa + kappa * c[0, 0, -1])
            d = (q + kappa * d[0, 0, -1]) / (1.0 + 2.0 * kappa + kappa * c[0, 0, -1])
    with computation(BACKWARD):
        with interval(-1, None):
            q = d
        with interval(0, -1):
            q = d - c * q[0, 0, 1]


def physics(t: F, qv: F, qc: F, dt: float):
    with computation(PARALLEL), interval(...):
        saturation = 3.8e-3 * exp(17.27 * (t - 273.15) / (t - 35.86))
        if qv > saturation:
            condensed = 0.5 * (qv - saturation)
            qv = qv - condensed
            qc = qc + condensed
            t = t + 2.5 * condensed
        else:
            evaporated = min(qc, 0.1 * (saturation - qv))
            qv = qv + evaporated
            qc = qc - evaporated
            t = t - 2.5 * evaporated
        t = t - dt * 1.0e-5 * (t - 250.0)


class UserModel:
    """One step: upwind advection of every tracer, implicit diffusion of each, then physics."""

    def __init__(self, config, n: int, nz: int, scratch: dict) -> None:
        from orchestra import FrozenStencil, orchestrate

        backend = config.backend
        inner, full = (1, 1, 0), (n, n, nz)
        self.upwind = FrozenStencil(upwind, backend=backend, origin=inner, domain=full)
        self.diffuse = FrozenStencil(implicit_diffusion, backend=backend, origin=inner, domain=full)
        self.physics = FrozenStencil(physics, backend=backend, origin=inner, domain=full)
        self.copy = FrozenStencil(_copy, backend=backend, origin=inner, domain=full)
        self.scratch = scratch  # the intermediates: plain arrays, or declared orchestra.Scratch
        orchestrate(obj=self, config=config)

    def __call__(self, state: dict, courant: float, dt: float) -> None:
        scratch = self.scratch
        for name in TRACERS:
            self.upwind(state[name], state["u"], state["v"], scratch["out"], courant)
            self.copy(scratch["out"], state[name])
            self.diffuse(state[name], state["kappa"], scratch["c"], scratch["d"])
        self.physics(state["t"], state["qv"], state["qc"], dt)


def _copy(source: F, target: F):
    with computation(PARALLEL), interval(...):
        target = source


def initial_state(backend: str, n: int, nz: int, declared_scratch: bool = False) -> tuple[dict, dict]:
    from gt4py import storage

    rng = np.random.default_rng(1)
    shape = (n + 2, n + 2, nz)

    def field(values):
        array = storage.zeros(shape, np.float64, backend=backend)
        array[...] = values
        return array

    state = {
        "u": field(rng.uniform(-1, 1, shape)), "v": field(rng.uniform(-1, 1, shape)),
        "kappa": field(rng.uniform(0.01, 0.2, shape)), "t": field(rng.uniform(260, 300, shape)),
        "qv": field(rng.uniform(0, 0.02, shape)), "qc": field(rng.uniform(0, 1e-3, shape)),
        "qr": field(rng.uniform(0, 1e-4, shape)),
    }
    scratch = {name: field(0.0) for name in ("out", "c", "d")}
    if declared_scratch:
        from orchestra import Scratch

        scratch = {name: Scratch(array) for name, array in scratch.items()}
    return state, scratch


def worker(variant: str, n: int, nz: int, steps: int, repeats: int, cache: str, out: str) -> None:
    """Time one variant in this process; save its final state for the bitwise check."""
    from orchestra import DaceConfig

    backend, mode, passes = VARIANTS[variant]
    config = DaceConfig(None, backend=backend, orchestration=mode, cache_root=Path(cache), cpu_passes=passes)
    state, scratch = initial_state(backend, n, nz, declared_scratch="_scratch" in variant)
    model = UserModel(config, n, nz, scratch)
    start = time.perf_counter()
    model(state, 0.1, 60.0)  # builds or loads, and compiles the stencils
    first = time.perf_counter() - start
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(steps):
            model(state, 0.1, 60.0)
        samples.append((time.perf_counter() - start) / steps)
    np.savez(out, **{name: np.asarray(array) for name, array in state.items()})
    print(json.dumps({"variant": variant, "first_call_s": first, "step_ms": 1e3 * statistics.median(samples),
                      "best_ms": 1e3 * min(samples)}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=64)
    parser.add_argument("--nz", type=int, default=20)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--json", type=Path)
    parser.add_argument("--worker", choices=list(VARIANTS), help=argparse.SUPPRESS)
    parser.add_argument("--cache", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.n, args.nz, args.steps, args.repeats, args.cache, args.out)
        return
    environment = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))
    rows, finals = {}, {}
    with tempfile.TemporaryDirectory(prefix="orchestra_user_bench_") as scratch:
        for variant in args.variants:
            out = f"{scratch}/{variant}.npz"
            command = [sys.executable, __file__, "--worker", variant, "--n", str(args.n), "--nz", str(args.nz),
                       "--steps", str(args.steps), "--repeats", str(args.repeats), "--cache", f"{scratch}/cache",
                       "--out", out]
            done = subprocess.run(command, env=environment, capture_output=True, text=True)
            if done.returncode:
                print(f"{variant}: failed\n{done.stderr[-2000:]}")
                continue
            rows[variant] = json.loads(done.stdout.strip().splitlines()[-1])
            finals[variant] = dict(np.load(out))
    reference = finals.get("dace_cpu")
    for variant, row in rows.items():
        if reference is not None and variant.startswith("orchestrated"):
            row["bitwise_equal_to_python_mode"] = all(
                np.array_equal(finals[variant][name], reference[name]) for name in reference)
    base = rows.get("orchestrated", {}).get("step_ms")
    print(f"user model {args.n}x{args.n}x{args.nz}, OMP_NUM_THREADS={environment['OMP_NUM_THREADS']}, "
          f"load {os.getloadavg()[0]:.1f}")
    for variant, row in rows.items():
        ratio = f"  {row['step_ms'] / base:5.2f}x orchestrated's time" if base else ""
        check = {True: "  bitwise = Python mode", False: "  DIFFERS from Python mode"}.get(
            row.get("bitwise_equal_to_python_mode"), "")
        print(f"{variant:<22} {row['step_ms']:8.2f} ms/step (best {row['best_ms']:.2f}){ratio}{check}")
    if args.json:
        args.json.write_text(json.dumps({"n": args.n, "nz": args.nz, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
