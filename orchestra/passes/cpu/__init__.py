"""The CPU passes of the optimize stage, by name, in the order they run.

``OptimizeOptions.cpu_passes`` names the passes a CPU build runs after
simplification (GPU builds run none of them); the names enter the cache key.

============================  ===============================================  ==========================
name                          what it does                                     module
============================  ===============================================  ==========================
``gather_kernel_states``      a state of maps moves down, past blocks that     :mod:`orchestra.passes.fusion`
                              do not depend on it, to the next state of maps
                              (fusion: the two then fuse)
``merge_vertical_maps``       consecutive maps over the same ``k`` range       :mod:`orchestra.passes.fusion`
                              become one (fusion, see that package)
``split_region_maps``         one map per piece between horizontal-region      :mod:`.regions`
                              boundaries; each piece without dead branches
``split_region_maps_outer``   the same along the map index outside the         :mod:`.regions`
                              innermost (bulk pieces without any branch)
``shrink_scratch_planes``     a transient one merged map writes and reads      :mod:`orchestra.passes.fusion`
                              lives one level at a time (fusion)
``tile_fused_maps``           the horizontal maps of a fused map run block     :mod:`orchestra.passes.fusion`
                              by block of rows, skewed (fusion; opt-in)
``single_parallel_level``     no OpenMP region nested in another; a            :mod:`.openmp`
                              one-iteration parallel map hands its threads on
``simd_innermost_loops``      the innermost loop of each parallel map is       :mod:`.simd`
                              declared ``omp simd`` (applied to the generated
                              code when the program is compiled)
============================  ===============================================  ==========================

All change control flow and schedules only, never arithmetic: results stay
bitwise identical (``tests/benchmarks/test_cpu_passes.py``). Figures:
``docs/performance_log.md``.

>>> check_cpu_passes(["single_parallel_level", "split_region_maps"])
('split_region_maps', 'single_parallel_level')
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Iterable, Optional

from orchestra.errors import ConfigurationError
from orchestra.passes.fusion import FUSION_PASSES

log = logging.getLogger("orchestra")

#: Every CPU pass, in the order the optimize stage runs them (region splitting
#: copies inner maps, which blocking then runs block by block, and whose schedules the
#: OpenMP pass sets last).
CPU_PASS_ORDER = (
    "gather_kernel_states", "merge_vertical_maps", "split_region_maps", "split_region_maps_outer",
    "shrink_scratch_planes", "tile_fused_maps", "single_parallel_level", "simd_innermost_loops",
)

#: What a CPU build runs by default: fusion included (kernel states gathered, vertical
#: merging and scratch planes; the unfused dycore takes 1.25-1.53x the step time at 192x192,
#: within the noise at 24x24x8: docs/performance_log.md).
#: ``tile_fused_maps`` stays opt-in.
DEFAULT_CPU_PASSES = (
    "gather_kernel_states", "merge_vertical_maps", "split_region_maps", "split_region_maps_outer", "shrink_scratch_planes",
    "single_parallel_level", "simd_innermost_loops",
)

#: The default without fusion: what a build with debug checks runs unless its passes are
#: named (each check then follows one stencil, and scratch arrays stay in memory to be
#: checked), and how a program opts out of fusion (``DaceConfig(cpu_passes=UNFUSED_CPU_PASSES)``).
UNFUSED_CPU_PASSES = tuple(name for name in DEFAULT_CPU_PASSES if name not in FUSION_PASSES)


def check_cpu_passes(names: Iterable[str]) -> tuple[str, ...]:
    """``names`` in the order they run; an unknown name is a :class:`ConfigurationError`."""
    names = tuple(names)
    unknown = [name for name in names if name not in CPU_PASS_ORDER]
    if unknown:
        raise ConfigurationError(
            f"unknown CPU pass(es) {', '.join(map(repr, unknown))}; choose from {', '.join(CPU_PASS_ORDER)}"
        )
    return tuple(name for name in CPU_PASS_ORDER if name in names)


def _functions(block_bytes: Optional[int]) -> dict[str, Callable[[Any], int]]:
    from orchestra.passes.cpu.openmp import single_parallel_level
    from orchestra.passes.cpu.regions import split_region_maps
    from orchestra.passes.fusion import (
        gather_kernel_states, merge_vertical_maps, shrink_scratch_planes, tile_fused_maps,
    )

    return {
        "gather_kernel_states": gather_kernel_states,
        "merge_vertical_maps": merge_vertical_maps,
        "split_region_maps": split_region_maps,
        "split_region_maps_outer": lambda sdfg: split_region_maps(sdfg, -2),
        "shrink_scratch_planes": shrink_scratch_planes,
        "tile_fused_maps": lambda sdfg: tile_fused_maps(sdfg, block_bytes),
        "single_parallel_level": single_parallel_level,
        "simd_innermost_loops": lambda sdfg: 0,  # the generated code's, when compiled (pipeline.stages)
    }


def apply_cpu_passes(sdfg: Any, names: Iterable[str], block_bytes: Optional[int] = None) -> dict[str, int]:
    """Run the named passes on ``sdfg`` in place; returns what each changed (maps).

    ``block_bytes``: the block budget of ``tile_fused_maps`` (None: its default).
    """
    functions = _functions(block_bytes)
    changed = {name: functions[name](sdfg) for name in check_cpu_passes(names)}
    log.debug("%s: CPU passes %s", sdfg.name, changed)
    return changed


#: how the build log names what a pass changed (passes not listed are not reported)
_CHANGE_NAMES = {"gather_kernel_states": "kernel state(s) moved down to the next kernel",
                 "merge_vertical_maps": "vertical map(s) merged into the one before",
                 "shrink_scratch_planes": "scratch hand-over(s) through planes", "tile_fused_maps": "fused map(s) blocked"}


def describe_changes(changes: dict[str, int]) -> str:
    """What fusion did, for the build log: ``"fusion: 12 vertical map(s) merged into the one before, ..."`` or "".

    >>> describe_changes({"merge_vertical_maps": 12, "shrink_scratch_planes": 33, "split_region_maps": 4})
    'fusion: 12 vertical map(s) merged into the one before, 33 scratch hand-over(s) through planes'
    >>> describe_changes({"merge_vertical_maps": 0})
    'fusion: nothing merged'
    >>> describe_changes({"split_region_maps": 4})
    ''
    """
    ran = [name for name in _CHANGE_NAMES if name in changes]
    if not ran:
        return ""
    done = [f"{changes[name]} {_CHANGE_NAMES[name]}" for name in ran if changes[name]]
    return "fusion: " + (", ".join(done) if done else "nothing merged")
