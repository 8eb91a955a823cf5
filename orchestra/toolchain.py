"""The frozen toolchain settings: DaCe configuration and gt4py compile flags.

DaCe's configuration is process-global. orchestra never writes a
``.dace.conf``; every setting it depends on is listed here, with the reason,
and applied only inside :func:`dace_settings` which restores the previous
values on exit.

Floating-point flags are chosen so that an orchestrated build and the same
stencils run one by one through gt4py give bitwise-identical results: no
``-ffast-math`` family flag on either side and ``-ffp-contract=off`` on both
(FMA contraction would otherwise differ between the two compilations).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import platform
import subprocess
from typing import Iterator

#: Compiler flags shared by orchestrated builds and gt4py stencil builds that
#: affect numerical results.
FP_FLAGS = ("-ffp-contract=off",)

#: Flags gt4py 1.1.12 needs for the dace backends: DaCe 2.0 headers use C++20
#: (``std::bit_cast``) while gt4py compiles with ``-std=c++17``; the later flag wins.
GT4PY_EXTRA_FLAGS = ("-std=c++20", *FP_FLAGS)

#: Flags for the orchestrated (whole-program) CPU build. DaCe's default adds
#: ``-freciprocal-math`` and ``-fno-signed-zeros`` (change results, break
#: parity) which are left out here. ``-march=native`` makes the library
#: specific to this CPU, so the host ISA enters the cache key (see
#: :func:`host_isa`).
CPU_ARGS = (
    "-std=c++20",
    "-fPIC",
    "-march=native",
    "-fno-math-errno",
    *FP_FLAGS,
    "-Wno-unused-parameter",
    "-Wno-unused-label",
    "-Wno-unused-variable",
    "-Wno-unused-but-set-variable",
)

#: (config path, value, reason) for every DaCe setting orchestra depends on.
DACE_SETTINGS: tuple[tuple[tuple[str, ...], object, str], ...] = (
    (("compiler", "allow_view_arguments"), True,
     "gt4py storages and model state arrays are numpy views"),
    (("frontend", "dont_fuse_callbacks"), True,
     "keeps halo-exchange callbacks in program order"),
    (("cache",), "name",
     "build folders are named by program; orchestra's own cache keys them"),
    (("cache_distaware",), False,
     "otherwise DaCe appends _rank<N> to build folders under MPI"),
    (("compiler", "use_cache"), False,
     "orchestra decides when to reuse a build, never DaCe"),
    (("compiler", "build_type"), "Release", "optimized builds (-O3)"),
    (("compiler", "cpu", "args"), " ".join(CPU_ARGS), "see CPU_ARGS"),
    (("compiler", "cpu", "openmp_sections"), False,
     "no OpenMP sections between independent states (ordering of callbacks)"),
    (("optimizer", "autooptimize"), False, "orchestra runs its own pipeline"),
    (("optimizer", "automatic_simplification"), False,
     "simplification is a pipeline stage with a documented skip list"),
    (("debugprint",), False, "quiet builds"),
    (("frontend", "raise_nested_parsing_errors"), True,
     "a stencil that fails to parse is an error, not a silent callback"),
    (("compiler", "cuda", "syncdebug"), False, "set by the debug checks only"),
)


def _set(path: tuple[str, ...], value: object) -> None:
    from dace.config import Config

    Config.set(*path, value=value)


@contextlib.contextmanager
def dace_settings(extra: tuple[tuple[tuple[str, ...], object], ...] = ()) -> Iterator[None]:
    """Apply :data:`DACE_SETTINGS` (plus ``extra``), restoring the old values on exit."""
    from dace.config import Config

    changes = [(path, value) for path, value, _ in DACE_SETTINGS] + list(extra)
    saved = []
    for path, value in changes:
        try:
            saved.append((path, Config.get(*path)))
        except KeyError:  # a setting this DaCe version does not know
            continue
        _set(path, value)
    try:
        yield
    finally:
        for path, value in reversed(saved):
            _set(path, value)


def frozen_settings() -> dict[str, object]:
    """The settings as a plain dict, for the cache key and the manifest."""
    return {".".join(path): value for path, value, _ in DACE_SETTINGS}


def prepare_gt4py() -> None:
    """Make gt4py's dace backends compile with this DaCe (C++20) and parity flags.

    Works whether or not gt4py was imported already: the environment variable
    covers a later import, the build settings a module already loaded.
    """
    wanted = " ".join(GT4PY_EXTRA_FLAGS)
    current = os.environ.get("GT4PY_EXTRA_COMPILE_ARGS", "")
    missing = [flag for flag in GT4PY_EXTRA_FLAGS if flag not in current.split()]
    if missing:
        os.environ["GT4PY_EXTRA_COMPILE_ARGS"] = (current + " " + " ".join(missing)).strip()
    import sys

    gt_config = sys.modules.get("gt4py.cartesian.config")
    if gt_config is not None:
        cxx = gt_config.build_settings["extra_compile_args"]["cxx"]
        for flag in wanted.split():
            if flag not in cxx:
                cxx.append(flag)


@functools.cache
def compiler_identity() -> str:
    """First line of ``c++ --version`` (the compiler DaCe's CMake picks by default)."""
    for exe in (os.environ.get("CXX"), "c++", "g++"):
        if not exe:
            continue
        try:
            out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if out.returncode == 0 and out.stdout:
            return out.stdout.splitlines()[0].strip()
    return "unknown"


@functools.cache
def host_isa() -> str:
    """A digest of this CPU's model and feature flags (``-march=native`` targets them)."""
    model, flags = platform.machine(), ""
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name") and model == platform.machine():
                    model += " " + line.split(":", 1)[1].strip()
                elif line.startswith("flags"):
                    flags = " ".join(sorted(line.split(":", 1)[1].split()))
                    break
    except OSError:
        pass
    return f"{model} [{hashlib.sha256(flags.encode()).hexdigest()[:16]}]"
