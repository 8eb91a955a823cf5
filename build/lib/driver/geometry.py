"""Vector geometry on the unit sphere, written so that equal inputs give bit-equal outputs.

Several ranks compute the same point, face or cell from different tile frames
(a halo cell is a neighbour tile's cell). The functions here avoid order
dependent round-off where that matters: norms and dot products sum the x, y,
z components in that fixed order, and :func:`gnomonic_points` builds each
point from one term per component (tile axes are signed coordinate axes).
Arrays hold vectors in their last axis.
"""

from __future__ import annotations

import numpy as np


def dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a . b`` over the last axis, summed x, y, z in that order."""
    return a[..., 0] * b[..., 0] + a[..., 1] * b[..., 1] + a[..., 2] * b[..., 2]


def norm(a: np.ndarray) -> np.ndarray:
    """Euclidean length over the last axis."""
    return np.sqrt(dot(a, a))


def normalize(a: np.ndarray) -> np.ndarray:
    """``a / |a|`` over the last axis."""
    return a / norm(a)[..., None]


def cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a x b`` over the last axis (exactly antisymmetric in floating point)."""
    return np.stack(
        (
            a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1],
            a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2],
            a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0],
        ),
        axis=-1,
    )


def arc_angle(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Great-circle angle between unit vectors ``p`` and ``q`` (accurate for small angles)."""
    return 2.0 * np.arcsin(np.minimum(1.0, 0.5 * norm(p - q)))


def triangle_area(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Area of the spherical triangle ``a, b, c`` on the unit sphere (its angle excess).

    Uses ``tan(E/2) = |a.(b x c)| / (1 + a.b + b.c + c.a)`` (Van Oosterom and
    Strackee 1983), which stays accurate for small triangles.
    """
    numerator = np.abs(dot(a, cross(b, c)))
    denominator = 1.0 + dot(a, b) + dot(b, c) + dot(c, a)
    return 2.0 * np.arctan2(numerator, denominator)


def gnomonic_points(
    centre: np.ndarray, axis1: np.ndarray, axis2: np.ndarray, tan1: np.ndarray, tan2: np.ndarray
) -> np.ndarray:
    """``normalize(centre + tan1 axis1 + tan2 axis2)`` for signed coordinate-axis frames.

    Each component of the sum has exactly one non-zero term and the norm is
    ``sqrt(1 + (tan1**2 + tan2**2))``, symmetric in the two tangents, so a
    point computed from any tile frame that sees it is bit-identical.
    """
    vector = centre + tan1[..., None] * axis1 + tan2[..., None] * axis2
    length = np.sqrt(1.0 + (tan1 * tan1 + tan2 * tan2))
    return vector / length[..., None]


def lon_lat(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Longitude in [0, 2 pi) and latitude in [-pi/2, pi/2] of unit vectors."""
    lon = np.mod(np.arctan2(p[..., 1], p[..., 0]), 2.0 * np.pi)
    lat = np.arcsin(np.clip(p[..., 2], -1.0, 1.0))
    return lon, lat


def from_lon_lat(lon: np.ndarray, lat: np.ndarray) -> np.ndarray:
    """Unit vectors of longitude/latitude points."""
    return np.stack((np.cos(lat) * np.cos(lon), np.cos(lat) * np.sin(lon), np.sin(lat)), axis=-1)


def east_north(lon: np.ndarray, lat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Local unit vectors pointing east and north."""
    east = np.stack((-np.sin(lon), np.cos(lon), np.zeros_like(lon)), axis=-1)
    north = np.stack((-np.sin(lat) * np.cos(lon), -np.sin(lat) * np.sin(lon), np.cos(lat)), axis=-1)
    return east, north


def rotate(p: np.ndarray, axis: np.ndarray, angle: float) -> np.ndarray:
    """Rotate vectors ``p`` by ``angle`` (right hand) about the unit vector ``axis`` (Rodrigues)."""
    axis = np.broadcast_to(axis, p.shape)
    cos, sin = np.cos(angle), np.sin(angle)
    return p * cos + cross(axis, p) * sin + axis * (dot(axis, p) * (1.0 - cos))[..., None]
