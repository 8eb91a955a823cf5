"""Python mode's first call with and without stencils compiled ahead in worker processes (issue 56).

    source scripts/setup_env.sh
    python tests/benchmarks/python_mode_first_call.py [--stencils 12] [--processes 0 1 2] [--work DIR]

Writes the model of ``scripts/build_scaling.py`` (N distinct stencils, 8 to
a component, ``dace:cpu``) and, for each count of compiling processes
(``ORCHESTRA_COMPILE_PROCESSES``; 0: each stencil compiles on its first
call, serially), runs in a fresh process with an empty gt4py cache: make the
model (``orchestrate`` in ``Python`` mode starts the workers), then time the
first call. The model's three fields after the call are saved and must be
bitwise equal whatever the count. Wall clock on a shared machine: the load
average is printed with each row.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))

from build_scaling import model_source  # noqa: E402

_RUN = '''
import json, sys, time
import numpy as np
start = time.perf_counter()
from orchestra import DaceConfig
import generated_model
config = DaceConfig(None, backend="dace:cpu", orchestration="Python")
model = generated_model.Model(config)
made = time.perf_counter()
rng = np.random.default_rng(0)
fields = [rng.random(generated_model.SHAPE) for _ in range(3)]
model(*fields)
called = time.perf_counter()
np.save(sys.argv[1], np.stack(fields))
print(json.dumps({"make_s": made - start, "first_call_s": called - made, "total_s": called - start}))
'''


def run(processes: int, folder: Path) -> dict:
    """One fresh process with an empty gt4py cache; its timings and the load average around it."""
    env = dict(os.environ, FV3_DACEMODE="Python", ORCHESTRA_COMPILE_PROCESSES=str(processes),
               GT_CACHE_ROOT=str(folder / f"gt_{processes}"), OMP_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join([str(folder), str(REPO)]))
    load_before = os.getloadavg()[0]
    out = subprocess.run([sys.executable, "-c", _RUN, str(folder / f"fields_{processes}.npy")], env=env, cwd=folder,
                         capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"run with {processes} processes failed:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}")
    row = json.loads(out.stdout.strip().splitlines()[-1])
    return {"processes": processes, **row, "load_before": load_before, "load_after": os.getloadavg()[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stencils", type=int, default=12)
    parser.add_argument("--processes", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--work", type=Path, default=None)
    options = parser.parse_args()
    folder = options.work or Path(tempfile.mkdtemp(prefix="python_mode_first_call_"))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "generated_model.py").write_text(model_source(options.stencils, 8, 0))
    import numpy as np

    rows = []
    for processes in options.processes:
        row = run(processes, folder)
        rows.append(row)
        print(f"{processes} compile processes: first call {row['first_call_s']:.1f} s (model made in "
              f"{row['make_s']:.1f} s), load average {row['load_before']:.1f} -> {row['load_after']:.1f}", flush=True)
    reference = np.load(folder / f"fields_{options.processes[0]}.npy")
    for processes in options.processes[1:]:
        same = np.array_equal(reference, np.load(folder / f"fields_{processes}.npy"))
        print(f"fields with {processes} processes bitwise equal to {options.processes[0]}: {same}")
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
