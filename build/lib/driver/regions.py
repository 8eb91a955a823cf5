"""Externals for horizontal regions at tile edges: ``west``, ``east``, ``south``, ``north``.

Each is the first (``west``, ``south``) or last (``east``, ``north``) index
of a stencil's compute domain, ``I[0]``, ``I[-1]``, ``J[0]``, ``J[-1]``, when
the rank's subdomain touches that tile edge, and a sentinel far outside any
domain otherwise. Stencils offset them to what they need (``west + 1``, ...):
a stencil whose domain starts one cell into the halo reads ``west`` as halo
cell -1, one on x-faces reads ``west`` as the face on the tile edge.

The values depend only on :class:`~orchestra.comm.TileEdges`, never on the
rank's position in the tile, so every rank of one code-path class (e.g. all
interior ranks of a 3x3 or larger layout) generates the same code.

>>> from orchestra.comm import TileEdges
>>> edge_externals(TileEdges(left=True, right=False, bottom=False, top=False))["west"]
AxisIndex(axis=I, index=0, offset=0)
"""

from __future__ import annotations

from gt4py.cartesian.gtscript import AxisIndex, I, J

from orchestra.comm import TileEdges

#: How far outside the domain a region of an untouched edge is placed.
OUTSIDE = 100_000


def edge_externals(edges: TileEdges) -> dict[str, AxisIndex]:
    """Region anchors for the tile edges a subdomain touches (sentinels for the others)."""
    return {
        "west": I[0] if edges.left else I[0] - OUTSIDE,
        "east": I[-1] if edges.right else I[-1] + OUTSIDE,
        "south": J[0] if edges.bottom else J[0] - OUTSIDE,
        "north": J[-1] if edges.top else J[-1] + OUTSIDE,
    }
