"""Python's cycle collector during a build: fewer passes over the whole heap.

A build makes millions of objects that live until it ends: the program's
SDFG, the copies its passes make, the nodes and memlets of DaCe's code
generator. With CPython 3.11's default thresholds (700, 10, 10) the collector
examines the youngest objects every 700 allocations and, whenever the old
generation has grown by a quarter, every object of the process: 16 full
collections in 16 s of optimizing the FV3-size benchmark at 40 stencils,
each a walk over half a gigabyte of objects that are all still in use.

Inside :func:`fewer_collections` (the building process's parse, optimize and
compile) the youngest generation is collected every 10,000 allocations, so the
older ones are collected correspondingly less often, and the objects alive when
the build began (the interpreter's modules, the model) are frozen out of the
collector's walks (``gc.freeze``). Cycles made during the build are still
collected, later; the same memory at its peak within a few percent. What
the build computes does not depend on when garbage is collected.
Figures: ``docs/performance.md`` ("Fewer collections, and no quadratic walks"), D63 in ``docs/architecture.md``.
"""

from __future__ import annotations

import gc
from typing import Callable

from orchestra.toolchain.stand_in import WhileAnyInside

#: The youngest generation's threshold during a build (CPython's default is 700).
YOUNGEST_THRESHOLD = 10_000


def _fewer() -> Callable[[], None]:
    thresholds = gc.get_threshold()
    freeze = gc.isenabled() and gc.get_freeze_count() == 0  # a process that froze objects keeps them as they are
    gc.set_threshold(max(thresholds[0], YOUNGEST_THRESHOLD), *thresholds[1:])
    if freeze:
        gc.freeze()

    def undo() -> None:
        gc.set_threshold(*thresholds)
        if freeze:
            gc.unfreeze()

    return undo


#: Within the block (and any block of another thread overlapping it), fewer collections (module docstring).
#: The thresholds before the first block are back after the last one ends, and what it froze is unfrozen.
fewer_collections = WhileAnyInside(_fewer)
