"""NDSL-style tracer advection at production sizes: orchestrated against stencil by stencil, in one process.

The model is the one ``tests/idioms/ndsl_style`` checks bitwise: FV3-style
tracer advection (``TracerAdvection`` around a ``FiniteVolumeTransport``,
two tracers in a dict, ``Quantity`` containers, halo updates and the number
of sub-steps as Python callbacks). Every variant is built in this process
and timed with the others, batches interleaved (``bench_lib/interleaved.py``),
each batch from the same initial state; the orchestrated variants are
checked bit for bit against ``dace:cpu`` stencil by stencil after one call.

    python scripts/bench_ndsl_style.py --n 48 --nz 79
    python scripts/bench_ndsl_style.py --n 96 --nz 79 --variants orchestrated orchestrated_unfused dace_cpu

1 rank, ``OMP_NUM_THREADS`` threads (1 unless set). Prints ms per call of
each variant and its ratio to orchestrated; ``--json`` writes them.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

#: variant -> (gt4py backend, FV3_DACEMODE, CPU passes: None for orchestra's default, or "unfused")
VARIANTS = {
    "orchestrated": ("dace:cpu", "BuildAndRun", None),
    "orchestrated_unfused": ("dace:cpu", "BuildAndRun", "unfused"),
    "dace_cpu": ("dace:cpu", "Python", None),
    "gt_cpu_kfirst": ("gt:cpu_kfirst", "Python", None),
    "gt_cpu_ifirst": ("gt:cpu_ifirst", "Python", None),
}


def build(variant: str, n: int, nz: int, cache: Optional[str]) -> tuple[Callable[[int], float], Callable[[], list]]:
    """(run ``steps`` calls from the initial state -> seconds per call, one call from it -> the arrays' bytes)."""
    from orchestra import DaceConfig
    from orchestra.passes.cpu import UNFUSED_CPU_PASSES
    from tests.idioms.ndsl_style.infrastructure import GridIndexing, QuantityFactory, StencilFactory
    from tests.idioms.ndsl_style.test_ndsl_style_models import tracer_case

    backend, mode, passes = VARIANTS[variant]
    grid = GridIndexing(nx=n, ny=n, nz=nz)
    config = DaceConfig(None, backend=backend, orchestration=mode, cache_root=Path(cache) if cache else None,
                        cpu_passes=UNFUSED_CPU_PASSES if passes == "unfused" else None)
    advection, tracers, arguments = tracer_case(StencilFactory(config, grid), QuantityFactory(config, grid), grid)
    arrays = [np.asarray(q.data) for q in [*tracers.values(), *arguments]]
    initial = [array.copy() for array in arrays]

    def restore() -> None:
        for array, saved in zip(arrays, initial):
            np.copyto(array, saved)

    def batch(steps: int) -> float:
        restore()
        start = time.perf_counter()
        for _ in range(steps):
            advection(tracers, *arguments)
        return (time.perf_counter() - start) / steps

    def one_call() -> list:
        restore()
        advection(tracers, *arguments)
        return [array.tobytes() for array in arrays]

    return batch, one_call


def main(argv: Optional[list[str]] = None) -> int:
    from bench_lib.interleaved import interleaved_medians

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=48)
    parser.add_argument("--nz", type=int, default=79)
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS)[:4], choices=list(VARIANTS))
    parser.add_argument("--batches", type=int, default=7)
    parser.add_argument("--cache-root", default=os.environ.get("ORCHESTRA_CACHE_DIR"))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    built = {variant: build(variant, args.n, args.nz, args.cache_root) for variant in args.variants}
    bits: dict[str, Any] = {variant: one_call() for variant, (_batch, one_call) in built.items()}
    medians, steps = interleaved_medians({variant: batch for variant, (batch, _one) in built.items()}, args.batches)
    base = "orchestrated" if "orchestrated" in medians else args.variants[0]
    rows = {}
    for variant, seconds in medians.items():
        equal = bits[variant] == bits["dace_cpu"] if "dace_cpu" in bits and variant.startswith("orchestrated") else None
        rows[variant] = {"ms": 1e3 * seconds, "ratio_to_" + base: seconds / medians[base], "bitwise_equal": equal}
        check = "" if equal is None else ("  bitwise = Python mode" if equal else "  DIFFERS from Python mode")
        print(f"{variant:<22} {1e3 * seconds:9.2f} ms/call  {seconds / medians[base]:5.2f}x {base}'s time{check}")
    load = os.getloadavg()
    print(f"tracer advection {args.n}x{args.n}x{args.nz}, {steps} calls per batch, {args.batches} batches, "
          f"OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}, load {load[0]:.1f}")
    if args.json:
        args.json.write_text(json.dumps({"n": args.n, "nz": args.nz, "steps_per_batch": steps, "load_average": load,
                                         "variants": rows}, indent=1))
    return 0 if all(row["bitwise_equal"] is not False for row in rows.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
