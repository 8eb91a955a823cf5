"""Fusion passes of the optimize stage: fewer passes over memory between two callbacks.

===========================  ==============================================  ==================
name                         what it does                                    module
===========================  ==============================================  ==================
``merge_vertical_maps``      consecutive maps over the same ``k`` range       :mod:`.vertical`
                             become one map when every written container is
                             touched one plane per iteration (:mod:`.planes`)
===========================  ==============================================  ==================

A fusion pass never crosses a callback: callbacks are their own states, and
the passes only merge maps within one state. Each pass only reorders work
between independent points and keeps every write, so results stay bitwise
identical to ``Python`` mode (``tests/fusion``: random programs; the dycore
and example parity tests). They run as CPU passes, by name
(:mod:`orchestra.passes.cpu`), and are not in the default list: vertical
merging was measured no faster than unmerged on the dycore (-6 % to +3 %,
``docs/performance.md``), so it is opt-in (``DaceConfig(cpu_passes=...)``)
until horizontal tiling builds on it. With debug checks, the checks follow
the fused kernels.
"""

from orchestra.passes.fusion.tiling import tile_fused_maps
from orchestra.passes.fusion.vertical import merge_vertical_maps

#: The CPU passes (by name) that are fusion passes.
FUSION_PASSES = ("merge_vertical_maps", "tile_fused_maps")

__all__ = ["FUSION_PASSES", "merge_vertical_maps", "tile_fused_maps"]
