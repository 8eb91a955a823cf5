"""Benchmark of the shallow-water dynamical core: stencil by stencil against orchestrated.

One command runs everything and writes a table (terminal), a JSON file and a
PNG plot::

    source scripts/setup_env.sh
    python scripts/benchmark.py                 # quick set (24 and 48 per rank), a few minutes once cached
    python scripts/benchmark.py --full          # 24, 48, 96 and 192 per rank, with kernel profiles

Variants (``--variants``): ``numpy``, ``gt_cpu_kfirst`` and ``dace_cpu``
stencil by stencil (``FV3_DACEMODE=Python``), and ``orchestrated``
(``dace:cpu``, one compiled program per step; built on first use into the
orchestra cache, ``$ORCHESTRA_CACHE_DIR`` or ``./.orchestra_cache``, and
reused). Each variant runs in its own ``mpirun`` job per rank count: 1 rank
(one cubed-sphere tile, no halo exchange: see ``bench_lib/dycore.py``) and 6
ranks (the cubed sphere, layout 1). Per-rank domains are ``n x n x nz``.

Per variant and size: median time per step over ``--repeats`` batches of
``--steps`` steps after warm-up (each batch from the same initial state; the
slowest rank counts), with the 10th-90th percentile spread. Ratios are
against orchestrated from the same run. Orchestrated also reports the raw
compiled call (the library with marshalled arguments), the per-call overhead
(the call timed with a no-op library), the build time (this run, or the cache manifest's),
the load time, and the halo-update time within a step.
``--compare-passes`` adds orchestrated without the optimize stage's CPU
passes, ``--compare-fusion`` orchestrated without fusion (the default fuses), and ``--debug-checks SPEC`` orchestrated with ``ORCHESTRA_DEBUG``
checks (both 1 rank, separate builds) for before/after ratios.

The same run measures the memory bandwidth with a compiled triad
(``bench_lib/triad.py``) and the multiply-add peak of code compiled like
orchestrated builds (``bench_lib/peak.py``), the minimum bytes per step from
a trace of the stencil calls (``bench_lib/traffic.py``), the floating-point
operations per step counted in the orchestrated build's SDFG
(``bench_lib/flops.py``) and, with ``--profile-sizes``, a kernel profile
from DaCe timer instrumentation (``bench_lib/profile.py``).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Optional

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_lib import machine, report  # noqa: E402
from bench_lib.dycore import ONE_RANK_VARIANTS, VARIANTS  # noqa: E402

QUICK = {"sizes": [24, 48], "profile_sizes": [24]}
FULL = {"sizes": [24, 48, 96, 192], "profile_sizes": [24, 192]}

#: Open MPI on one host as root, more ranks than cores (as tests/mpi_launcher.py).
MPI_ENV = {
    "OMPI_ALLOW_RUN_AS_ROOT": "1",
    "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
    "OMPI_MCA_rmaps_base_oversubscribe": "1",
    "OMPI_MCA_mpi_yield_when_idle": "1",
    "OMPI_MCA_btl": "self,sm",
    "OMPI_MCA_pml": "ob1",
    "OPENBLAS_NUM_THREADS": "1",
}


def parse_arguments(argv: Optional[list[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="sizes 24..192 per rank and two kernel profiles")
    parser.add_argument("--sizes", type=int, nargs="+", help="cells per rank along an edge (default: quick or full set)")
    parser.add_argument("--nz", type=int, nargs="+", default=[8], help="layers (default 8)")
    parser.add_argument("--ranks", type=int, nargs="+", default=[1, 6], help="rank counts: 1 and/or 6*layout**2")
    parser.add_argument(
        "--variants", nargs="+", default=[v for v in VARIANTS if v not in ONE_RANK_VARIANTS], choices=list(VARIANTS)
    )
    parser.add_argument(
        "--compare-passes", action="store_true",
        help="also run orchestrated without the optimize stage's CPU passes (1 rank; a separate build)",
    )
    parser.add_argument(
        "--compare-simd", action="store_true",
        help="also run orchestrated without omp simd on the maps' innermost loops (1 rank; a separate build)",
    )
    parser.add_argument(
        "--compare-fusion", action="store_true",
        help="also run orchestrated without fusion, the default's before (1 rank; a separate build)",
    )
    parser.add_argument(
        "--debug-checks", default="", metavar="SPEC",
        help="also run orchestrated with these ORCHESTRA_DEBUG checks (1 rank; a separate build), "
        "e.g. 'nan;negative:fields=h,threshold=0'",
    )
    parser.add_argument(
        "--threads", type=int, nargs="+", default=[1, 2],
        help="OMP_NUM_THREADS for 1-rank jobs (multi-rank jobs always use 1)",
    )
    parser.add_argument("--numpy-max", type=int, default=96, help="largest per-rank size for numpy (slow)")
    parser.add_argument("--steps", type=int, default=5, help="steps per timed batch")
    parser.add_argument("--repeats", type=int, default=5, help="timed batches")
    parser.add_argument("--warmup", type=int, default=1, help="steps after the first call, untimed")
    parser.add_argument("--profile-sizes", type=int, nargs="*", help="sizes to profile (1 rank, orchestrated)")
    parser.add_argument("--cache-root", default=os.environ.get("ORCHESTRA_CACHE_DIR"), help="orchestra cache")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmark_results" / "dycore", help="output folder")
    parser.add_argument("--plot", type=Path, help="PNG path (default OUT/benchmark.png)")
    parser.add_argument(
        "--no-triad", action="store_true", help="skip the machine measurements (triad bandwidth, arithmetic peak)"
    )
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds per mpirun job")
    parser.add_argument(
        "--worker", choices=[*VARIANTS, "traffic", "profile", "profile_nopasses", "profile_fused"],
        help=argparse.SUPPRESS,
    )
    parser.add_argument("--json", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    preset = FULL if args.full else QUICK
    args.sizes = args.sizes or preset["sizes"]
    if args.profile_sizes is None:
        args.profile_sizes = [n for n in preset["profile_sizes"] if n in args.sizes]
    return args


# ----------------------------------------------------------------------------- workers (under mpirun)
def worker(args: argparse.Namespace) -> None:
    """Run one variant (or the traffic trace, or the profile) for every size; rank 0 writes JSON."""
    from orchestra.comm import abort_on_exception

    with abort_on_exception():
        from bench_lib import dycore

        comm = dycore.communicator()
        threads = int(os.environ.get("OMP_NUM_THREADS", "1"))
        rows = []
        for nz in args.nz:
            for n in args.sizes:
                try:
                    rows.append(_worker_row(args, comm, n, nz) | {"threads": threads})
                except Exception as error:  # noqa: BLE001 (reported in the table, the run goes on)
                    if comm.size > 1:
                        raise
                    rows.append({"variant": args.worker, "n": n, "nz": nz, "ranks": 1, "error": repr(error)})
                if comm.rank == 0:
                    args.json.write_text(json.dumps(rows, indent=1))


def _worker_row(args: argparse.Namespace, comm: Any, n: int, nz: int) -> dict:
    from bench_lib import dycore

    if args.worker == "traffic":
        from bench_lib.traffic import step_traffic

        return {"n": n, "nz": nz, **step_traffic(dycore.build_model("numpy", n, nz, comm, None))}
    if args.worker.startswith("profile"):
        from bench_lib.profile import profile_orchestrated

        variant = "orchestrated" + args.worker[len("profile"):]
        model = dycore.build_model(variant, n, nz, comm, args.cache_root)
        snapshot = dycore.StateSnapshot(model.state)
        model.dycore()
        return {"variant": variant, "n": n, "nz": nz, **profile_orchestrated(model, 2 * args.steps, snapshot)}
    return dycore.measure_size(args.worker, n, nz, comm, args)


# ----------------------------------------------------------------------------- driver (no MPI here)
def mpirun(ranks: int, threads: int, worker_args: list[str], timeout: float) -> tuple[int, str]:
    """Run this script as a worker under mpirun; returns (exit code, output tail)."""
    launcher = Path(sys.executable).parent / "mpirun"
    command = [
        str(launcher if launcher.exists() else shutil.which("mpirun") or "mpirun"),
        "-n", str(ranks), "--oversubscribe", sys.executable, str(Path(__file__).resolve()), *worker_args,
    ]
    env = dict(os.environ, **MPI_ENV, OMP_NUM_THREADS=str(threads))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")]))
    env.setdefault("GT_CACHE_ROOT", str(ROOT / ".gt_cache_root"))
    try:
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
        return done.returncode, (done.stdout + done.stderr)[-3000:]
    except subprocess.TimeoutExpired as error:
        return -9, f"killed after {timeout} s: {str(error.stdout)[-2000:]}"


def run_job(args: argparse.Namespace, what: str, ranks: int, threads: int, sizes: list[int], scratch: Path) -> list[dict]:
    """One worker job; its rows, or one error row per size."""
    out = scratch / f"{what}_{ranks}_{threads}.json"
    worker_args = [
        "--worker", what, "--json", str(out), "--sizes", *map(str, sizes), "--nz", *map(str, args.nz),
        "--steps", str(args.steps), "--repeats", str(args.repeats), "--warmup", str(args.warmup),
    ]
    if args.cache_root:
        worker_args += ["--cache-root", str(args.cache_root)]
    if args.debug_checks:
        worker_args += ["--debug-checks", args.debug_checks]
    start = time.perf_counter()
    code, tail = mpirun(ranks, threads, worker_args, args.timeout)
    rows = json.loads(out.read_text()) if out.exists() else []
    print(f"  {what:<14} ranks={ranks} threads={threads} sizes={sizes}: {time.perf_counter() - start:.0f} s"
          + ("" if code == 0 else f"  FAILED ({code})"), flush=True)
    if code != 0:
        print("    " + "\n    ".join(tail.splitlines()[-15:]), flush=True)
        done = {(row.get("n"), row.get("nz")) for row in rows}
        rows += [
            {"variant": what, "ranks": ranks, "threads": threads, "n": n, "nz": nz, "error": f"exit {code}"}
            for nz in args.nz for n in sizes if (n, nz) not in done
        ]
    return rows


def main(argv: Optional[list[str]] = None) -> int:
    args = parse_arguments(argv)
    if args.worker:
        worker(args)
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {
        "command": " ".join(["python", "scripts/benchmark.py", *(argv if argv is not None else sys.argv[1:])]),
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "machine": machine.describe(),
        "settings": {k: v for k, v in vars(args).items() if k not in ("worker", "json")} | {"out": str(args.out)},
        "rows": [],
    }
    result["settings"]["plot"] = str(args.plot) if args.plot else None
    start = time.perf_counter()
    result["triad"] = [] if args.no_triad else machine.measure_bandwidth()
    result["peak"] = [] if args.no_triad else machine.measure_arithmetic()
    with tempfile.TemporaryDirectory(prefix="orchestra_bench_") as scratch_name:
        scratch = Path(scratch_name)
        traffic_rows = run_job(args, "traffic", 1, 1, args.sizes, scratch)
        result["traffic"] = {}
        for row in traffic_rows:
            if "error" not in row:
                result["traffic"].setdefault(str(row["n"]), {})[str(row["nz"])] = row
        if args.compare_passes and "orchestrated_nopasses" not in args.variants:
            args.variants.append("orchestrated_nopasses")
        if args.compare_simd and "orchestrated_nosimd" not in args.variants:
            args.variants.append("orchestrated_nosimd")
        if args.compare_fusion and "orchestrated_unfused" not in args.variants:
            args.variants.append("orchestrated_unfused")
        if args.debug_checks and "orchestrated_debug" not in args.variants:
            args.variants.append("orchestrated_debug")
        ordered = ["orchestrated"] + [v for v in args.variants if v != "orchestrated"]  # builds first
        for ranks in args.ranks:
            for threads in (args.threads if ranks == 1 else [1]):
                for variant in ordered:
                    if variant not in args.variants or (variant == "numpy" and threads > 1):
                        continue
                    if variant in ONE_RANK_VARIANTS and ranks > 1:
                        continue
                    sizes = [n for n in args.sizes if variant != "numpy" or n <= args.numpy_max]
                    if sizes:
                        result["rows"] += run_job(args, variant, ranks, threads, sizes, scratch)
        if args.profile_sizes:
            result["profile"] = run_job(args, "profile", 1, 1, args.profile_sizes, scratch)
            if "orchestrated_nopasses" in args.variants:
                result["profile"] += run_job(args, "profile_nopasses", 1, 1, args.profile_sizes, scratch)
    if not args.no_triad:
        # again at the end; the best of both counts (a triad or peak measured while the
        # machine was busier than during the timed jobs would overstate the fraction reached)
        result["triad"] = machine.best_of(result["triad"], machine.measure_bandwidth(), "best_gbs")
        result["peak"] = machine.best_of(result["peak"], machine.measure_arithmetic(), "best_gflops")
    result["seconds"] = time.perf_counter() - start
    result["machine"]["load_average_end"] = os.getloadavg()
    result["summary"] = report.derive(result)
    print(report.table(result["summary"]))
    print(report.LEGEND)
    print_profiles(result.get("profile", []), result.get("triad", []), result.get("peak", []))
    (args.out / "benchmark.json").write_text(json.dumps(result, indent=1))
    plot_path = args.plot or args.out / "benchmark.png"
    report.plot(result, str(plot_path))
    print(f"wrote {args.out / 'benchmark.json'} and {plot_path} ({result['seconds']:.0f} s)")
    return 1 if any("error" in row for row in result["rows"]) else 0


def print_profiles(profiles: list[dict], triads: list[dict], peaks: list[dict]) -> None:
    """Per profiled size: the step's parts, then per kernel its time, bytes and GB/s (fraction of the
    triad), operations and GF/s (fraction of the vectorized peak), with as many threads as the profile."""
    for p in profiles:
        if "error" in p:
            print(f"profile {p['n']}: {p['error']}")
            continue
        stencils = ", ".join(f"{name} {1e3 * s:.2f}" for name, s in p["per_stencil_s"].items())
        print(
            f"profile {p.get('variant', '')} {p['n']}x{p['n']}x{p['nz']} (ms per step): program {1e3 * p['program_s']:.2f}, kernels "
            f"{1e3 * p['kernels_s']:.2f}, callbacks {1e3 * p['callbacks_s']:.3f} ({p['callbacks_per_step']}; "
            f"from Python: halo update {1e6 * p['python_halo_update_s']:.1f} us, min_area "
            f"{1e6 * p['python_min_area_s']:.2f} us), other {1e3 * p['rest_s']:.2f}; "
            f"{stencils}"
        )
        threads = p.get("threads", 1)
        triad = next((t["best_gbs"] for t in triads if t["threads"] == threads and t["array_mib"] >= 64), 0.0)
        peak = next((q["best_gflops"] for q in peaks if q["threads"] == threads and q["vectorized"]), 0.0)
        for name, seconds in p["per_stencil_s"].items():
            moved, operations = p.get("per_stencil_bytes", {}).get(name, 0), p.get("per_stencil_flops", {}).get(name, 0)
            rate = moved / seconds / 1e9 if seconds > 0 else 0.0
            gflops = operations / seconds / 1e9 if seconds > 0 else 0.0
            of_triad = f" ({100 * rate / triad:3.0f} % triad)" if triad else ""
            of_peak = f" ({100 * gflops / peak:3.0f} % peak)" if peak else ""
            print(f"  kernel {name[:56]:<56} {1e3 * seconds:8.2f} ms {moved / 1e6:8.1f} MB {rate:6.1f} GB/s{of_triad}"
                  f" {operations / 1e6:8.1f} MF {gflops:5.1f} GF/s{of_peak}")
        fusion = p.get("fusion", {})
        for kernel in fusion.get("fused", []):
            if len(kernel) > 1:
                print(f"  fused kernel: {' + '.join(kernel)}")
        for pair in fusion.get("not_fused", []):
            print(f"  not fused: {pair['first'].split('__')[0]} -> {pair['second'].split('__')[0]}: {pair['why']}")
        for kernel in fusion.get("blocking", []):
            status = f"{kernel['blocks']} blocks of rows" if kernel["blocked"] else f"not blocked: {kernel['why']}"
            print(f"  {' + '.join(kernel['kernel'])}: {status}")


if __name__ == "__main__":
    sys.exit(main())
