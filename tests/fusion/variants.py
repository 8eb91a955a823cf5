"""The orchestrated variants every random program is checked in (name -> ``DaceConfig`` options).

``orchestrated`` is the default pass list (vertical merging and scratch
planes included); ``fused`` adds the opt-in row blocking (``tile_fused_maps``),
with blocks as small as blocking allows (``fusion_block_bytes=1``: a few rows
per block), so the small random programs run block by block and a
difference that only ``fused`` shows points at blocking. A difference in both
is rerun with ``cpu_passes=UNFUSED_CPU_PASSES`` to tell fusion from the rest.
"""

from __future__ import annotations

from typing import Any

from orchestra.passes.cpu import DEFAULT_CPU_PASSES
from orchestra.passes.fusion import FUSION_PASSES

VARIANTS: dict[str, dict[str, Any]] = {
    "orchestrated": {},
    "fused": {"cpu_passes": FUSION_PASSES + DEFAULT_CPU_PASSES, "fusion_block_bytes": 1},
}
