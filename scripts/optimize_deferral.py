"""The optimize stage on one saved program, with and without the deferred region renumbering.

Usage::

    python scripts/optimize_deferral.py PARSED.sdfgz [before|after ...]

``PARSED.sdfgz`` is a build's ``stages/0_parsed.sdfgz`` (saved with
``ORCHESTRA_VERBOSE=1`` or ``DaceConfig(verbose=True)``). Each label runs
orchestra's optimize stage on a fresh copy: ``before`` with DaCe renumbering the
program's regions after every change, ``after`` with
:mod:`orchestra.passes.deferred_cfg_list`. Prints the time and how often DaCe's
``reset_cfg_list`` ran, and whether the optimized programs are equal (their
JSON, ids aside). Default order: ``after before``.
"""

from __future__ import annotations

import collections
import contextlib
import os
import sys
import time
from typing import Any


def main() -> None:
    import dace
    from dace.sdfg.state import AbstractControlFlowRegion as Region

    from orchestra.observe.program_text import program_text
    from orchestra.passes import deferred_cfg_list
    from orchestra.pipeline import stages
    from orchestra.toolchain import dace_settings

    path, labels = sys.argv[1], sys.argv[2:] or ["after", "before"]
    deferred, rebuild, count = deferred_cfg_list.deferred_cfg_lists, Region.reset_cfg_list, collections.Counter()

    def counted(self: Any) -> Any:
        count["rebuilds"] += 1
        return rebuild(self)

    Region.reset_cfg_list = counted
    print("load", os.getloadavg(), flush=True)
    programs = {}
    with dace_settings():
        for label in labels:
            eager = label == "before"
            deferred_cfg_list.deferred_cfg_lists = (lambda sdfg: contextlib.nullcontext()) if eager else deferred
            sdfg = dace.SDFG.from_file(path)
            count.clear()
            start = time.perf_counter()
            stages.optimize(stages.ParsedProgram(sdfg, 0.0), stages.OptimizeOptions())
            print(f"{label}: optimize {time.perf_counter() - start:.1f} s, "
                  f"DaCe's renumbering ran {count['rebuilds']} times", flush=True)
            programs[label] = program_text(sdfg, numbering=False)
    print("optimized programs equal:", len(set(programs.values())) == 1)
    print("load", os.getloadavg(), flush=True)


if __name__ == "__main__":
    main()
