"""Validation then code generation, against validation in a forked child beside code generation: time each.

Usage::

    python scripts/validation_variants.py BUILD_FOLDER [LABEL ...]

``BUILD_FOLDER`` is a build's cache folder with ``stages/3_optimized.sdfgz``
(saved with ``ORCHESTRA_VERBOSE=1`` or ``DaceConfig(verbose=True)``). Each
label loads a fresh copy of the program and runs, timed:

* ``in_place``: DaCe's validation, then orchestra's code generation (before D56);
* ``beside``: the validation forked (:mod:`orchestra.pipeline.validation_beside`),
  code generation, then the verdict (a build since D56).

Default labels: ``beside in_place``; repeat them to alternate. Nothing is compiled.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path


def main() -> None:
    import dace

    from orchestra.pipeline.generated_code import generate_code
    from orchestra.pipeline.validation_beside import validate_beside, validate_in_place

    folder = Path(sys.argv[1])
    for label in sys.argv[2:] or ["beside", "in_place"]:
        if label not in ("beside", "in_place"):
            sys.exit(f"unknown label {label!r}: beside or in_place")
        sdfg = dace.SDFG.from_file(str(folder / "stages" / "3_optimized.sdfgz"))
        sdfg.build_folder = tempfile.mkdtemp(prefix="orchestra_validation_variants_")
        start = time.perf_counter()
        pending = validate_beside(sdfg, sdfg.name) if label == "beside" else validate_in_place(sdfg, sdfg.name)
        validated = time.perf_counter() - start
        sdfg.fill_scope_connectors()
        generate_code(sdfg, Path(sdfg.build_folder), False)
        if pending is not None:
            pending.verdict()
        print(f"{label}: validation {validated:.2f} s, validation and code generation "
              f"{time.perf_counter() - start:.2f} s; load {os.getloadavg()[0]:.2f}", flush=True)


if __name__ == "__main__":
    main()
