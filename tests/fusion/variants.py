"""The orchestrated variants every random program is checked in (name -> CPU passes).

``None`` is the default pass list (fusion included); a tuple names the passes
exactly. ``unfused`` is the default without fusion, so a difference that only
the default shows points at a fusion pass.
"""

from __future__ import annotations

from typing import Optional

from orchestra.passes.cpu import DEFAULT_CPU_PASSES
from orchestra.passes.fusion import FUSION_PASSES

VARIANTS: dict[str, Optional[tuple[str, ...]]] = {
    "orchestrated": None,
    "unfused": tuple(name for name in DEFAULT_CPU_PASSES if name not in FUSION_PASSES),
}
