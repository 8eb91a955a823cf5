"""The machine the benchmark runs on: what it is, and what it can do at best.

:func:`describe` records the host, CPU, compiler and package versions;
:func:`measure_bandwidth` the memory bandwidth (the triad, :mod:`bench_lib.triad`)
and :func:`measure_arithmetic` the multiply-add peak of code compiled like
orchestrated builds, vectorized and scalar (:mod:`bench_lib.peak`), both on 1
and 2 threads. The
benchmark measures both at its start and its end and keeps the better
(:func:`best_of`): a figure measured while the machine was busier would
overstate the fraction of it the model reaches.
"""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path
from typing import Any


def describe() -> dict[str, Any]:
    """What the figures were measured on."""
    from importlib import metadata

    info: dict[str, Any] = {
        "host": platform.node(),
        "python": platform.python_version(),
        "cores": os.cpu_count(),
        "load_average_start": os.getloadavg(),
        "versions": {name: metadata.version(name) for name in ("dace", "gt4py", "numpy", "mpi4py")},
    }
    try:
        cpu = [line for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("model name")]
        info["cpu"] = cpu[0].split(":", 1)[1].strip()
        info["memory_gib"] = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
        info["compiler"] = subprocess.run(["cc", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    except (OSError, IndexError, ValueError):
        pass
    return info


def measure_bandwidth() -> list[dict]:
    """Triad on 1 and 2 threads: DRAM-sized arrays (256 MiB each) and a cache-resident size."""
    from bench_lib.triad import measure_triad

    rows = [vars(t) | {"array_mib": t.array_mib} for t in measure_triad((1, 2), (1 << 25, 1 << 20))]
    print("triad: " + ", ".join(f"{t['threads']} thr {t['array_mib']:.0f} MiB {t['best_gbs']:.1f} GB/s" for t in rows),
          flush=True)
    return rows


def measure_arithmetic() -> list[dict]:
    """Multiply-add peak on 1 and 2 threads, vectorized and scalar, of code compiled like orchestrated code."""
    from bench_lib.peak import measure_peak

    rows = [vars(p) for vectorize in (True, False) for p in measure_peak((1, 2), vectorize=vectorize)]
    print("peak: " + ", ".join(f"{p['threads']} thr {'' if p['vectorized'] else 'scalar '}{p['best_gflops']:.1f} "
                               "GFLOP/s" for p in rows), flush=True)
    return rows


def best_of(first: list[dict], second: list[dict], figure: str) -> list[dict]:
    """Per (threads, size) the measurement with the higher ``figure`` (``best_gbs``, ``best_gflops``)."""
    best: dict[tuple, dict] = {}
    for row in first + second:
        key = (row["threads"], row["elements"], row.get("vectorized"))
        if key not in best or row[figure] > best[key][figure]:
            best[key] = row
    return list(best.values())
