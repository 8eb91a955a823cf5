"""The orchestrated variants every random program is checked in (name -> CPU passes).

``None`` is the default pass list; a tuple names the passes exactly.
"""

from __future__ import annotations

from typing import Optional

VARIANTS: dict[str, Optional[tuple[str, ...]]] = {
    "orchestrated": None,
}
