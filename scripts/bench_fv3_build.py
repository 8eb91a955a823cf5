"""Build benchmark of FV3's size: cold build, warm start and a deep one-stencil edit of a generated acoustic step.

How to run::

    source scripts/setup_env.sh
    python scripts/bench_fv3_build.py                      # 324 stencils, 57 components: 30-60 min on 2 busy cores
    python scripts/bench_fv3_build.py --stencils 40 --json /tmp/fv3_40.json     # a few minutes
    python scripts/bench_fv3_build.py --skip-python-check  # without the (slow) Python-mode comparison

For a long run, run it in the background and keep the log:
``nohup python scripts/bench_fv3_build.py --json /tmp/bench_fv3/fv3.json > /tmp/bench_fv3/fv3.log 2>&1 &``
(the JSON is rewritten after every phase, so a run still going has the
phases done so far).

The script writes a model module of PyFV3's acoustic step's kind and size
(``bench_lib/fv3_layout.py``, ``fv3_model.py``, ``fv3_stencils.py``): at the
default ``--stencils 324`` (as many as PyFV3's ``dyn_core``), 57 orchestrated
components nested to depth 3 (acoustic loop, solvers, transports called for
two fields each, x/y edge-value leaves called twice each), 12 halo updaters
(``dace_inhibitor`` numpy periodic fills: no MPI) at 22 call sites, a
``dace_nounroll(range(n_split))`` loop and a dataclass state passed as a
compile-time argument; 12x12x8 cells, 3 halo points. A smaller ``--stencils``
gives fewer solvers, then fewer stencils per component: the same kind.

Each phase runs in a fresh process (``OMP_NUM_THREADS=1``):

* **cold**: empty gt4py cache (``GT_CACHE_ROOT`` in a temporary folder) and
  empty orchestra cache (``DaceConfig(cache_root=...)``): every stencil
  lowered, the whole program parsed, optimized, compiled and loaded;
* **warm**: both caches kept: the first call only loads;
* **edit**: a constant of one stencil of a depth-3 component changed: that
  stencil lowered again, the whole program rebuilt;
* **python** (unless ``--skip-python-check``): the edited model in
  ``Python`` mode, stencil by stencil (gt4py compiles each stencil: slow);
  its state after one call must equal the edit phase's orchestrated state
  bit for bit. The warm phase's state must equal the cold phase's too.

Per phase it reports the first call's time and its parts: stencil lowering
(time in ``FrozenStencil.__sdfg__``, inside the parse), parse, optimize,
compile (from orchestra's log lines; the builds' manifests' ``stage_seconds``
are in the JSON beside them), load; the 1-minute load average before and
after, and the machine's core count. The figures are wall clock on a shared
machine: read them with the load beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_lib.fv3_layout import edited_stencil, plan, shape  # noqa: E402
from bench_lib.fv3_model import HALO_UPDATERS, N_SPLIT, NX, NY, NZ, HALO, callback_sites, model_source  # noqa: E402

PHASES = ("cold", "warm", "edit", "python")
#: phase -> (edits of the deep stencil, orchestration mode)
PHASE_SETUP = {"cold": (0, "BuildAndRun"), "warm": (0, "BuildAndRun"), "edit": (1, "BuildAndRun"),
               "python": (1, "Python")}


def model_description(stencils: int) -> dict[str, Any]:
    """What the generated model holds: its shape, callbacks, loop, domain, the edited stencil."""
    root = plan(stencils)
    source = model_source(stencils)
    return {**shape(root), "halo_updaters": len(HALO_UPDATERS), "halo_call_sites": callback_sites(source),
            "n_split": N_SPLIT, "domain": [NX, NY, NZ], "halo": HALO, "edited_stencil": edited_stencil(root),
            "generated_lines": len(source.splitlines())}


def machine(load_before: float) -> dict[str, Any]:
    """The core count and the 1-minute load average now and at the start."""
    return {"cores": os.cpu_count(), "cores_usable": len(os.sched_getaffinity(0)),
            "load_1min_at_start": load_before, "load_1min_now": os.getloadavg()[0]}


def run_phase(phase: str, stencils: int, work: Path) -> dict[str, Any]:
    """Write the phase's model source and time it in a fresh process; the child's report plus load and wall."""
    edits, mode = PHASE_SETUP[phase]
    folder = work / "model"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "fv3_bench_model.py").write_text(model_source(stencils, edits))
    source_path = os.pathsep.join(filter(None, (str(work / "src"), os.environ.get("PYTHONPATH"))))
    env = {**os.environ, "GT_CACHE_ROOT": str(work / "gt_cache"), "OMP_NUM_THREADS": "1", "PYTHONPATH": source_path}
    env.pop("FV3_DACEMODE", None)
    load_before = os.getloadavg()[0]
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, __file__, "--one", str(folder), str(work / "orchestra_cache"), mode,
         str(work / f"state_{phase}.npz")],
        env=env, capture_output=True, text=True, check=False,
    )
    wall = time.perf_counter() - start
    (work / f"{phase}.log").write_text(done.stdout + done.stderr)
    if done.returncode != 0:
        raise SystemExit(f"the {phase} phase failed (log: {work / f'{phase}.log'}):\n{done.stderr[-4000:]}")
    report = json.loads(done.stdout.strip().splitlines()[-1])
    return {**report, "process_wall_s": wall, "load_1min_before": load_before, "load_1min_after": os.getloadavg()[0]}


def checks(result: dict[str, Any], work: Path) -> None:
    """The bitwise comparisons the phases done so far allow, into ``result["checks"]``."""
    from bench_lib.fv3_measure import bitwise_equal

    phases, found = result["phases"], {}
    if "warm" in phases:
        found["warm_equals_cold"] = bitwise_equal(work / "state_cold.npz", work / "state_warm.npz")
    if "python" in phases:
        found["orchestrated_equals_python"] = bitwise_equal(work / "state_edit.npz", work / "state_python.npz")
    found["all_finite"] = all(phase["finite"] for phase in phases.values())
    result["checks"] = found


def _line(phase: str, row: dict[str, Any]) -> str:
    """One phase's row of the table."""
    lowered = f"{row['stencils_lowered_here']}/{row['stencils_parsed']}" if row["stencils_parsed"] else "-"
    other = row["first_call_s"] - sum(row[f"{stage}_s"] for stage in ("parse", "optimize", "compile", "load"))
    reused = f"{row['files_reused']}/{row['files_compiled']}" if row.get("files_compiled") else "-"
    return (f"{phase:>6} {row['first_call_s']:>8.1f} {row['lowering_s']:>8.1f} {lowered:>9} {row['parse_s']:>7.1f}"
            f" {row['optimize_s']:>7.1f} {row['compile_s']:>7.1f} {reused:>6} {row['load_s']:>6.2f} {other:>6.1f}"
            f" {row['set_up_s']:>6.1f}"
            f" {row['load_1min_before']:>5.1f}/{row['load_1min_after']:<5.1f}")


def _passed(check: Any) -> bool:
    """A check's outcome: a bool, or a comparison's ``equal``."""
    return check if isinstance(check, bool) else check["equal"]


def report(result: dict[str, Any]) -> str:
    """The table of phases, the model's shape, the machine and the checks."""
    model, host = result["model"], result["machine"]
    lines = [f"model: {model['stencils']} stencils, {model['components']} components, depth {model['depth']}, "
             f"{model['halo_updaters']} halo updaters at {model['halo_call_sites']} call sites, "
             f"n_split {model['n_split']}, {'x'.join(map(str, model['domain']))} cells",
             f"machine: {host['cores']} cores ({host['cores_usable']} usable), "
             f"load (1 min) {host['load_1min_at_start']:.1f} at start, {host['load_1min_now']:.1f} now",
             f"{'phase':>6} {'1st call':>8} {'lowering':>8} {'lowered':>9} {'parse':>7} {'optim.':>7} {'compile':>7}"
             f" {'reused':>6} {'load':>6} {'other':>6} {'set-up':>6} {'load avg':>11}",
             *(_line(phase, row) for phase, row in result["phases"].items())]
    for name, check in result.get("checks", {}).items():
        differing = check["differing"] if isinstance(check, dict) else None
        lines.append(f"check {name}: {_passed(check)}" + (f" (differing: {differing})" if differing else ""))
    lines.append("(seconds; lowering is inside parse; lowered: stencils lowered here / stencil SDFGs the parse made;"
                 " reused: compiled C++ files reused from earlier builds / files compiled;"
                 " other: the rest of the first call (build key, cache look-up, the run); set-up: import and"
                 " construction; load avg: 1-min before/after the phase's process)")
    return "\n".join(lines)


def snapshot_orchestra(work: Path) -> dict[str, Any]:
    """Copy orchestra's package into ``work/src`` for every phase to import (see :func:`benchmark`)."""
    import importlib.util

    package = Path(importlib.util.find_spec("orchestra").origin).parent  # the one this environment imports
    root = package.parent
    shutil.copytree(package, work / "src" / "orchestra", ignore=shutil.ignore_patterns("__pycache__"))
    def git(*command: str) -> str:
        """``git`` in the repository of orchestra's package; its output."""
        done = subprocess.run(["git", "-C", str(root), *command], capture_output=True, text=True, check=False)
        return done.stdout.strip()
    changed = git("status", "--porcelain", "orchestra").splitlines()
    return {"commit": git("rev-parse", "HEAD"), "uncommitted_files": len(changed)}


def benchmark(stencils: int, python_check: bool, work: Path, json_out: Optional[Path]) -> dict[str, Any]:
    """Every phase in turn, the JSON rewritten after each.

    The phases import a copy of orchestra's package taken at the start: its
    sources are part of every build's key, so an edit of orchestra by someone
    else during a long run would otherwise make the warm phase a rebuild.
    """
    load_start = os.getloadavg()[0]
    result: dict[str, Any] = {"model": model_description(stencils), "phases": {}, "work": str(work),
                              "command": " ".join(sys.argv), "orchestra": snapshot_orchestra(work)}
    for phase in PHASES:
        if phase == "python" and not python_check:
            continue
        print(f"[bench_fv3_build] {phase} ...", flush=True)
        row = run_phase(phase, stencils, work)
        result["phases"][phase] = row
        result["machine"] = machine(load_start)
        checks(result, work)
        print(f"[bench_fv3_build] {phase}: first call {row['first_call_s']:.1f} s "
              f"(process {row['process_wall_s']:.1f} s); {row['log'][-1] if row['log'] else ''}", flush=True)
        if json_out:
            json_out.write_text(json.dumps(result, indent=1))
    return result


def main() -> None:
    """The benchmark, or (``--one``, internal) one phase in this process."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stencils", type=int, default=324, help="stencils of the model (at least 5)")
    parser.add_argument("--json", type=Path, default=None, help="write the report here (after every phase)")
    parser.add_argument("--skip-python-check", action="store_true", help="skip the Python-mode bitwise check")
    parser.add_argument("--work", type=Path, default=None, help="keep the model, caches and logs here")
    parser.add_argument("--one", nargs=4, metavar=("FOLDER", "CACHE", "MODE", "OUT"), help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.one:
        from bench_lib.fv3_measure import run_phase as measure

        folder, cache, mode, out = arguments.one
        print(json.dumps(measure(Path(folder), Path(cache), mode, Path(out))))
        return
    if arguments.work:
        arguments.work.mkdir(parents=True, exist_ok=True)
        result = benchmark(arguments.stencils, not arguments.skip_python_check, arguments.work, arguments.json)
    else:
        with tempfile.TemporaryDirectory(prefix="orchestra_bench_fv3_") as work:
            result = benchmark(arguments.stencils, not arguments.skip_python_check, Path(work), arguments.json)
    print(report(result))
    failed = [name for name, check in result["checks"].items() if not _passed(check)]
    if failed:
        raise SystemExit(f"check(s) failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
