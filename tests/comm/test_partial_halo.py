"""Partial halo updates: fields with more ghost layers than the updater fills (NDSL's ``halo_spec(2)``).

FV3 keeps three ghost layers and updates some fields by two. Such an update
must fill the two layers next to the compute domain exactly as a two-layer
update of two-layer fields does, and leave the third untouched. Without MPI:
every rank's updater runs in one process over a loopback communicator.
"""

from __future__ import annotations

import collections
import dataclasses

import numpy as np
import pytest

from orchestra.comm import DecompositionError, HaloUpdater

from .staggered_reference import SENTINEL, STAGGERS, initial
from .test_staggered_halo import DOMAINS, PAIRS, loopback_exchange, scalars_of
from .test_vector_interface import Loopback

_DIMS = {False: ("x", "y"), True: ("x_interface", "y_interface")}


class Quantity:
    """NDSL's Quantity as a halo update sees it: data, dims, origin and extent (interface points included)."""

    def __init__(self, data: np.ndarray, name: str, h: int, nx: int, ny: int) -> None:
        si, sj = STAGGERS[name]
        self.data, self.origin, self.extent = data, (h, h), (nx + si, ny + sj)
        self.dims = (_DIMS[si][0], _DIMS[sj][1])


def _deeper(d, extra: int):
    return dataclasses.replace(d, h=d.h + extra)


def _two_layer_reference(d, names):
    """The fields after a full update with ``d.h`` layers."""
    ranks = range(d.partitioner.total_ranks)
    fields = [{n: initial(d, r, n) for n in names} for r in ranks]
    loopback_exchange(d, fields, scalars_of(d), PAIRS)
    return fields


def _check_inner_layers_and_outer_ring(deep, reference, extra: int, before) -> None:
    inner = (slice(extra, -extra), slice(extra, -extra))
    for r, (got, want) in enumerate(zip(deep, reference)):
        for name, array in got.items():
            assert np.array_equal(array[inner], want[name]), (r, name)
            ring = np.ones(array.shape, bool)
            ring[inner] = False
            assert np.array_equal(array[ring], before[r][name][ring]), (r, name)
            assert (array[ring] == SENTINEL).all(), (r, name)


@pytest.mark.parametrize("name", ["cube-1x1", "cube-2x2", "periodic-2x2", "channel-2x2"])
def test_plain_arrays_with_a_domain_get_the_inner_layers_only(name):
    d = DOMAINS[name]()
    deep_domain = _deeper(d, 1)
    reference = _two_layer_reference(d, STAGGERS)
    ranks = range(d.partitioner.total_ranks)
    deep = [{n: initial(deep_domain, r, n) for n in STAGGERS} for r in ranks]
    before = [{n: a.copy() for n, a in f.items()} for f in deep]
    loopback_exchange(d, deep, scalars_of(d), PAIRS)  # updaters of d.h layers, domain=(nx, ny)
    _check_inner_layers_and_outer_ring(deep, reference, 1, before)


@pytest.mark.parametrize("name", ["cube-1x1", "periodic-2x2"])
def test_quantities_say_their_layers_by_origin_and_extent(name):
    d = DOMAINS[name]()
    extra = 2
    deep_domain = _deeper(d, extra)
    reference = _two_layer_reference(d, STAGGERS)
    ranks = range(d.partitioner.total_ranks)
    deep = [{n: initial(deep_domain, r, n) for n in STAGGERS} for r in ranks]
    before = [{n: a.copy() for n, a in f.items()} for f in deep]
    mailbox: dict = collections.defaultdict(collections.deque)
    for r in ranks:  # no domain=: the quantities' origin, extent and dims say it all
        q = {n: Quantity(a, n, deep_domain.h, d.nx, d.ny) for n, a in deep[r].items()}
        updater = HaloUpdater(Loopback(d.partitioner, r, mailbox), d.h)
        updater.start_fields([q[n] for n in scalars_of(d)], [(q[a], q[b]) for a, b in PAIRS])
        deep[r]["_updater"] = updater
    for f in deep:
        f.pop("_updater").wait()
    assert not any(mailbox.values())
    _check_inner_layers_and_outer_ring(deep, reference, extra, before)


def test_a_field_with_fewer_layers_than_the_update_is_refused_naming_both():
    d = DOMAINS["periodic-2x2"]()
    thin = dataclasses.replace(d, h=d.h - 1)
    mailbox: dict = collections.defaultdict(collections.deque)
    updater = HaloUpdater(Loopback(d.partitioner, 0, mailbox), d.h)
    q = Quantity(initial(thin, 0, "q"), "q", thin.h, d.nx, d.ny)
    with pytest.raises(DecompositionError, match=r"1 ghost layer\(s\) along i .*fewer than the n_halo=2"):
        updater.update(q)
