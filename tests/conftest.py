"""Shared test set-up: quiet DaCe, one thread per process, a project gt4py cache."""

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("GT_CACHE_ROOT", str(ROOT / ".gt_cache_root"))
os.environ.pop("FV3_DACEMODE", None)  # every test chooses its mode explicitly
os.environ.pop("ORCHESTRA_DEBUG", None)
