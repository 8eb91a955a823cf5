"""Expected halos of periodic and channel domains from ``numpy.pad`` alone (no orchestra.comm code).

A global field ``(NX, NY, ...)`` padded by ``h`` cells, periodically along i,
then along j periodically (doubly periodic) or by a wall rule (channel), is
what every rank's local array (halo included) must equal on its window
``[i0 : i1 + 2h, j0 : j1 + 2h]``. The rules map onto ``numpy.pad`` modes:
``"even"`` is ``symmetric`` (ghost row k = interior row k - 1), ``"odd"`` the
same negated, ``"zero"`` a constant 0, ``"edge"`` ``edge``; untouched ghost
rows keep the sentinel.

The test model (:func:`step`) is a few elementwise numpy updates with a
stencil reaching two cells in i, j and along diagonals, so every ghost cell
the halo update fills (corners included) enters the result.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

SENTINEL = -7.0
N_HALO = 2

#: wall rule name -> (fill of a scalar) or (fill of u, fill of v); None: untouched
SCALAR_FILL = {"untouched": None, "mirror": "even", "zero": "zero", "edge": "edge"}
VECTOR_FILL = {
    "untouched": (None, None),
    "free_slip": ("even", "odd"),
    "no_slip": ("odd", "odd"),
    "zero": ("zero", "zero"),
}


def pad(field: np.ndarray, h: int, channel: bool, fill: Optional[str]) -> np.ndarray:
    """``field`` padded by ``h``: periodic in i; in j periodic, or beyond walls by ``fill``."""
    rest = [(0, 0)] * (field.ndim - 2)
    out = np.pad(field, [(h, h), (0, 0), *rest], mode="wrap")
    width = [(0, 0), (h, h), *rest]
    if not channel:
        return np.pad(out, width, mode="wrap")
    if fill is None:
        return np.pad(out, width, mode="constant", constant_values=SENTINEL)
    if fill == "zero":
        return np.pad(out, width, mode="constant", constant_values=0.0)
    if fill == "edge":
        return np.pad(out, width, mode="edge")
    out = np.pad(out, width, mode="symmetric")
    if fill == "odd":  # not negative(x, out=x): numpy 2.4 gets 64-byte strides wrong there
        out[:, :h] = np.negative(out[:, :h])
        out[:, -h:] = np.negative(out[:, -h:])
    return out


def window(padded: np.ndarray, partitioner, rank: int, n_tile: tuple[int, int], h: int) -> np.ndarray:
    """The part of a padded global field that ``rank``'s local array (halo included) holds."""
    (i0, i1), (j0, j1) = partitioner.subdomain_extent(rank, *n_tile)
    return padded[i0 : i1 + 2 * h, j0 : j1 + 2 * h]


def local(field: np.ndarray, partitioner, rank: int, h: int) -> np.ndarray:
    """``rank``'s local array: its compute domain of ``field``, a sentinel halo."""
    (i0, i1), (j0, j1) = partitioner.subdomain_extent(rank, *field.shape[:2])
    out = np.full((i1 - i0 + 2 * h, j1 - j0 + 2 * h, *field.shape[2:]), SENTINEL)
    out[h:-h, h:-h] = field[i0:i1, j0:j1]
    return out


def initial_fields(nx: int, ny: int, nz: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct, unsymmetric ``q, u, v`` on the global domain (every cell a different value)."""
    shape = (nx, ny) + ((nz,) if nz else ())
    ids = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
    q = 1.0 + np.cos(0.37 * ids) + 0.001 * ids
    u = 0.5 + 0.3 * np.sin(0.23 * ids)
    v = -0.2 + 0.4 * np.cos(0.11 * ids + 0.5)
    return q, u, v


def _shift(a: np.ndarray, h: int, di: int, dj: int) -> np.ndarray:
    return a[h + di : a.shape[0] - h + di, h + dj : a.shape[1] - h + dj]


def _tendency(a: np.ndarray, h: int) -> np.ndarray:
    c = _shift(a, h, 0, 0)
    return (
        0.11 * (_shift(a, h, 1, 0) - 2.0 * c + _shift(a, h, -1, 0))
        + 0.07 * (_shift(a, h, 0, 1) - 2.0 * c + _shift(a, h, 0, -1))
        + 0.013 * (_shift(a, h, 2, -1) - _shift(a, h, -2, 1))
        + 0.017 * (_shift(a, h, 1, 2) - _shift(a, h, -1, -2))
        + 0.005 * (_shift(a, h, 2, 2) - _shift(a, h, -2, -2))
        + 0.003 * (_shift(a, h, -1, 1) + _shift(a, h, 1, -1) - 2.0 * c)
    )


def step(q: np.ndarray, u: np.ndarray, v: np.ndarray, h: int = N_HALO) -> None:
    """One time step of the interiors of ``q, u, v`` (halos must be current); elementwise only."""
    uc, vc = _shift(u, h, 0, 0), _shift(v, h, 0, 0)
    dq_dx = 0.5 * (_shift(q, h, 1, 0) - _shift(q, h, -1, 0))
    dq_dy = 0.5 * (_shift(q, h, 0, 1) - _shift(q, h, 0, -1))
    new_q = _shift(q, h, 0, 0) + _tendency(q, h) - 0.1 * (uc * dq_dx + vc * dq_dy)
    new_u = uc + _tendency(u, h) + 0.02 * _shift(v, h, 1, 1)
    new_v = vc + _tendency(v, h) - 0.02 * _shift(u, h, -1, 1)
    _shift(q, h, 0, 0)[...] = new_q
    _shift(u, h, 0, 0)[...] = new_u
    _shift(v, h, 0, 0)[...] = new_v


def run_global(
    steps: int, q: np.ndarray, u: np.ndarray, v: np.ndarray, channel: bool, scalar: str, vector: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The model on the whole domain, halos from :func:`pad`; returns the final compute domains."""
    h = N_HALO
    fill_u, fill_v = VECTOR_FILL[vector]
    for _ in range(steps):
        qp = pad(q, h, channel, SCALAR_FILL[scalar])
        up, vp = pad(u, h, channel, fill_u), pad(v, h, channel, fill_v)
        step(qp, up, vp, h)
        q, u, v = (a[h:-h, h:-h].copy() for a in (qp, up, vp))
    return q, u, v
