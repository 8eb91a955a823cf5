"""Which horizontal axes of a field lie on cell interfaces, and which fields an exchange accepts.

A local field ``[i, j, ...]`` is cell-centred along an axis (``n + 2 n_halo``
points, ``n`` the rank's compute domain in cells) or on the interfaces
between cells (``n + 1 + 2 n_halo`` points: both edges of the compute domain
belong to it). A :data:`Stagger` says which: ``(i on interfaces, j on
interfaces)``. FV3's fields: cell-centred ``(False, False)``; D-grid ``u`` and
C-grid ``vc`` ``(False, True)``; D-grid ``v`` and C-grid ``uc``
``(True, False)``; corner fields such as ``divgd`` ``(True, True)``.

Plain arrays cannot tell their staggering (a ``(15, 16)`` array with
``n_halo=3`` may be 9 x 10 cells or 9 x 9 cells with j on interfaces), so a
:class:`~orchestra.comm.halo.HaloUpdater` learns it from

* ``domain=(nx, ny)``, the rank's compute domain in cells: each axis's length
  is then ``n + 2 n_halo`` (cells) or ``n + 1 + 2 n_halo`` (interfaces), and
  any other length is refused; or
* the ``dims`` of a Quantity-like object (NDSL's names ``i``/``i_interface``,
  ``j``/``j_interface``, or the older ``x``/``x_interface``,
  ``y``/``y_interface``), i first, then j;
* otherwise (plain arrays, no ``domain``) every array is cell-centred, as
  before staggering was supported.

Across a cube edge turned by an odd number of quarter turns an i-interface
becomes a j-interface. A scalar staggered along one axis only would change
its shape there, so it is refused on such partitioners (exchange it as a
vector pair with its partner); a vector pair ``(u, v)`` passes when ``v``'s
staggering is ``u``'s with the axes swapped (``u`` on ``[i cell, j interface]``
with ``v`` on ``[i interface, j cell]``, and the C-grid pair the other way).
"""

from __future__ import annotations

import functools
from typing import Any, Optional, Sequence

from orchestra.comm.errors import DecompositionError

#: (i on interfaces, j on interfaces)
Stagger = tuple[bool, bool]
CELLS: Stagger = (False, False)

#: Dimension names per axis: (cell names, interface names).
_I_NAMES = (("i", "x"), ("i_interface", "x_interface"))
_J_NAMES = (("j", "y"), ("j_interface", "y_interface"))


def transposed(stagger: Stagger) -> Stagger:
    """The staggering seen from axes turned by an odd number of quarter turns."""
    return stagger[1], stagger[0]


def describe(stagger: Stagger) -> str:
    """``[i cell, j interface]`` and the like, for messages."""
    names = ("cell", "interface")
    return f"[i {names[stagger[0]]}, j {names[stagger[1]]}]"


def _axis(name: Any, names: tuple[tuple[str, ...], tuple[str, ...]]) -> Optional[bool]:
    for interface, spellings in enumerate(names):
        if name in spellings:
            return bool(interface)
    return None


def dims_stagger(obj: Any, label: str) -> Optional[Stagger]:
    """The staggering an object's ``dims`` state (None when it has none, or not as strings)."""
    dims = getattr(obj, "dims", None)
    if dims is None or len(dims) < 2 or not all(isinstance(d, str) for d in dims[:2]):
        return None
    i_axis, j_axis = _axis(dims[0], _I_NAMES), _axis(dims[1], _J_NAMES)
    if i_axis is None or j_axis is None:
        raise DecompositionError(
            f"{label} has dims {tuple(dims)}; a halo update needs [i, j, ...] arrays with i "
            f"('i' or 'i_interface') first and j ('j' or 'j_interface') second; transpose it"
        )
    return i_axis, j_axis


def _from_domain(shape: tuple[int, ...], n_halo: int, domain: tuple[int, int], label: str) -> Stagger:
    found = []
    for axis, n in enumerate(domain):
        extra = shape[axis] - 2 * n_halo - n
        if extra not in (0, 1):
            names = "ij"
            expected = " and ".join(
                f"{m + 2 * n_halo} (cells) or {m + 1 + 2 * n_halo} (interfaces) along {names[a]}"
                for a, m in enumerate(domain)
            )
            raise DecompositionError(
                f"{label} has shape {tuple(shape)}, but with domain={tuple(domain)} cells and "
                f"n_halo={n_halo} a field [i, j, ...] has {expected}; pass this rank's compute "
                f"domain plus its halo, or correct domain="
            )
        found.append(extra == 1)
    return found[0], found[1]


def field_stagger(
    obj: Any, shape: tuple[int, ...], n_halo: int, domain: Optional[tuple[int, int]], label: str
) -> tuple[Stagger, tuple[int, int]]:
    """``(stagger, (nx, ny))`` of one field (see the module docstring for the rules)."""
    named = dims_stagger(obj, label)
    if domain is not None:
        stagger = _from_domain(shape, n_halo, domain, label)
        if named is not None and named != stagger:
            raise DecompositionError(
                f"{label} has dims {tuple(obj.dims)} ({describe(named)}) but its shape "
                f"{tuple(shape)} is {describe(stagger)} for domain={tuple(domain)} and "
                f"n_halo={n_halo}; fix the dims or the array"
            )
        return stagger, (int(domain[0]), int(domain[1]))
    stagger = CELLS if named is None else named
    return stagger, (shape[0] - 2 * n_halo - stagger[0], shape[1] - 2 * n_halo - stagger[1])


@functools.lru_cache(maxsize=64)
def turns_odd(partitioner: Any) -> bool:
    """Whether any rank has a neighbour turned by an odd number of quarter turns (the cube)."""
    return any(
        neighbour.rotations % 2
        for rank in range(partitioner.total_ranks)
        for neighbour in partitioner.neighbours(rank).values()
        if neighbour.rank is not None
    )


def check_turnable(
    partitioner: Any, staggers: Sequence[Stagger], n_scalars: int
) -> None:
    """Refuse fields whose staggering would change shape across an odd number of quarter turns."""
    lopsided = [s for s in staggers[:n_scalars] if s[0] != s[1]]
    pairs = list(zip(staggers[n_scalars::2], staggers[n_scalars + 1 :: 2]))
    unpaired = [(u, v) for u, v in pairs if v != transposed(u)]
    if not (lopsided or unpaired) or not turns_odd(partitioner):
        return
    if lopsided:
        raise DecompositionError(
            f"a scalar on {describe(lopsided[0])} cannot be exchanged on {partitioner!r}: across "
            f"cube edges turned by a quarter turn an i-interface becomes a j-interface, so the "
            f"neighbour's points are on {describe(transposed(lopsided[0]))}; exchange it as a "
            f"vector pair with its partner (update_vector(u, v))"
        )
    u, v = unpaired[0]
    raise DecompositionError(
        f"vector pair with u on {describe(u)} and v on {describe(v)} cannot be exchanged on "
        f"{partitioner!r}: across quarter-turned cube edges u is filled from the neighbour's v, so "
        f"v must be on {describe(transposed(u))} (D grid: u [i cell, j interface], v [i interface, "
        f"j cell]; C grid: the other way round)"
    )


def looks_staggered(a: Sequence[int], b: Sequence[int]) -> bool:
    """Whether two horizontal sizes differ by at most one point along each axis."""
    return tuple(a) != tuple(b) and all(abs(x - y) <= 1 for x, y in zip(a, b))


DOMAIN_HINT = (
    "if a field is staggered (on cell interfaces), give the updater the compute domain in "
    "cells: HaloUpdater(comm, n_halo, domain=(nx, ny)) or comm.halo_updater(n_halo, "
    "domain=(nx, ny))"
)


def _labels(n_fields: int, n_scalars: int) -> list[str]:
    pairs = [f"vector pair {k // 2} {'uv'[k % 2]}" for k in range(n_fields - n_scalars)]
    return [f"scalar {k}" for k in range(n_scalars)] + pairs


def _check_pairs(
    objects: Sequence[Any], arrays: Sequence[Any], n_scalars: int, has_domain: bool
) -> None:
    u_objects, v_objects = objects[n_scalars::2], objects[n_scalars + 1 :: 2]
    pairs = zip(u_objects, v_objects, arrays[n_scalars::2], arrays[n_scalars + 1 :: 2])
    for u_obj, v_obj, u, v in pairs:
        named = dims_stagger(u_obj, "u") is not None and dims_stagger(v_obj, "v") is not None
        told = has_domain or named
        hint = "" if told or not looks_staggered(u.shape[:2], v.shape[:2]) else f"; {DOMAIN_HINT}"
        if u.shape[2:] != v.shape[2:] or (not told and u.shape != v.shape):
            raise DecompositionError(
                f"vector components differ in shape: {tuple(u.shape)} and {tuple(v.shape)}{hint}"
            )
        if u.dtype != v.dtype:
            raise DecompositionError(
                f"vector components differ in dtype: {u.dtype} and {v.dtype}; cast one of them"
            )


def _check_domains(
    fields: Sequence[tuple[Stagger, tuple[int, int]]],
    arrays: Sequence[Any],
    partitioner: Any,
    has_domain: bool,
) -> None:
    domains = [d for _, d in fields]
    hint = "" if has_domain else f"; {DOMAIN_HINT}"
    if any(looks_staggered(domains[0], d) for d in domains):
        shapes = ", ".join(str(tuple(a.shape)) for a in arrays)
        raise DecompositionError(
            f"the fields of one halo update leave different compute domains ({shapes}) with "
            f"the same n_halo{hint}"
        )
    if getattr(partitioner, "n_tiles", 1) == 6:
        for (_, (nx, ny)), array in zip(fields, arrays):
            if nx != ny:
                raise DecompositionError(
                    f"cube tiles are square, but an array of shape {tuple(array.shape)} leaves a "
                    f"{nx} x {ny} compute domain{hint}"
                )


def exchange_fields(
    objects: Sequence[Any],
    arrays: Sequence[Any],
    n_scalars: int,
    n_halo: int,
    domain: Optional[tuple[int, int]],
    partitioner: Any,
) -> list[tuple[Stagger, tuple[int, int]]]:
    """Each array's ``(stagger, (nx, ny))`` for one exchange: ``n_scalars`` scalars, then
    ``(u, v)`` pairs; refuses what the exchange cannot do, saying how to fix it."""
    labels = _labels(len(arrays), n_scalars)
    _check_pairs(objects, arrays, n_scalars, domain is not None)
    fields = [
        field_stagger(o, tuple(a.shape), n_halo, domain, label)
        for o, a, label in zip(objects, arrays, labels)
    ]
    _check_domains(fields, arrays, partitioner, domain is not None)
    check_turnable(partitioner, [s for s, _ in fields], n_scalars)
    return fields
