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
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

JOB = """
import sys
from orchestra import DaceConfig
from tests.debug.programs import ThicknessModel, inputs, run

config = DaceConfig(None, backend="dace:cpu", orchestration=sys.argv[2], cache_root=sys.argv[1])
shape = (8, 7, 1)
run(ThicknessModel(config, shape), inputs("clean", "dace:cpu", shape))
print("job: done", flush=True)
"""


def _console(cache_root: Path, mode: str) -> list[str]:
    """The job's console lines (stdout and stderr) in ``mode``."""
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    environment.pop("PYTHONWARNINGS", None)
    result = subprocess.run(
        [sys.executable, "-c", JOB, str(cache_root), mode], cwd=ROOT, env=environment,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600,
    )
    assert result.returncode == 0, result.stdout[-3000:]
    return result.stdout.splitlines()


def test_build_and_load_print_only_orchestras_lines(tmp_path):
    built = _console(tmp_path, "BuildAndRun")
    loaded = _console(tmp_path, "Run")
    for lines in (built, loaded):
        foreign = [line for line in lines if not line.startswith("[orchestra] ") and line != "job: done"]
        assert not foreign, "lines not from orchestra or the job:\n" + "\n".join(foreign[:20])
        assert lines[-1] == "job: done"
    assert any("building" in line for line in built) and any("loaded from cache" in line for line in loaded)
    logs = list(tmp_path.glob("*/*/build_warnings.log"))
    assert len(logs) == 1, logs
    assert "Incompatible strides" in logs[0].read_text()  # DaCe did warn: the console stayed quiet anyway
    assert any("warning(s) from DaCe/gt4py while building, written to" in line for line in built)
