"""Small native timing kernels: compiled on the fly, run as a separate process.

The machine measurements of the benchmark (the triad's bandwidth in
:mod:`bench_lib.triad`, the arithmetic peak in :mod:`bench_lib.peak`) are
C or C++ programs that print one time in seconds per line. They are compiled
with the system compiler into a folder the caller owns and run with
``OMP_NUM_THREADS`` threads bound close together.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
from pathlib import Path
from typing import Sequence

#: Per language: the source suffix, the environment variable naming the compiler, its usual names.
COMPILERS = {"c": (".c", "CC", ("cc", "gcc")), "c++": (".cpp", "CXX", ("c++", "g++"))}


def compiler_for(language: str) -> str:
    """The compiler of ``language`` (``c`` or ``c++``): ``$CC``/``$CXX``, else the first one on PATH."""
    _, variable, names = COMPILERS[language]
    found = os.environ.get(variable) or next(filter(None, map(shutil.which, names)), None)
    if found is None:
        raise RuntimeError(f"no {language} compiler ({' or '.join(names)}) on PATH to build a timing kernel; "
                           f"set {variable}")
    return found


def compile_kernel(source: str, folder: Path, name: str, language: str, flags: Sequence[str]) -> Path:
    """Write ``source`` into ``folder`` and compile it with ``flags``; returns the executable."""
    suffix = COMPILERS[language][0]
    path = folder / f"{name}{suffix}"
    path.write_text(source)
    executable = folder / name
    done = subprocess.run([compiler_for(language), *flags, str(path), "-o", str(executable)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"compiling the {name} kernel failed:\n{done.stderr[-2000:]}")
    return executable


@dataclasses.dataclass(frozen=True)
class Timings:
    """The seconds a kernel printed, sorted."""

    seconds: tuple[float, ...]

    def rates(self, work: float) -> tuple[float, float]:
        """``work`` per second in the best and the median timing."""
        return work / self.seconds[0], work / self.seconds[len(self.seconds) // 2]


def run_kernel(executable: Path, arguments: Sequence[object], threads: int) -> Timings:
    """Run a compiled kernel on ``threads`` threads; the seconds it printed, one per line."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OMP_PROC_BIND="close")
    out = subprocess.run([str(executable), *map(str, arguments)], check=True, capture_output=True, text=True,
                         env=env).stdout
    return Timings(tuple(sorted(float(line) for line in out.split())))
