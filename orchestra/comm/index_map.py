"""Quarter-turn maps between the index spaces of two tiles.

Across a cube edge the neighbouring tile's index axes are turned by a multiple
of 90 degrees relative to ours. An :class:`IndexMap` is the affine map from
one tile's (extended) index space to another's: a proper rotation by quarter
turns plus an integer offset. It acts on continuous coordinates, where cell
``i`` spans ``[i, i + 1]``, and on cell indices (:meth:`IndexMap.cell`).

Rotation convention (used everywhere in :mod:`orchestra.comm`): ``rotations``
is the number of counter-clockwise quarter turns that take *our* index axes
onto the *other* tile's. Then

* ``numpy.rot90(block, rotations, axes=(0, 1))`` shows a block cut from the
  other tile in our orientation, and
* a vector with components ``(u, v)`` along the other tile's axes has
  components ``R**rotations (u, v)`` along ours, with ``R(u, v) = (-v, u)``.

>>> m = IndexMap.rotation(1, offset=(0, 4))
>>> m.rotations
1
>>> m.cell(0, 0)
(0, 3)
>>> m.inverse().compose(m) == IndexMap.identity()
True
"""

from __future__ import annotations

import dataclasses
from typing import Any

Matrix = tuple[tuple[int, int], tuple[int, int]]

#: ``_QUARTER_TURNS[n]`` maps our coordinates to those of a tile whose axes
#: are our axes turned ``n`` quarter turns counter-clockwise (``R**-n``).
_QUARTER_TURNS: tuple[Matrix, ...] = (
    ((1, 0), (0, 1)),
    ((0, 1), (-1, 0)),
    ((-1, 0), (0, -1)),
    ((0, -1), (1, 0)),
)


@dataclasses.dataclass(frozen=True)
class IndexMap:
    """``x' = matrix @ x + offset`` on continuous tile coordinates."""

    matrix: Matrix
    offset: tuple[int, int]

    def __post_init__(self) -> None:
        if self.matrix not in _QUARTER_TURNS:
            raise ValueError(f"IndexMap matrix {self.matrix} is not a quarter-turn rotation")

    @classmethod
    def identity(cls) -> IndexMap:
        """The map that changes nothing."""
        return cls(_QUARTER_TURNS[0], (0, 0))

    @classmethod
    def rotation(cls, rotations: int, offset: tuple[int, int] = (0, 0)) -> IndexMap:
        """The map into a frame turned ``rotations`` quarter turns counter-clockwise."""
        return cls(_QUARTER_TURNS[rotations % 4], offset)

    @classmethod
    def from_affine(cls, affine: Any) -> IndexMap:
        """Build from a 3x3 homogeneous integer matrix (nested sequences or array)."""
        rows = [[int(round(float(x))) for x in row] for row in affine]
        if rows[2] != [0, 0, 1]:
            raise ValueError(f"not an affine matrix: last row is {rows[2]}")
        matrix = ((rows[0][0], rows[0][1]), (rows[1][0], rows[1][1]))
        return cls(matrix, (rows[0][2], rows[1][2]))

    @property
    def rotations(self) -> int:
        """Counter-clockwise quarter turns from our index axes to the other tile's."""
        return _QUARTER_TURNS.index(self.matrix)

    def point(self, x: Any, y: Any) -> tuple[Any, Any]:
        """Map continuous coordinates (scalars or integer/float arrays)."""
        (a, b), (c, d) = self.matrix
        return a * x + b * y + self.offset[0], c * x + d * y + self.offset[1]

    def cell(self, i: Any, j: Any) -> tuple[Any, Any]:
        """Map cell indices (scalars or integer arrays); exact integer arithmetic.

        Cell ``i`` has its centre at ``i + 1/2``; in doubled coordinates the
        centre is ``2 i + 1`` and everything stays integral.
        """
        x2, y2 = self.point(2 * i + 1, 2 * j + 1)
        # point() added the offset once; doubled coordinates need it twice.
        x2, y2 = x2 + self.offset[0], y2 + self.offset[1]
        return (x2 - 1) // 2, (y2 - 1) // 2

    def doubled(self, x2: Any, y2: Any) -> tuple[Any, Any]:
        """Map doubled coordinates ``(2 x, 2 y)``: cell centres odd, interface points even.

        Interface point ``I`` sits at coordinate ``I`` (doubled ``2 I``), cell
        ``i``'s centre at ``i + 1/2`` (doubled ``2 i + 1``); exact in integers.
        """
        p, q = self.point(x2, y2)
        # point() added the offset once; doubled coordinates need it twice.
        return p + self.offset[0], q + self.offset[1]

    def compose(self, first: IndexMap) -> IndexMap:
        """The map ``self(first(x))``."""
        (a, b), (c, d) = self.matrix
        (e, f), (g, h) = first.matrix
        matrix = ((a * e + b * g, a * f + b * h), (c * e + d * g, c * f + d * h))
        ox, oy = self.point(*first.offset)
        return IndexMap(matrix, (ox, oy))

    def inverse(self) -> IndexMap:
        """The map back (rotations are orthogonal: the inverse is the transpose)."""
        (a, b), (c, d) = self.matrix
        transposed = ((a, c), (b, d))
        ox, oy = self.offset
        return IndexMap(transposed, (-(a * ox + c * oy), -(b * ox + d * oy)))
