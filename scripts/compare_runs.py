"""Compare two runs of the driver: final fields, invariants, error norms and speed.

Usage::

    python scripts/compare_runs.py REFERENCE_DIR OTHER_DIR [--rtol 1e-9]

Each directory is a run's ``output.directory``: its ``*_summary.json`` and the
netCDF snapshot of its last step. Prints, per prognostic field, the largest
difference relative to the reference field's largest magnitude; the relative
differences of the invariants and height error norms; and both runs' time per
step. Exits 1 when the runs differ in step count or a field differs by more
than ``rtol`` (the GPU's fused multiply-adds make round-off differences that
grow over the steps: the default leaves them room and still fails on a wrong
result, which is off by far more).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np


def _summary(directory: Path) -> dict[str, Any]:
    (path,) = sorted(directory.glob("*_summary.json"))
    return json.loads(path.read_text())


def _final_fields(directory: Path, steps: int) -> dict[str, np.ndarray]:
    import xarray as xr

    (path,) = sorted(directory.glob(f"*_step{steps:06d}.nc"))
    with xr.open_dataset(path) as dataset:
        return {name: dataset[name].values for name in ("h", "u", "v")}


def _relative(a: float, b: float) -> float:
    return abs(a - b) / abs(a) if a else abs(b)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reference", type=Path)
    parser.add_argument("other", type=Path)
    parser.add_argument("--rtol", type=float, default=1e-9)
    args = parser.parse_args()
    reference, other = _summary(args.reference), _summary(args.other)
    print(f"reference {args.reference}, other {args.other}")
    if reference["steps"] != other["steps"]:
        print(f"different runs: {reference['steps']} against {other['steps']} steps")
        return 1
    worst = 0.0
    ref_fields, other_fields = _final_fields(args.reference, reference["steps"]), _final_fields(
        args.other, other["steps"]
    )
    for name, ref in ref_fields.items():
        scale = float(np.max(np.abs(ref))) or 1.0
        difference = float(np.max(np.abs(other_fields[name] - ref))) / scale
        worst = max(worst, difference)
        print(f"  {name}: max |difference| / max |reference| = {difference:.3e}")
    for group in ("final", "errors"):
        for key, value in (reference.get(group) or {}).items():
            print(f"  {group} {key}: {value:.15e} vs {other[group][key]:.15e} "
                  f"(relative {_relative(value, other[group][key]):.2e})")
    for label, summary in (("reference", reference), ("other", other)):
        per_step = summary.get("seconds_per_step")
        build = summary.get("build_seconds")
        print(f"  {label}: {summary['steps']} steps, "
              f"{'%.3f ms' % (per_step * 1e3) if per_step else '-'} per step, "
              f"first step {summary['first_step_seconds']:.2f} s, build {'%.1f s' % build if build else '-'}")
    if reference.get("seconds_per_step") and other.get("seconds_per_step"):
        print(f"  speed-up of other over reference: {reference['seconds_per_step'] / other['seconds_per_step']:.2f}x")
    verdict = "equal within" if worst <= args.rtol else "DIFFERENT beyond"
    print(f"fields {verdict} rtol {args.rtol:g} (largest {worst:.3e})")
    return 0 if worst <= args.rtol else 1


if __name__ == "__main__":
    sys.exit(main())
