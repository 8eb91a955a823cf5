"""Sustainable memory bandwidth from a compiled STREAM-like triad ``a[i] = b[i] + s * c[i]``.

The kernel is C, compiled on the fly with the system compiler (``cc -O3
-march=native -fopenmp``, :mod:`bench_lib.native`) into a temporary folder, and run as a separate
process with ``OMP_NUM_THREADS`` threads. Bytes are counted as STREAM does:
24 per element (read ``b`` and ``c``, write ``a``; the write-allocate read of
``a`` is not counted), and the best of ``repeats`` timings is reported.

>>> from bench_lib.triad import measure_triad          # doctest: +SKIP
>>> measure_triad(threads=1, elements=1 << 25)         # doctest: +SKIP
TriadResult(threads=1, elements=33554432, bytes_per_repeat=805306368, best_gbs=..., median_gbs=...)
"""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path

from bench_lib.native import compile_kernel, run_kernel

TRIAD_SOURCE = r"""
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

int main(int argc, char **argv) {
    long n = atol(argv[1]);
    int repeats = atoi(argv[2]);
    double *a = aligned_alloc(64, n * sizeof(double));
    double *b = aligned_alloc(64, n * sizeof(double));
    double *c = aligned_alloc(64, n * sizeof(double));
    const double s = 3.0;
    /* first touch by the threads that later use the pages */
    #pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++) { a[i] = 0.0; b[i] = 1.0; c[i] = 2.0; }
    for (int r = 0; r < repeats; r++) {
        double start = now();
        #pragma omp parallel for schedule(static)
        for (long i = 0; i < n; i++) a[i] = b[i] + s * c[i];
        printf("%.9f\n", now() - start);
    }
    double check = 0.0;
    for (long i = 0; i < n; i += 4096) check += a[i];
    fprintf(stderr, "checksum %g\n", check);
    free(a); free(b); free(c);
    return 0;
}
"""


@dataclasses.dataclass(frozen=True)
class TriadResult:
    """Bandwidth of the triad on ``threads`` threads over arrays of ``elements`` doubles."""

    threads: int
    elements: int
    bytes_per_repeat: int
    best_gbs: float
    median_gbs: float

    @property
    def array_mib(self) -> float:
        """Size of one of the three arrays (MiB)."""
        return self.elements * 8 / 2**20


def compile_triad(folder: Path) -> Path:
    """Compile the triad into ``folder``; returns the executable."""
    return compile_kernel(TRIAD_SOURCE, folder, "triad", "c", ("-O3", "-march=native", "-fopenmp"))


def run_triad(executable: Path, threads: int, elements: int, repeats: int) -> TriadResult:
    """Run the compiled triad; best and median bandwidth in GB/s (1e9 bytes/s)."""
    nbytes = 24 * elements
    best, median = run_kernel(executable, (elements, repeats), threads).rates(nbytes / 1e9)
    return TriadResult(threads, elements, nbytes, best_gbs=best, median_gbs=median)


def measure_triad(threads: tuple[int, ...] = (1, 2), elements: tuple[int, ...] = (1 << 25,), repeats: int = 10) -> list[TriadResult]:
    """Compile once, then run the triad for every thread count and array size."""
    with tempfile.TemporaryDirectory(prefix="orchestra_triad_") as folder:
        executable = compile_triad(Path(folder))
        return [run_triad(executable, t, n, repeats) for n in elements for t in threads]
