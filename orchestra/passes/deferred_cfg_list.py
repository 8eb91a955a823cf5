"""DaCe's list of control-flow regions, rebuilt when it is read instead of after every change.

DaCe numbers every control-flow region of a program (``cfg_list``, ``cfg_id``)
and rebuilds that numbering, by walking every node of every state of the whole
program, after each change to the tree: each nested SDFG inlined, each region
added. Simplify inlines one nested SDFG after another, so that walk runs once
per nested SDFG: quadratic in the program's size. Measured on the FV3-size
benchmark's optimize stage (``scripts/bench_fv3_build.py``): 7.6 s of 58 s at
40 stencils, 101 s of 275 s at 120 (3,045 rebuilds), about half at 324.

:func:`deferred_cfg_lists` lets one program's rebuilds wait until the
numbering is next read. Inside it, a rebuild of ``program``'s tree only marks
it stale; reading ``cfg_list`` or ``cfg_id`` of any region of it (or
``update_cfg_list``) rebuilds it first, with DaCe's own code; other programs
are rebuilt at once, as before. Every reader sees what it would have seen
without the deferral, so the program that comes out is the same (compared on
the benchmark and the dycore: ``tests/pipeline/test_deferred_cfg_list.py``).
A work-around for DaCe 2.0.0b1's ``AbstractControlFlowRegion``; the three
methods are restored on leaving.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Iterator, Optional

_lock = threading.Lock()
_deferred: dict[str, Any] = {"root": None, "stale": False}


def _root(region: Any) -> Any:
    """The top of ``region``'s tree, found as DaCe's rebuild finds it."""
    from dace.sdfg.sdfg import SDFG

    while True:
        if isinstance(region, SDFG) and region.parent_sdfg is not None:
            region = region.parent_sdfg
        elif region._parent_graph is not None:
            region = region._parent_graph
        else:
            return region


def _flush(region: Any, rebuild: Any) -> None:
    """Rebuild the deferred tree's numbering if it is stale and ``region`` belongs to it."""
    if _deferred["stale"] and _root(region) is _deferred["root"]:
        _deferred["stale"] = False
        rebuild(_deferred["root"])


@contextlib.contextmanager
def deferred_cfg_lists(program: Any) -> Iterator[None]:
    """Within the block, ``program``'s region numbering is rebuilt when read, not after each change.

    Nested uses (another program already deferred) leave the outer one in charge.
    """
    from dace.sdfg.state import AbstractControlFlowRegion as Region

    with _lock:
        if _deferred["root"] is not None:
            nested = True
        else:
            nested = False
            _deferred.update(root=program, stale=False)
    if nested:
        yield
        return
    rebuild, update, cfg_list = Region.reset_cfg_list, Region.update_cfg_list, Region.cfg_list

    def reset_cfg_list(self: Any) -> Optional[list]:
        if _deferred["root"] is not None and _root(self) is _deferred["root"]:
            _deferred["stale"] = True
            return self._cfg_list
        return rebuild(self)

    def update_cfg_list(self: Any, regions: Any) -> None:
        _flush(self, rebuild)
        update(self, regions)

    def read_cfg_list(self: Any) -> list:
        _flush(self, rebuild)
        return self._cfg_list

    Region.reset_cfg_list, Region.update_cfg_list = reset_cfg_list, update_cfg_list
    Region.cfg_list = property(read_cfg_list)
    try:
        yield
    finally:
        Region.reset_cfg_list, Region.update_cfg_list, Region.cfg_list = rebuild, update, cfg_list
        stale = _deferred["stale"]
        _deferred.update(root=None, stale=False)
        if stale:
            rebuild(program)
