"""An orchestrated build and load print only orchestra's own lines: DaCe's and gt4py's warnings go to a file.

A small model with one layer (``nz = 1``) makes DaCe warn ("Incompatible
strides: inner ... - outer ...") while parsing each stencil call. The model
is built (``BuildAndRun``) and then loaded (``Run``) in fresh processes, as a
user's job would be; every console line, stdout and stderr, must be one of
orchestra's (``[orchestra] ...``) or the job's own, and the warnings must be
in the build's ``build_warnings.log`` instead.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

JOB = """
import sys
from orchestra import DaceConfig
from tests.debug.programs import ThicknessModel, inputs, run

config = DaceConfig(None, backend="dace:cpu", orchestration=sys.argv[2], cache_root=sys.argv[1])
shape = (int(sys.argv[3]), 7, 1)
run(ThicknessModel(config, shape), inputs("clean", "dace:cpu", shape))
print("job: done", flush=True)
"""


def _console(cache_root: Path, mode: str, nx: int = 8) -> list[str]:
    """The job's console lines (stdout and stderr) in ``mode``, on ``nx`` x 7 x 1 cells."""
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    environment.pop("PYTHONWARNINGS", None)
    result = subprocess.run(
        [sys.executable, "-c", JOB, str(cache_root), mode, str(nx)], cwd=ROOT, env=environment,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600,
    )
    assert result.returncode == 0, result.stdout[-3000:]
    return result.stdout.splitlines()


def test_build_and_load_print_only_orchestras_lines(tmp_path):
    built = _console(tmp_path, "BuildAndRun")
    loaded = _console(tmp_path, "Run")
    rebuilt = _console(tmp_path, "BuildAndRun", nx=9)  # another domain: built again, and the log says why
    for lines in (built, loaded, rebuilt):
        foreign = [line for line in lines if not line.startswith("[orchestra] ") and line != "job: done"]
        assert not foreign, "lines not from orchestra or the job:\n" + "\n".join(foreign[:20])
        assert lines[-1] == "job: done"
    assert any("building" in line for line in built) and any("loaded from cache" in line for line in loaded)
    logs = list(tmp_path.glob("*/*/build_warnings.log"))
    assert len(logs) == 2, logs  # one per build
    assert all("Incompatible strides" in log.read_text() for log in logs)  # DaCe did warn: the console stayed quiet
    # one line names the kinds with their counts, and where all of them are
    warned = [line for line in built if "warning(s) of" in line]
    assert len(warned) == 1 and re.search(r"kind\(s\) from DaCe/gt4py while building: \d+x 'Incompatible strides", warned[0]), built
    assert warned[0].endswith("written to the build's build_warnings.log")
    assert all(log.read_text().startswith(tuple(str(n) for n in range(1, 10))) for log in logs)  # the table first
    # the builder says how many stencils it found lowered in gt4py's cache, and what an earlier build differs in
    assert any(re.search(r"parsed in .*stencils: \d+ of [1-9]\d* found lowered, \d+ lowered here", line) for line in built)
    assert not any("closest earlier build" in line for line in built)  # nothing to compare with yet
    why = [line for line in rebuilt if "the closest earlier build" in line]
    assert len(why) == 1 and "arguments" in why[0] and "(9, 7, 1) vs (8, 7, 1)" in why[0], rebuilt
