"""Shared test set-up: quiet DaCe, one thread per process, a project gt4py cache."""

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("GT_CACHE_ROOT", str(ROOT / ".gt_cache_root"))
# Test files run in parallel workers (scripts/test.sh, pytest-xdist). gt4py's own cache is not safe
# for several processes compiling one stencil at once, so each worker (and the MPI jobs it starts)
# has a gt4py cache of its own, inside the project's.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ["GT_CACHE_ROOT"] = str(Path(os.environ["GT_CACHE_ROOT"]) / "workers" / os.environ["PYTEST_XDIST_WORKER"])
os.environ.pop("FV3_DACEMODE", None)  # every test chooses its mode explicitly
# Python mode's stencils compile on their first calls, as before, unless a test starts workers itself
# (tests/stencils/test_compile_ahead.py): tests of every mode share one process and two cores.
os.environ.setdefault("ORCHESTRA_COMPILE_PROCESSES", "0")
os.environ.pop("ORCHESTRA_DEBUG", None)
