"""Which gt4py stencils a kernel runs, read from its map labels.

gt4py's dace backend labels a stencil's maps ``<stencil>__{h|v}_map_<id>``.
A kernel (an outermost map of the optimized program) runs one stencil,
unless fusion merged several into it (:mod:`orchestra.passes.fusion`): the
merged map keeps the label of the first, and the maps of each stencil stay
inside it with their own labels. The debug checks, the kernel profile and
its traffic count name a kernel by every stencil it runs, in order
(``divide+update_thickness``), so a fused kernel is never reported as its
first stencil alone.
"""

from __future__ import annotations

import re
from typing import Any

_STENCIL_MAP = re.compile(r"^(?P<stencil>.+?)__[hv]_map(?:_\d+)?$")

#: how the stencils of one kernel are joined into its name
JOIN = "+"


def stencil_of_map(label: str) -> str:
    """The gt4py stencil a map label comes from, or "" for other maps.

    >>> stencil_of_map("laplacian__v_map_140462357045520")
    'laplacian'
    >>> stencil_of_map("assign_12_4_map")
    ''
    """
    match = _STENCIL_MAP.match(label)
    return match.group("stencil") if match else ""


def stencils_of_kernel(state: Any, entry: Any) -> list[str]:
    """The stencils whose maps the map scope of ``entry`` runs, in program order.

    The maps of one stencil in a row count once (a stencil split at its
    horizontal regions is several maps); a stencil run twice, with another
    between, is named twice. A map of no stencil gives ``[]``.
    """
    from dace.sdfg import nodes
    from dace.sdfg.utils import dfs_topological_sort

    body = set(state.scope_subgraph(entry, include_entry=False, include_exit=False).nodes())
    labels = [entry.map.label] + [
        node.map.label for node in dfs_topological_sort(state) if node in body and isinstance(node, nodes.MapEntry)
    ]
    names = [name for name in map(stencil_of_map, labels) if name]
    return [name for index, name in enumerate(names) if index == 0 or names[index - 1] != name]


def kernel_name(stencils: list[str]) -> str:
    """One name for a kernel's stencils: ``"a+b"``; ``""`` for none.

    >>> kernel_name(["divide", "update_thickness"]), kernel_name(["smooth"]), kernel_name([])
    ('divide+update_thickness', 'smooth', '')
    """
    return JOIN.join(stencils)
