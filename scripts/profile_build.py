"""Where a cold build of the dycore spends its time: per stage, per call-tree node, per pass.

Builds the README's main job's dynamical core from an empty cache (6 ranks:
``mpirun -n 6``; the configuration's layout decides the rank count) and, on
the rank that builds, times:

* the stages (key, parse, optimize, compile, load);
* inside parse: each orchestrated component's parse (exclusive of the
  components and stencils it calls), each stencil's lowering by gt4py into
  its SDFG (``FrozenStencil.__sdfg__``), and DaCe's preprocessing of each
  function (closure resolution, orchestra's source rewrites);
* inside optimize: simplify, library-node expansion, the CPU passes, the
  memory policy, validation;
* inside compile: DaCe's code generation and the C++ compiler (CMake + gcc).

Usage::

    mpirun -n 6 python scripts/profile_build.py [CONFIG] [--json FILE]

Prints a table on the building rank; ``--json`` also writes the figures.
The timings are wall clock on a shared machine: compare within one run.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import importlib
import json
import shutil
import tempfile
import time
from typing import Any, Callable, Iterator

from mpi4py import MPI


class Profile:
    """Wall time by (section, label), inclusive and exclusive of nested timed calls."""

    def __init__(self) -> None:
        self.inclusive: dict[tuple[str, str], float] = collections.defaultdict(float)
        self.exclusive: dict[tuple[str, str], float] = collections.defaultdict(float)
        self.calls: dict[tuple[str, str], int] = collections.defaultdict(int)
        self._stack: list[list[float]] = []  # time spent in nested timed calls, per open call

    @contextlib.contextmanager
    def timed(self, section: str, label: str) -> Iterator[None]:
        self._stack.append([0.0])
        start = time.perf_counter()
        try:
            yield
        finally:
            elapsed = time.perf_counter() - start
            nested = self._stack.pop()[0]
            key = (section, label)
            self.inclusive[key] += elapsed
            self.exclusive[key] += elapsed - nested
            self.calls[key] += 1
            if self._stack:
                self._stack[-1][0] += elapsed

    def wrap(self, owner: Any, name: str, section: str, label: Callable[..., str]) -> None:
        """Replace ``owner.name`` by a timed version labelled ``label(*args)``."""
        original = getattr(owner, name)
        profile = self

        def timed(*args: Any, **kwargs: Any) -> Any:
            with profile.timed(section, label(*args)):
                return original(*args, **kwargs)

        setattr(owner, name, timed)

    def rows(self, section: str) -> list[tuple[str, float, float, int]]:
        keys = [key for key in self.inclusive if key[0] == section]
        rows = [(key[1], self.inclusive[key], self.exclusive[key], self.calls[key]) for key in keys]
        return sorted(rows, key=lambda row: -row[2])


def instrument(profile: Profile) -> None:
    """Time the build's stages and their parts (monkeypatched for this process only)."""
    import dace
    from dace.codegen import codegen, compiler
    from dace.frontend.python import preprocessing

    modules = {name: importlib.import_module(f"orchestra.{name}") for name in (
        "orchestrate", "stencils.frozen", "passes.cpu", "passes.memory", "passes.simplify", "pipeline.build",
        "pipeline.obtain", "pipeline.request", "pipeline.stages")}
    orchestrate_module, stencil_module = modules["orchestrate"], modules["stencils.frozen"]
    cpu_passes, memory, simplify = modules["passes.cpu"], modules["passes.memory"], modules["passes.simplify"]
    build, obtain, request, stages = (modules[f"pipeline.{name}"] for name in ("build", "obtain", "request", "stages"))

    for name in ("parse", "optimize", "compile_program"):
        profile.wrap(stages, name, "stage", lambda *a, name=name: name)
        if hasattr(build, name):
            setattr(build, name, getattr(stages, name))
    profile.wrap(request, "key_request", "stage", lambda *a: "key (closure resolution, fingerprint)")
    profile.wrap(obtain, "load_entry", "stage", lambda *a: "load")
    profile.wrap(orchestrate_module.OrchestratedProgram, "__sdfg__", "parse",
                 lambda program, *a: f"component {program.label}")
    profile.wrap(stencil_module.FrozenStencil, "__sdfg__", "parse", lambda stencil, *a: f"stencil {stencil.name}")
    from gt4py.cartesian.backend.dace_backend import SDFGManager

    profile.wrap(SDFGManager, "_frozen_sdfg", "parse", lambda *a, **k: "gt4py SDFGManager._frozen_sdfg")
    profile.wrap(stencil_module, "argument_data", "parse", lambda *a: "arguments: gt4py IR, or saved")
    restated = importlib.import_module("orchestra.stencils.restated")
    profile.wrap(restated, "restate", "parse", lambda *a: "restate stencil for DaCe 2")
    profile.wrap(preprocessing, "preprocess_dace_program", "parse",
                 lambda function, *a: f"preprocess {getattr(function, '__qualname__', function)}")
    profile.wrap(simplify, "simplify", "optimize", lambda *a: "simplify")
    profile.wrap(dace.SDFG, "expand_library_nodes", "optimize", lambda *a: "expand library nodes (stencils)")
    profile.wrap(cpu_passes, "apply_cpu_passes", "optimize", lambda *a: "CPU passes")
    profile.wrap(memory, "apply_memory_policy", "optimize", lambda *a: "memory policy")
    profile.wrap(dace.SDFG, "validate", "optimize", lambda *a: "validate")
    profile.wrap(codegen, "generate_code", "compile", lambda *a: "DaCe code generation")
    profile.wrap(compiler, "configure_and_compile", "compile", lambda *a: "CMake + C++ compiler")


def grouped(rows: list[tuple[str, float, float, int]], prefix: str) -> tuple[float, int]:
    picked = [row for row in rows if row[0].startswith(prefix)]
    return sum(row[2] for row in picked), sum(row[3] for row in picked)


def report(profile: Profile, total: float) -> dict[str, Any]:
    print(f"\ncold build of DynamicalCore.__call__: {total:.1f} s on the building rank (wall)\n")
    print(f"{'stage':<44}{'s':>8}")
    for label, inclusive, _exclusive, _calls in sorted(profile.rows("stage"), key=lambda row: -row[1]):
        print(f"{label:<44}{inclusive:>8.1f}")
    parse = profile.rows("parse")
    parts = [
        ("stencil ", "FrozenStencil.__sdfg__ ({n} calls: checks, copies)"),
        ("arguments", "stencil argument data ({n} calls: gt4py IR, or saved beside it)"),
        ("gt4py ", "gt4py's frozen stencil SDFG ({n} calls: cached, or lowered)"),
        ("restate ", "stencil SDFG restated for DaCe 2 ({n} calls: windows, scalar types)"),
        ("component ", "DaCe frontend ({n} component parses)"),
        ("preprocess ", "DaCe preprocessing ({n} functions)"),
    ]
    print("\nparse, exclusive of nested timed calls:")
    for prefix, text in parts:
        seconds, calls = grouped(parse, prefix)
        print(f"  {text.format(n=calls):<58}{seconds:>8.1f}")
    print("  slowest nodes (exclusive s, calls):")
    for label, _inclusive, exclusive, calls in parse[:12]:
        print(f"    {label[:60]:<60}{exclusive:>7.2f} {calls:>4}")
    stage_seconds = {label: inclusive for label, inclusive, _, _ in profile.rows("stage")}
    for section, stage in (("optimize", "optimize"), ("compile", "compile_program")):
        print(f"\n{section}:")
        rows = sorted(profile.rows(section), key=lambda row: -row[1])
        for label, inclusive, _exclusive, calls in rows:
            print(f"  {label:<42}{inclusive:>8.1f} {calls:>4}")
        rest = stage_seconds.get(stage, 0.0) - sum(row[2] for row in rows)
        print(f"  {'other (not timed separately)':<42}{rest:>8.1f}")
    return {
        "total_s": total,
        "sections": {section: [dict(zip(("label", "inclusive_s", "exclusive_s", "calls"), row))
                               for row in profile.rows(section)]
                     for section in ("stage", "parse", "optimize", "compile")},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("config", nargs="?", default="configs/c24_case2.yaml")
    parser.add_argument("--json", default=None)
    arguments = parser.parse_args()

    from driver.config import load_config
    from driver.model import Model
    from orchestra import DaceConfig
    from orchestra.comm import Communicator, CubedSpherePartitioner, TilePartitioner

    world = MPI.COMM_WORLD
    cache = world.bcast(tempfile.mkdtemp(prefix="orchestra_profile_") if world.rank == 0 else None, root=0)
    profile = Profile()
    instrument(profile)
    config = load_config(arguments.config, None)
    communicator = Communicator.world(CubedSpherePartitioner(TilePartitioner((config.layout, config.layout))))
    dace_config = DaceConfig(communicator, backend="dace:cpu", orchestration="BuildAndRun", cache_root=cache)
    model = Model(config, communicator, dace_config)
    start = time.perf_counter()
    model.dycore()
    total = time.perf_counter() - start
    program = model.dycore.__orchestra_programs__["__call__"]
    if program.built_here:
        figures = report(profile, total)
        if arguments.json:
            with open(arguments.json, "w") as stream:
                json.dump(figures, stream, indent=1)
    world.barrier()
    if world.rank == 0:
        shutil.rmtree(cache, ignore_errors=True)


if __name__ == "__main__":
    main()
