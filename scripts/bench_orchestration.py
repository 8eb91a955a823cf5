"""Time per call of the example model: stencil by stencil (Python mode) vs orchestrated.

Also measures the per-call overhead of the orchestrated path over the raw
compiled call (the library called with already-marshalled arguments).
All variants run in the same process, so the ratios are comparable.

    OMP_NUM_THREADS=1 python scripts/bench_orchestration.py [--sizes 16 32 64] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from orchestra import DaceConfig
from orchestra.examples.diffusion import DiffusionModel, initial_state


def median_time(function, repeats: int, inner: int) -> tuple[float, float]:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(inner):
            function()
        samples.append((time.perf_counter() - start) / inner)
    return statistics.median(samples), (max(samples) - min(samples)) / 2


def bench_size(n: int, nz: int, cache: Path, repeats: int) -> dict:
    shape = (n + 2, n + 2, nz)
    inner = max(3, int(2e5 / (n * n * nz)))
    result: dict = {"domain": [n, n, nz]}
    for label, backend, mode in [
        ("python_numpy", "numpy", "Python"),
        ("python_dace_cpu", "dace:cpu", "Python"),
        ("orchestrated_dace_cpu", "dace:cpu", "BuildAndRun"),
    ]:
        config = DaceConfig(None, backend=backend, orchestration=mode, cache_root=cache)
        model = DiffusionModel(config, shape)
        q, total = initial_state(shape, backend)
        model(q, total)  # build / warm up
        result[label] = median_time(lambda: model(q, total), repeats, inner)
        if mode != "Python":
            caller = model.__orchestra_programs__["__call__"].fast_caller
            result["raw_compiled_call"] = median_time(caller.raw_call, repeats, inner)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[16, 32, 64, 128])
    parser.add_argument("--nz", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as cache:
        rows = [bench_size(n, args.nz, Path(cache), args.repeats) for n in args.sizes]
    print(f"{'domain':>12} {'numpy':>10} {'dace:cpu':>10} {'orchestr.':>10} {'raw call':>10} "
          f"{'overhead':>9} {'speed-up':>9}   (ms per call, median)")
    for row in rows:
        domain = "x".join(map(str, row["domain"]))
        numpy_t, dace_t = row["python_numpy"][0], row["python_dace_cpu"][0]
        orch_t, raw_t = row["orchestrated_dace_cpu"][0], row["raw_compiled_call"][0]
        print(f"{domain:>12} {numpy_t * 1e3:10.3f} {dace_t * 1e3:10.3f} {orch_t * 1e3:10.3f} {raw_t * 1e3:10.3f} "
              f"{(orch_t - raw_t) * 1e6:7.1f}us {dace_t / orch_t:8.2f}x")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
