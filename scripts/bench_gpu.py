"""GPU benchmark of the example model: orchestrated dace:gpu vs stencil by stencil vs the CPU.

Variants, all in one process so that the ratios are comparable:

- ``python_dace_gpu``: ``dace:gpu`` stencils called one by one (Python mode)
- ``orchestrated_dace_gpu``: the same model as one compiled program
- ``raw_gpu_call``: that program's library called with marshalled arguments
- ``python_dace_cpu`` / ``orchestrated_dace_cpu``: the CPU references (``--no-cpu`` skips them)

GPU times are per call, over a batch of calls followed by one device
synchronisation (median of ``--repeats`` batches). Needs an NVIDIA GPU,
cupy and nvcc; ``cuda_arch`` is GPU 0's unless ``--cuda-arch`` or
``ORCHESTRA_CUDA_ARCH`` says otherwise.

    python scripts/bench_gpu.py [--sizes 64 128 256] [--nz 80] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Callable

from orchestra import DaceConfig
from orchestra.examples.diffusion import DiffusionModel, initial_state


def median_time(function: Callable[[], None], synchronize: Callable[[], None], repeats: int,
                min_sample_s: float = 0.05) -> tuple[float, float]:
    """Median seconds per call (and half the spread) over ``repeats`` timed batches.

    A warm-up batch first (clocks ramp up, pools fill), then each batch holds
    enough calls to last ``min_sample_s``: a few 1-ms calls per sample would
    measure the timer and the synchronisation, not the program.
    """
    synchronize()
    start = time.perf_counter()
    for _ in range(3):
        function()
    synchronize()
    per_call = (time.perf_counter() - start) / 3
    inner = max(3, int(min_sample_s / max(per_call, 1e-7)))
    samples = []
    for _ in range(repeats):
        synchronize()
        start = time.perf_counter()
        for _ in range(inner):
            function()
        synchronize()
        samples.append((time.perf_counter() - start) / inner)
    return statistics.median(samples), (max(samples) - min(samples)) / 2


def bench_size(n: int, nz: int, cache: Path, repeats: int, cuda_arch: str, cpu: bool) -> dict:
    import cupy

    def device_sync() -> None:
        cupy.cuda.Device().synchronize()

    shape = (n + 2, n + 2, nz)
    result: dict = {"domain": [n, n, nz]}
    variants = [
        ("python_dace_gpu", "dace:gpu", "Python"),
        ("orchestrated_dace_gpu", "dace:gpu", "BuildAndRun"),
    ]
    if cpu:
        variants += [("python_dace_cpu", "dace:cpu", "Python"), ("orchestrated_dace_cpu", "dace:cpu", "BuildAndRun")]
    for label, backend, mode in variants:
        on_gpu = "gpu" in backend
        config = DaceConfig(None, backend=backend, orchestration=mode, cache_root=cache,
                            cuda_arch=cuda_arch if on_gpu else None)
        model = DiffusionModel(config, shape)
        q, total = initial_state(shape, backend)
        model(q, total)  # build / warm up
        sync = device_sync if on_gpu else (lambda: None)
        result[label] = median_time(lambda: model(q, total), sync, repeats)
        if label == "orchestrated_dace_gpu":
            caller = model.__orchestra_programs__["__call__"].fast_caller
            result["raw_gpu_call"] = median_time(caller.raw_call, sync, repeats)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[64, 128, 256])
    parser.add_argument("--nz", type=int, default=80)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--cuda-arch", default=os.environ.get("ORCHESTRA_CUDA_ARCH"))
    parser.add_argument("--no-cpu", action="store_true", help="skip the CPU variants")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    import cupy

    device = cupy.cuda.Device(0)
    cuda_arch = args.cuda_arch or str(device.compute_capability)
    name = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    threads = os.environ.get("OMP_NUM_THREADS", "unset")
    with tempfile.TemporaryDirectory() as cache:
        rows = [bench_size(n, args.nz, Path(cache), args.repeats, cuda_arch, not args.no_cpu) for n in args.sizes]
    print(f"GPU {name} (cuda_arch {cuda_arch}); CPU variants with OMP_NUM_THREADS={threads}")
    header = f"{'domain':>12} {'gpu stencils':>12} {'gpu orch.':>10} {'raw call':>10} {'orch. vs stencils':>18}"
    if not args.no_cpu:
        header += f" {'cpu orch.':>10} {'gpu vs cpu':>11}"
    print(header + "   (ms per call, median)")
    for row in rows:
        domain = "x".join(map(str, row["domain"]))
        stencils, orchestrated = row["python_dace_gpu"][0], row["orchestrated_dace_gpu"][0]
        line = (f"{domain:>12} {stencils * 1e3:12.3f} {orchestrated * 1e3:10.3f} {row['raw_gpu_call'][0] * 1e3:10.3f} "
                f"{stencils / orchestrated:17.2f}x")
        if not args.no_cpu:
            cpu = row["orchestrated_dace_cpu"][0]
            line += f" {cpu * 1e3:10.3f} {cpu / orchestrated:10.2f}x"
        print(line)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        meta = {"gpu": name, "cuda_arch": cuda_arch, "omp_num_threads": threads}
        args.json.write_text(json.dumps({"meta": meta, "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
