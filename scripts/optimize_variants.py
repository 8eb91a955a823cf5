"""The optimize stage on one saved program, timed with and without some of orchestra's work-arounds.

Usage::

    python scripts/optimize_variants.py PARSED.sdfgz [LABEL ...]

``PARSED.sdfgz`` is a build's ``stages/0_parsed.sdfgz`` (saved with
``ORCHESTRA_VERBOSE=1`` or ``DaceConfig(verbose=True)``). Each label runs
orchestra's optimize stage on a fresh copy of it, in the order given (repeat
labels to alternate them):

* ``orchestra``: as a build runs it;
* ``eager_renumbering``: DaCe renumbers the program's regions after every
  change (without :mod:`orchestra.passes.deferred_cfg_list`);
* ``whole_copies``: the region split copies each map's nested SDFG whole and
  then drops its dead branches (without
  :func:`orchestra.passes.cpu.regions.dead_branches_hidden`);
* ``walked_folds``: DaCe's ``fold_symbol_mapping`` walks every nested SDFG it
  integrates (without
  :func:`orchestra.toolchain.symbol_folding.folding_only_where_possible`).

Prints each run's time, how often DaCe's ``reset_cfg_list`` ran, the load, and
whether the optimized programs are equal (their JSON, ids aside). Default
labels: ``orchestra eager_renumbering``.
"""

from __future__ import annotations

import collections
import contextlib
import os
import sys
import time
from typing import Any

VARIANTS = ("orchestra", "eager_renumbering", "whole_copies", "walked_folds")


def _variant(label: str) -> Any:
    """Stand-ins that make orchestra's optimize stage run as ``label`` says (the module docstring)."""
    from orchestra.passes import deferred_cfg_list
    from orchestra.passes.cpu import regions
    from orchestra.toolchain import symbol_folding
    from orchestra.toolchain.stand_in import standing_in

    unchanged = lambda *args: contextlib.nullcontext()  # noqa: E731
    if label == "eager_renumbering":
        return standing_in(deferred_cfg_list, {"deferred_cfg_lists": unchanged})
    if label == "whole_copies":
        return standing_in(regions, {"dead_branches_hidden": unchanged})
    if label == "walked_folds":
        return standing_in(symbol_folding, {"folding_only_where_possible": unchanged})
    return contextlib.nullcontext()


def main() -> None:
    import dace
    from dace.sdfg.state import AbstractControlFlowRegion as Region

    from orchestra.observe.program_text import program_text
    from orchestra.pipeline import stages
    from orchestra.toolchain import dace_settings

    path, labels = sys.argv[1], sys.argv[2:] or ["orchestra", "eager_renumbering"]
    unknown = sorted(set(labels) - set(VARIANTS))
    if unknown:
        sys.exit(f"unknown labels {unknown}; choose among {list(VARIANTS)}")
    rebuild, count = Region.reset_cfg_list, collections.Counter()

    def counted(self: Any) -> Any:
        count["rebuilds"] += 1
        return rebuild(self)

    Region.reset_cfg_list = counted
    programs = {}
    with dace_settings():
        for label in labels:
            sdfg = dace.SDFG.from_file(path)
            count.clear()
            with _variant(label):
                start = time.perf_counter()
                stages.optimize(stages.ParsedProgram(sdfg, 0.0), stages.OptimizeOptions())
                seconds = time.perf_counter() - start
            print(f"{label}: optimize {seconds:.1f} s, DaCe's renumbering ran {count['rebuilds']} times, "
                  f"load {os.getloadavg()[0]:.1f}", flush=True)
            programs[label] = program_text(sdfg, numbering=False)
    print("optimized programs equal:", len(set(programs.values())) == 1)


if __name__ == "__main__":
    main()
