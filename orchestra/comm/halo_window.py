"""Partial halo updates: the part of a field that a halo update of ``n_halo`` layers works on.

A field may carry more ghost layers than one update fills: FV3 keeps three
and updates some fields by two (NDSL's ``quantity.halo_spec(2)``). As in
NDSL, such an update fills the ``n_halo`` layers next to the compute domain
(edge strips and corner squares ``n_halo`` wide) and leaves the layers beyond
untouched. :func:`halo_window` gives the view of a field that holds its
compute domain and exactly ``n_halo`` layers around it; the update then
exchanges that view as it exchanges any field of ``n_halo`` ghost layers.

Where a field's layers are known:

* a Quantity-like object (``.data`` with ``origin`` and ``extent``, NDSL's
  ``Quantity``) says where its compute domain starts and how many points it
  has along i and j (both edge points of an interface axis included);
* a plain array with the updater's ``domain=(nx, ny)``: along each axis,
  ``n + 2 h`` points are cells and ``n + 1 + 2 h`` interfaces with ``h``
  ghost layers, ``h`` the same along both axes;
* a plain array without ``domain``: it has ``n_halo`` layers (as before).

A field with fewer layers than ``n_halo`` is refused, naming both.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from orchestra.comm.errors import DecompositionError

#: (first compute point, compute points) along i and along j
Bounds = tuple[tuple[int, int], tuple[int, int]]


def _ints(values: Any) -> Optional[tuple[int, ...]]:
    try:
        return tuple(int(v) for v in values)
    except (TypeError, ValueError):
        return None


def _quantity_bounds(obj: Any, array: Any) -> Optional[Bounds]:
    """A Quantity-like's compute domain along i and j from ``origin`` and ``extent``."""
    if obj is array:
        return None
    origin, extent = _ints(getattr(obj, "origin", None)), _ints(getattr(obj, "extent", None))
    if origin is None or extent is None or len(origin) < 2 or len(extent) < 2:
        return None
    return (origin[0], extent[0]), (origin[1], extent[1])


def _domain_bounds(shape: Sequence[int], domain: Optional[tuple[int, int]]) -> Optional[Bounds]:
    """A plain array's compute domain along i and j given the rank's domain in cells."""
    if domain is None:
        return None
    bounds = []
    for size, n in zip(shape[:2], domain):
        extra = int(size) - int(n)
        if extra < 0:
            return None  # the stagger check names what is wrong
        stagger = extra % 2
        bounds.append(((extra - stagger) // 2, int(n) + stagger))
    if bounds[0][0] != bounds[1][0]:
        return None  # as many layers along i as along j, or the stagger check names the sizes
    return bounds[0], bounds[1]


def halo_window(obj: Any, array: Any, n_halo: int, domain: Optional[tuple[int, int]], label: str) -> Any:
    """``array`` (the field ``obj`` holds) cut to its compute domain and ``n_halo`` layers around it.

    ``array`` itself when it has exactly ``n_halo`` layers or its layers are not known (see
    the module docstring); a view of it (same memory) when it has more.
    """
    shape = tuple(getattr(array, "shape", ()))
    if len(shape) < 2:
        return array
    bounds = _quantity_bounds(obj, array) or _domain_bounds(shape, domain)
    if bounds is None:
        return array
    cut = []
    for axis, (first, points) in enumerate(bounds):
        after = shape[axis] - first - points
        if min(first, after) < n_halo:
            raise DecompositionError(
                f"{label} has {min(first, after)} ghost layer(s) along {'ij'[axis]} (shape "
                f"{shape}, compute domain from {first}, {points} points), fewer than the "
                f"n_halo={n_halo} layers the halo update fills; allocate it with at least "
                f"{n_halo} or update fewer layers"
            )
        cut.append(slice(first - n_halo, first + points + n_halo))
    if all(s.start == 0 and s.stop == size for s, size in zip(cut, shape)):
        return array
    return array[tuple(cut)]
