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

Two reads inside DaCe's inlining loop (``dace.sdfg.utils.inline_sdfgs``) do
not need a fresh numbering, and flushed it once per inlined nested SDFG (256
of the 282 rebuilds left at 40 stencils): the loop reads the parent region's
``cfg_id`` only to hand it to ``setup_match`` of an inliner matched by node
object (``override=True``), and a pattern node of such a match
(``PatternNode.__get__``) looks up ``cfg_list[cfg_id]`` before returning the
object it already holds. Inside the block the first read gives an id no
program has (any later use of it fails loudly: ``IndexError``) and the
second returns the held object without the lookup; matches by node id are
answered by DaCe's own code.
"""

from __future__ import annotations

import contextlib
import sys
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
        with _inlining_without_numbering(Region):
            yield
    finally:
        Region.reset_cfg_list, Region.update_cfg_list, Region.cfg_list = rebuild, update, cfg_list
        stale = _deferred["stale"]
        _deferred.update(root=None, stale=False)
        if stale:
            rebuild(program)


#: The id DaCe's inlining loop is given for the region it only passes on: no program has it.
UNUSED_CFG_ID = 2**62


@contextlib.contextmanager
def _inlining_without_numbering(region_class: Any) -> Iterator[None]:
    """DaCe's inlining loop, inside the block, reads no region numbering it does not use (module docstring)."""
    from dace.sdfg import utils as sdfg_utils
    from dace.transformation.transformation import PatternNode

    inlining_loop = sdfg_utils.inline_sdfgs.__code__
    cfg_id, pattern_node = region_class.cfg_id, PatternNode.__get__

    def read_cfg_id(self: Any) -> int:
        if sys._getframe(1).f_code is inlining_loop:
            return UNUSED_CFG_ID
        return cfg_id.fget(self)

    def matched_node(self: Any, instance: Any, owner: Any) -> Any:
        if instance is not None:
            node = instance.subgraph[self]
            if not isinstance(node, int):  # matched by object: DaCe's lookup of its region is not needed
                return node
        return pattern_node(self, instance, owner)

    region_class.cfg_id, PatternNode.__get__ = property(read_cfg_id), matched_node
    try:
        yield
    finally:
        region_class.cfg_id, PatternNode.__get__ = cfg_id, pattern_node
