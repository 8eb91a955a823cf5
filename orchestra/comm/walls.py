"""Ghost rows beyond a channel wall: left alone, or filled by a rule chosen per halo updater.

A :class:`~orchestra.comm.periodic.ChannelPartitioner` has walls at the
bottom (``j = 0``) and top (``j = ny``) of its tile. No rank owns the cells
beyond them, so a halo update cannot fetch them. By default they are left
**untouched** (the model fills them); with ``HaloUpdater(..., walls=Walls(...))``
the updater fills them at the end of every ``wait`` (so ``update`` and
``start``/``wait`` agree), after the periodic exchange has been unpacked.

Rules, with ghost row ``k`` (``k = 1 .. n_halo`` cells beyond the wall) and
interior row ``k - 1`` (counted inwards from the wall, row 0 touching it):

=================  ==========================================================
scalar rule        ghost row ``k`` becomes
=================  ==========================================================
``"untouched"``    left as it is (the default)
``"mirror"``       interior row ``k - 1`` (even reflection: zero gradient and
                   zero flux through the wall face)
``"zero"``         0
``"edge"``         interior row 0 (the row touching the wall)
=================  ==========================================================

=================  ==========================================================
vector rule        ghost rows of a pair ``(u, v)`` (``v`` is wall-normal)
=================  ==========================================================
``"untouched"``    left as they are (the default)
``"free_slip"``    ``u`` mirrored, ``v`` mirrored and negated (the reflection
                   of the vector in the wall: ``v`` is 0 on the wall face)
``"no_slip"``      ``u`` and ``v`` mirrored and negated (both 0 on the face)
``"zero"``         0
=================  ==========================================================

Negation is ``numpy.negative`` (``cupy.negative`` on the GPU): a sign flip,
bitwise ``-x``.

Staggered fields. "Mirror" is the reflection in the wall. For a field with j
on cell interfaces (D-grid ``u``, C-grid ``vc``, corner fields) the wall is
the row of points on it (``j = 0`` or ``j = ny``), which belongs to the
compute domain and is not written: ghost row ``k`` is the mirror image of
interior row ``k`` (``j = k`` or ``ny - k``), ``"edge"`` copies the row on the
wall. A wall-normal component on the wall faces (``vc``) keeps the value the
model gives it (0 for a wall). Staggering along i changes nothing here.

Corners. A rule fills the **whole width** of the ghost rows, the ``n_halo x
n_halo`` corner squares included, from the same columns inside the wall; the
periodic exchange has already filled the columns beyond the left and right
edges, so a corner is the reflection of the (periodic) ghost cells beside it,
exactly what a global field padded periodically in i, then by the rule in j,
holds. With ``"untouched"`` the corners beyond a wall are untouched too.

The rule belongs to the updater, not the partitioner: the partitioner says
*where* the walls are (:meth:`~orchestra.comm.periodic.ChannelPartitioner.wall_edges`),
and the same decomposition serves fields with different conditions (a
tracer mirrored, a wall-normal velocity negated, a pressure perturbation
zeroed): one updater per rule, one communicator and partitioner for all.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Optional, Sequence

from orchestra.comm.array_module import array_module
from orchestra.comm.errors import DecompositionError

#: Scalar rules, the default first.
SCALAR_RULES = ("untouched", "mirror", "zero", "edge")
#: Vector-pair rules, the default first.
VECTOR_RULES = ("untouched", "free_slip", "no_slip", "zero")

#: How each rule fills one array's ghost rows: even/odd reflection, zero, edge copy.
_SCALAR_FILLS = {"mirror": "even", "zero": "zero", "edge": "edge"}
_VECTOR_FILLS = {"free_slip": ("even", "odd"), "no_slip": ("odd", "odd"), "zero": ("zero", "zero")}


@dataclasses.dataclass(frozen=True)
class Walls:
    """The rule for scalars and the rule for vector pairs at channel walls (see the module docstring).

    >>> Walls(scalar="mirror", vector="free_slip")
    Walls(scalar='mirror', vector='free_slip')
    """

    scalar: str = "untouched"
    vector: str = "untouched"

    def __post_init__(self) -> None:
        for kind, value, allowed in (
            ("scalar", self.scalar, SCALAR_RULES),
            ("vector", self.vector, VECTOR_RULES),
        ):
            if value not in allowed:
                raise ValueError(
                    f"unknown {kind} wall rule {value!r}: choose one of "
                    f"{', '.join(repr(a) for a in allowed)}"
                )

    @property
    def untouched(self) -> bool:
        """True when both rules leave the ghost rows alone."""
        return self.scalar == "untouched" and self.vector == "untouched"


def _fill_side(array: Any, n_halo: int, top: bool, how: str, interface: bool = False) -> None:
    """Fill the ``n_halo`` ghost rows beyond one wall of ``array`` ``[i, j, ...]``, all of i.

    ``interface``: j is on cell interfaces, so the wall is the row of points on
    it (local ``n_halo`` or ``n_halo + ny``), which is not written; the
    reflection in the wall takes ghost row ``k`` from interior row ``k``.
    """
    h, shift = n_halo, int(interface)
    ny = array.shape[1] - 2 * h - shift
    if top:
        wall = h + ny - 1 + shift  # the last row inside (cells) or on the wall (interfaces)
        ghost, inside = array[:, wall + 1 :], array[:, wall + 1 - h - shift : wall + 1 - shift]
        edge = array[:, wall : wall + 1]
    else:
        ghost, inside, edge = array[:, :h], array[:, h + shift : 2 * h + shift], array[:, h : h + 1]
    mirror = inside[:, ::-1]  # ghost row k <- the row it is the mirror image of in the wall
    if how == "even":
        ghost[...] = mirror
    elif how == "odd":
        # Into a new array, then copied: numpy 2.4.6's negative(x, out=y) reads x as contiguous
        # when x's inner stride is 64 bytes and y is strided (views of one array escape it only
        # because numpy copies x first when their bounds overlap).
        ghost[...] = array_module(array).negative(mirror)
    elif how == "zero":
        ghost[...] = 0
    else:
        ghost[...] = edge


class WallFill:
    """The wall rule of one rank: which of its sides are walls, and how their ghost rows are filled."""

    def __init__(self, walls: Walls, bottom: bool, top: bool, n_halo: int) -> None:
        self.walls = walls
        self.sides = tuple(side for side, is_wall in ((False, bottom), (True, top)) if is_wall)
        self.n_halo = n_halo

    @classmethod
    def for_rank(
        cls, partitioner: Any, rank: int, n_halo: int, walls: Optional[Walls]
    ) -> WallFill:
        """The fill for ``rank``; refuses a rule on a partitioner that has no notion of walls."""
        if walls is None:
            walls = Walls()
        if not isinstance(walls, Walls):
            raise TypeError(
                f"walls must be a Walls (e.g. Walls(scalar='mirror', vector='free_slip')) or None, "
                f"got {walls!r}"
            )
        wall_edges = getattr(partitioner, "wall_edges", None)
        if wall_edges is None:
            if not walls.untouched:
                raise DecompositionError(
                    f"{walls!r} needs a partitioner with walls (ChannelPartitioner); "
                    f"{partitioner!r} has none: leave walls=None there"
                )
            return cls(walls, False, False, n_halo)
        edges = wall_edges(rank)
        if edges.left or edges.right:
            raise DecompositionError(f"walls along i are not supported, {partitioner!r} has them")
        return cls(walls, edges.bottom, edges.top, n_halo)

    @property
    def active(self) -> bool:
        """Whether :meth:`fill` writes anything on this rank."""
        return bool(self.sides) and not self.walls.untouched

    def fill(
        self,
        arrays: Sequence[Any],
        n_scalars: int,
        staggers: Optional[Sequence[tuple[bool, bool]]] = None,
    ) -> None:
        """Apply the rules to ``arrays``: ``n_scalars`` scalars, then ``u, v`` pairs.

        ``staggers``: per array, whether i and j are on cell interfaces (None: all
        cell-centred); only j matters here (the walls are rows of j).
        """
        if not self.active:
            return
        if staggers is None:
            staggers = [(False, False)] * len(arrays)
        rules: list[Optional[str]] = [_SCALAR_FILLS.get(self.walls.scalar)] * n_scalars
        vector = _VECTOR_FILLS.get(self.walls.vector)
        rules += [None if vector is None else vector[k % 2] for k in range(len(arrays) - n_scalars)]
        for array, how, stagger in zip(arrays, rules, staggers):
            if how is None:
                continue
            for top in self.sides:
                _fill_side(array, self.n_halo, top, how, stagger[1])
