"""The orchestrated variants every random program is checked in (name -> ``DaceConfig`` options).

``orchestrated`` is the default pass list; ``fused`` is the default plus the
(opt-in) fusion passes, with blocks as small as blocking allows
(``fusion_block_bytes=1``: a few rows per block), so the small random
programs run block by block and a difference that only ``fused`` shows
points at a fusion pass.
"""

from __future__ import annotations

from typing import Any

from orchestra.passes.cpu import DEFAULT_CPU_PASSES
from orchestra.passes.fusion import FUSION_PASSES

VARIANTS: dict[str, dict[str, Any]] = {
    "orchestrated": {},
    "fused": {"cpu_passes": FUSION_PASSES + DEFAULT_CPU_PASSES, "fusion_block_bytes": 1},
}
