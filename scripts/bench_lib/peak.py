"""The arithmetic peak for orchestrated code: double multiply-add throughput from cache.

A C++ kernel compiled as orchestrated builds are (orchestra's ``CPU_ARGS``,
then ``-O3 -DNDEBUG -fopenmp`` as DaCe's Release CMake build adds them;
:mod:`bench_lib.native`), with the widest vectors on x86 (:func:`peak_flags`),
sweeps an array of ``elements`` doubles per thread, small enough for the L1
cache. Each element goes through a dependent chain of multiply-then-add
pairs, ``y = y * a + b``; elements are independent, so the loop vectorizes
like the generated stencil code and the out-of-order core overlaps the chains
of neighbouring vectors.

``-ffp-contract=off`` (orchestra's flag for bitwise parity with stencil-by-
stencil runs) forbids fusing ``y * a + b`` into one FMA instruction, as it
does in the generated code: this is the peak *for that code*, a multiply
and an add (2 flops) for every pair. On a core whose FMA units also take
plain multiplies and adds it can still be the machine's FMA peak; on others
it is half of it.

The same kernel compiled with ``-fno-tree-vectorize`` gives the scalar
peak: the rate of generated loops the compiler leaves scalar (a loop whose
body calls a nested SDFG's function per point, as the bulk pieces of
horizontal-region stencils do, is not vectorized).

>>> from bench_lib.peak import measure_peak            # doctest: +SKIP
>>> measure_peak(threads=(1,))                         # doctest: +SKIP
[PeakResult(threads=1, elements=1024, flops_per_repeat=..., best_gflops=..., median_gflops=...)]
"""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path

from bench_lib.native import compile_kernel, run_kernel

#: Multiply-add pairs per element and sweep (8 flops).
PAIRS = 4

PEAK_SOURCE = r"""
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

static double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int main(int argc, char **argv) {
    const long n = std::atol(argv[1]);       // doubles per thread
    const long sweeps = std::atol(argv[2]);  // passes over them per timing
    const int repeats = std::atoi(argv[3]);
    double start = 0.0, checksum = 0.0;
    #pragma omp parallel reduction(+ : checksum)
    {
        std::vector<double> x(n, 1.0);  // per thread, first touched by its thread
        double *v = x.data();
        for (int r = 0; r < repeats; r++) {
            #pragma omp barrier
            #pragma omp master
            start = now();
            for (long s = 0; s < sweeps; s++) {
                for (long i = 0; i < n; i++) {  // PAIRS dependent multiply-add pairs
                    double y = v[i];
                    y = y * 0.999 + 0.001;
                    y = y * 1.001 - 0.001;
                    y = y * 0.998 + 0.002;
                    y = y * 1.002 - 0.002;
                    v[i] = y;
                }
                asm volatile("" ::: "memory");  // one sweep after the other, not interchanged
            }
            #pragma omp barrier
            #pragma omp master
            std::printf("%.9f\n", now() - start);
        }
        for (long i = 0; i < n; i++) checksum += v[i];
    }
    std::fprintf(stderr, "checksum %g\n", checksum);
    return 0;
}
"""


@dataclasses.dataclass(frozen=True)
class PeakResult:
    """Multiply-add throughput on ``threads`` threads, ``elements`` doubles each (GFLOP/s: 1e9 flops/s)."""

    threads: int
    elements: int
    flops_per_repeat: int
    best_gflops: float
    median_gflops: float
    vectorized: bool = True


def peak_flags() -> tuple[str, ...]:
    """The flags of an orchestrated CPU build (``CPU_ARGS``, DaCe's Release and OpenMP flags), widest vectors.

    On x86 the loop is compiled with 512-bit vectors preferred, whatever
    ``ORCHESTRA_VECTOR_WIDTH`` and the compiler's tuning say: the peak is the
    machine's (an AMD Zen 5: 108.7 GF/s per core with 512-bit loops, 54.7 with 256).
    """
    from orchestra.toolchain import CPU_ARGS, is_x86

    widest = ("-mprefer-vector-width=512",) if is_x86() else ()
    return (*CPU_ARGS, *widest, "-O3", "-DNDEBUG", "-fopenmp")


def compile_peak(folder: Path, vectorize: bool = True) -> Path:
    """Compile the kernel into ``folder`` (``vectorize=False``: scalar, ``-fno-tree-vectorize``)."""
    flags = peak_flags() if vectorize else (*peak_flags(), "-fno-tree-vectorize")
    return compile_kernel(PEAK_SOURCE, folder, "peak" if vectorize else "peak_scalar", "c++", flags)


def run_peak(executable: Path, threads: int, elements: int, sweeps: int, repeats: int,
             vectorized: bool = True) -> PeakResult:
    """Run the compiled kernel; best and median GFLOP/s over ``repeats`` timings."""
    flops = threads * elements * sweeps * 2 * PAIRS
    best, median = run_kernel(executable, (elements, sweeps, repeats), threads).rates(flops / 1e9)
    return PeakResult(threads, elements, flops, best_gflops=best, median_gflops=median, vectorized=vectorized)


def measure_peak(
    threads: tuple[int, ...] = (1, 2), elements: int = 1024, sweeps: int = 20_000, repeats: int = 10,
    vectorize: bool = True,
) -> list[PeakResult]:
    """Compile once, then run the kernel on every thread count (8 KiB per thread by default: L1)."""
    with tempfile.TemporaryDirectory(prefix="orchestra_peak_") as folder:
        executable = compile_peak(Path(folder), vectorize)
        return [run_peak(executable, t, elements, sweeps, repeats, vectorize) for t in threads]
