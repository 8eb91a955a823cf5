"""The orchestrated variants every random program is checked in (name -> CPU passes).

``None`` is the default pass list; a tuple names the passes exactly. ``fused``
is the default plus the (opt-in) fusion passes, so a difference that only it
shows points at a fusion pass.
"""

from __future__ import annotations

from typing import Optional

from orchestra.passes.cpu import DEFAULT_CPU_PASSES
from orchestra.passes.fusion import FUSION_PASSES

VARIANTS: dict[str, Optional[tuple[str, ...]]] = {
    "orchestrated": None,
    "fused": FUSION_PASSES + DEFAULT_CPU_PASSES,
}
