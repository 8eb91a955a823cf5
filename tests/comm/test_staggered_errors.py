"""How a HaloUpdater learns a field's staggering, and the errors for fields it cannot exchange."""

from __future__ import annotations

import collections

import numpy as np
import pytest

from orchestra.comm import (
    CubedSpherePartitioner,
    DecompositionError,
    HaloUpdater,
    PeriodicTilePartitioner,
    TilePartitioner,
)

from .staggered_reference import STAGGERS, initial
from .test_staggered_halo import DOMAINS, loopback_exchange
from .test_vector_interface import Loopback

CUBE = CubedSpherePartitioner(TilePartitioner((1, 1)))


def updater(partitioner, h=2, **kwargs) -> HaloUpdater:
    mailbox: dict = collections.defaultdict(collections.deque)
    return HaloUpdater(Loopback(partitioner, 0, mailbox), h, **kwargs)


def field(nx, ny, h, stagger, nz=0):
    shape = (nx + stagger[0] + 2 * h, ny + stagger[1] + 2 * h) + ((nz,) if nz else ())
    return np.zeros(shape)


class QuantityLike:
    """NDSL's Quantity as far as a halo update looks: ``.data`` and ``.dims``."""

    def __init__(self, data: np.ndarray, dims: tuple) -> None:
        self.data, self.dims = data, dims


def test_staggered_arrays_without_domain_are_refused_with_the_way_out():
    halo = updater(CUBE)
    u, v = field(4, 4, 2, (False, True)), field(4, 4, 2, (True, False))
    with pytest.raises(DecompositionError, match=r"differ in shape.*domain=\(nx, ny\)"):
        halo.update_vector(u, v)
    with pytest.raises(DecompositionError, match=r"cube tiles are square.*8 x 9.*domain="):
        halo.update(field(8, 8, 2, (False, True)))
    tile = updater(TilePartitioner((1, 1)))
    with pytest.raises(DecompositionError, match=r"different compute domains.*domain="):
        tile.update(field(4, 4, 2, (False, False)), field(4, 4, 2, (True, True)))
    tile.update(field(4, 4, 2, (False, False)), field(4, 4, 2, (False, False)))  # cells: as before


def test_shapes_that_fit_neither_cells_nor_interfaces_name_the_expected_sizes():
    halo = updater(CUBE, domain=(4, 4))
    expected = r"scalar 0 has shape \(10, 8\).*8 \(cells\) or 9 \(interfaces\) along i"
    with pytest.raises(DecompositionError, match=expected):
        halo.update(np.zeros((10, 8)))
    with pytest.raises(DecompositionError, match="vector pair 0 v has shape"):
        halo.update_vector(field(4, 4, 2, (False, True)), np.zeros((9, 7)))


def test_fields_that_change_shape_across_quarter_turns_are_refused_on_the_cube():
    halo = updater(CUBE, domain=(4, 4))
    with pytest.raises(DecompositionError, match=r"scalar on \[i cell, j interface\].*vector pair"):
        halo.update(field(4, 4, 2, (False, True)))
    same = field(4, 4, 2, (False, True))
    with pytest.raises(DecompositionError, match=r"v must be on \[i interface, j cell\]"):
        halo.update_vector(same, same.copy())
    periodic = updater(PeriodicTilePartitioner((1, 1)), domain=(4, 4))
    periodic.update(field(4, 4, 2, (False, True)))  # nothing turns on a periodic tile
    periodic.update_vector(same, same.copy())


def test_domain_dims_and_dtypes_are_checked():
    for bad in [(0, 4), (4,), "44", (True, 4), (4.5, 4)]:
        with pytest.raises(DecompositionError, match="domain must be"):
            updater(CUBE, domain=bad)
    halo = updater(CUBE, domain=(4, 4))
    wrong = QuantityLike(field(4, 4, 2, (False, True)), ("i_interface", "j"))
    with pytest.raises(DecompositionError, match=r"dims \('i_interface', 'j'\).*shape \(8, 9\)"):
        halo.update_vector(wrong, QuantityLike(field(4, 4, 2, (True, False)), ("i_interface", "j")))
    transposed = QuantityLike(field(4, 4, 2, (False, False)), ("j", "i"))
    with pytest.raises(DecompositionError, match="i .* first"):
        halo.update(transposed)
    with pytest.raises(DecompositionError, match="differ in dtype"):
        u, v = field(4, 4, 2, (False, True)), field(4, 4, 2, (True, False))
        halo.update_vector(u, v.astype(np.float32))


@pytest.mark.parametrize(
    "spelling", [("i", "j_interface", "i_interface", "j"), ("x", "y_interface", "x_interface", "y")]
)
def test_quantity_dims_tell_the_staggering_without_domain(spelling):
    """NDSL's dims (current and older names), exchanged with an updater given no domain,
    give what plain arrays give with domain=."""
    d = DOMAINS["cube-2x2"]()
    ranks = range(d.partitioner.total_ranks)
    plain = [{n: initial(d, r, n, 2) for n in ("u", "v", "corner")} for r in ranks]
    loopback_exchange(d, plain, ["corner"], [("u", "v")])
    mailbox: dict = collections.defaultdict(collections.deque)
    quantities = []
    for r in ranks:
        halo = HaloUpdater(Loopback(d.partitioner, r, mailbox), d.h)
        u = QuantityLike(initial(d, r, "u", 2), (spelling[0], spelling[1], "k"))
        v = QuantityLike(initial(d, r, "v", 2), (spelling[2], spelling[3], "k"))
        corner = QuantityLike(initial(d, r, "corner", 2), (spelling[2], spelling[1], "k"))
        halo.start_fields([corner], [(u, v)])
        quantities.append((halo, {"u": u.data, "v": v.data, "corner": corner.data}))
    for halo, _ in quantities:
        halo.wait()
    for (_, got), want in zip(quantities, plain):
        for name in got:
            assert np.array_equal(got[name], want[name]), name
    assert STAGGERS["u"] == (False, True)
