"""Wall rules without MPI: every ghost cell against a padded global field, and the updater's hook.

The plans of all ranks are applied in one process (as MPI would), then each
rank's :class:`WallFill`; the result must equal, cell for cell (corners
included), a global field padded periodically in i and by the rule in j.
A single-rank :class:`HaloUpdater` runs over a stand-in communicator that
delivers messages to itself, so the hook in ``wait`` is checked too.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from orchestra.comm import (
    ChannelPartitioner,
    DecompositionError,
    HaloUpdater,
    PeriodicTilePartitioner,
    TilePartitioner,
    Walls,
    walls as walls_module,
)
from orchestra.comm.walls import SCALAR_RULES, VECTOR_RULES, WallFill

from .periodic_reference import SCALAR_FILL, SENTINEL, VECTOR_FILL, local, pad, window
from .test_periodic_partitioner import apply_plans

RULES = list(itertools.product(SCALAR_RULES, VECTOR_RULES))


def global_fields(n_tile, nz):
    shape = n_tile + ((nz,) if nz else ())
    ids = np.arange(np.prod(shape), dtype=np.float64).reshape(shape) + 1
    return ids, 2 * ids + 0.5, -ids - 0.25  # q, u, v: all different


@pytest.mark.parametrize("scalar,vector", RULES)
@pytest.mark.parametrize("layout,h,nz", [((1, 1), 2, 0), ((2, 3), 1, 2), ((3, 2), 2, 0), ((1, 2), 3, 1)])
def test_wall_rules_fill_like_a_padded_global_field(scalar, vector, layout, h, nz):
    p, nx, ny = ChannelPartitioner(layout), 3, 4
    n_tile = (nx * layout[0], ny * layout[1])
    fields = global_fields(n_tile, nz)
    per_rank = [[local(f, p, r, h) for f in fields] for r in range(p.total_ranks)]
    for which in range(3):
        apply_plans(p, [arrays[which] for arrays in per_rank], nx, ny, h)
    walls = Walls(scalar, vector)
    for rank, arrays in enumerate(per_rank):
        WallFill.for_rank(p, rank, h, walls).fill(arrays, 1)
    fills = (SCALAR_FILL[scalar], *VECTOR_FILL[vector])
    for which, (field, fill) in enumerate(zip(fields, fills)):
        expected = pad(field, h, True, fill)
        for rank, arrays in enumerate(per_rank):
            np.testing.assert_array_equal(
                arrays[which], window(expected, p, rank, n_tile, h), err_msg=f"array {which} rank {rank}"
            )


def test_mirror_corner_by_hand():
    """One rank, n_halo 2, a 3 x 2 channel: ghost (i, -k) is interior (i mod 3, k - 1)."""
    p, h = ChannelPartitioner((1, 1)), 2
    field = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    a = local(field, p, 0, h)
    apply_plans(p, [a], 3, 2, h)
    WallFill.for_rank(p, 0, h, Walls(scalar="mirror")).fill([a], 1)
    assert a[0, 0] == field[1, 1]  # i = -2 -> 1, j = -2 -> row 1
    assert a[1, 1] == field[2, 0]  # i = -1 -> 2, j = -1 -> row 0
    assert a[6, 5] == field[1, 0] and a[5, 4] == field[0, 1]  # top-right corner: i = 4 -> 1, i = 3 -> 0


def test_negation_is_a_bitwise_sign_flip():
    p, h = ChannelPartitioner((1, 1)), 1
    u = local(np.array([[0.0, 1.5], [np.nan, -0.0]]), p, 0, h)
    v = u.copy()
    WallFill.for_rank(p, 0, h, Walls(vector="free_slip")).fill([u, v], 0)
    assert np.signbit(v[1, 0]) and v[1, 0] == 0.0  # -(+0.0) is -0.0
    assert not np.signbit(v[2, 3]) and v[2, 3] == 0.0  # -(-0.0) is +0.0
    assert np.isnan(v[2, 0]) and np.signbit(v[2, 0]) != np.signbit(np.nan)
    assert u[1, 0] == 0.0 and not np.signbit(u[1, 0])  # u is mirrored, not negated


class SelfComm:
    """One rank that delivers its messages to itself (what ``MPI.COMM_SELF`` does)."""

    rank = 0

    def __init__(self, partitioner):
        self.partitioner = partitioner
        self.mail = {}
        self.tags = []

    def duplicate(self):
        return SelfComm(self.partitioner)

    def isend(self, buffer, dest, tag):
        assert dest == 0 and tag not in self.mail
        self.mail[tag] = np.array(buffer, copy=True)
        self.tags.append(tag)

    def irecv(self, buffer, source, tag):
        assert source == 0
        return buffer, tag

    def waitall(self, requests):
        for request in requests:
            if request is not None:
                buffer, tag = request
                buffer[...] = self.mail.pop(tag)

    def wait_received(self, requests):
        self.waitall(requests)
        return [request[0].nbytes for request in requests]


@pytest.mark.parametrize("kind", [PeriodicTilePartitioner, ChannelPartitioner])
def test_single_rank_updater_applies_the_rule_in_wait(kind):
    p, h, n_tile = kind((1, 1)), 2, (5, 4)
    channel = kind is ChannelPartitioner
    q, u, v = (local(f, p, 0, h) for f in global_fields(n_tile, 2))
    walls = Walls("edge", "no_slip") if channel else None
    halo = HaloUpdater(SelfComm(p), h, walls=walls)
    halo.start_fields([q], [(u, v)])
    assert (q[:, :h] == SENTINEL).all()  # nothing happens before wait
    halo.wait()
    assert sorted(halo.communicator.tags) == ([0, 1] if channel else list(range(8)))
    fills = ("edge", "odd", "odd") if channel else (None, None, None)
    for array, field, fill in zip((q, u, v), global_fields(n_tile, 2), fills):
        np.testing.assert_array_equal(array, window(pad(field, h, channel, fill), p, 0, n_tile, h))
    q2 = local(global_fields(n_tile, 2)[0], p, 0, h)
    halo.update(q2)  # update == start + wait, rule included
    np.testing.assert_array_equal(q2, q)


def test_walls_arguments_are_checked():
    with pytest.raises(ValueError, match="unknown scalar wall rule 'reflect': choose one of 'untouched', 'mirror'"):
        Walls(scalar="reflect")
    with pytest.raises(ValueError, match="unknown vector wall rule 'mirror'.*'free_slip'"):
        Walls(vector="mirror")
    with pytest.raises(TypeError, match=r"walls must be a Walls \(e.g. Walls\(scalar='mirror'"):
        HaloUpdater(SelfComm(ChannelPartitioner((1, 1))), 1, walls="mirror")
    with pytest.raises(DecompositionError, match="needs a partitioner with walls.*TilePartitioner"):
        HaloUpdater(SelfComm(TilePartitioner((1, 1))), 1, walls=Walls(scalar="zero"))
    # No rule, or a rule on a domain without walls, is fine and writes nothing.
    HaloUpdater(SelfComm(TilePartitioner((1, 1))), 1, walls=Walls())
    fill = WallFill.for_rank(PeriodicTilePartitioner((1, 1)), 0, 1, Walls("zero", "zero"))
    assert not fill.active
    assert not WallFill.for_rank(ChannelPartitioner((1, 3)), 1, 1, Walls("zero")).active
    assert WallFill.for_rank(ChannelPartitioner((1, 3)), 2, 1, Walls("zero")).sides == (True,)
    assert walls_module.Walls is Walls


@pytest.mark.parametrize("h", [1, 2])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_odd_rule_on_rows_of_eight_cells(h, dtype):
    """Rows of 8 cells (64-byte strides of float64, where numpy 2.4.6's negative(x, out=y)
    misreads x for separate arrays): the odd rule is still exact."""
    p = ChannelPartitioner((1, 1))
    field = (np.arange(5 * (8 - 2 * h)) + 1.0).reshape(5, 8 - 2 * h).astype(dtype)
    v = local(field, p, 0, h).astype(dtype)
    assert v.strides[0] == 8 * v.itemsize
    WallFill.for_rank(p, 0, h, Walls(vector="no_slip")).fill([v.copy(), v], 0)
    expected = pad(field, h, True, "odd")
    np.testing.assert_array_equal(v[h:-h], expected[h:-h])
