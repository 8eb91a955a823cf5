"""Fusion passes of the optimize stage: fewer passes over memory between two callbacks.

===========================  ==============================================  ==================
name                         what it does                                    module
===========================  ==============================================  ==================
``gather_kernel_states``     a state of maps moves down past blocks that     :mod:`.gathering`
                             do not depend on it (a vertical sweep) to the
                             next state of maps, and the two states fuse
``merge_vertical_maps``      consecutive maps over the same ``k`` range       :mod:`.vertical`
                             become one map when every written container is
                             touched one plane per iteration (:mod:`.planes`)
``shrink_scratch_planes``    a transient one merged map hands from one body   :mod:`.scratch_planes`
                             to the next lives one level at a time (a buffer
                             per thread): it no longer goes to memory
``tile_fused_maps``          the horizontal maps inside one vertical map run  :mod:`.tiling`
                             block by block of rows, each delayed (skewed) by
                             the rows it reads ahead of what earlier maps
                             wrote; every point computed once
===========================  ==============================================  ==================

:mod:`.plane_allocation` is not a pass: it changes the generated C++ so
that every OpenMP thread running a loop with scratch planes has its buffer,
whichever Python thread calls the program.

A fusion pass never crosses a callback: callbacks are their own states, and
the passes only merge maps within one state; :mod:`.barriers` lists the
callbacks that separate two kernels, for the build log. Each pass only reorders work
between independent points; every write to a model-visible array is kept
(only a declared scratch array's levels may live in a plane instead of
memory), so results stay bitwise identical to ``Python`` mode
(``tests/fusion``: random programs; the dycore and example parity tests).
They run as CPU passes, by name (:mod:`orchestra.passes.cpu`).
``merge_vertical_maps`` and ``shrink_scratch_planes`` are in the default
list (the dycore's step 0.80-0.86x at 192x192x8 with its intermediates
declared scratch, ``docs/performance_log.md``); a program opts out with
``DaceConfig(cpu_passes=UNFUSED_CPU_PASSES)``. ``tile_fused_maps`` stays
opt-in (block size ``DaceConfig(fusion_block_bytes=...)``). A build with
debug checks leaves fusion out unless its passes are named; named, the
checks follow the fused kernels, each named by all its stencils.
"""

from orchestra.passes.fusion.gathering import gather_kernel_states
from orchestra.passes.fusion.scratch_planes import shrink_scratch_planes
from orchestra.passes.fusion.tiling import tile_fused_maps
from orchestra.passes.fusion.vertical import merge_vertical_maps

#: The CPU passes (by name) that are fusion passes.
FUSION_PASSES = ("gather_kernel_states", "merge_vertical_maps", "shrink_scratch_planes", "tile_fused_maps")

__all__ = ["FUSION_PASSES", "gather_kernel_states", "merge_vertical_maps", "shrink_scratch_planes", "tile_fused_maps"]
