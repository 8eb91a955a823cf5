"""A small NDSL-like layer on orchestra's public API, as an NDSL user's model would see it.

Written for these tests in our own words (not NDSL's code): a ``Quantity``
container (DaCe's array protocol only: ``__descriptor__``,
``__array_interface__``, ``shape``; no ``dtype``, no ``strides``, as in the
NDSL versions models run on), a ``StencilFactory`` handing out frozen
stencils by origin and domain, a ``WrappedHaloUpdater`` whose
``dace_inhibitor`` methods look quantities up by name in a captured state, and
the grid indexing models read their bounds from.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Mapping, Optional, Sequence

import numpy as np

from orchestra import DaceConfig, FrozenStencil, dace_inhibitor

HALO = 3


class Quantity:
    """An array with dimensions and a compute-domain origin; reaches DaCe through its array protocol."""

    def __init__(self, data: Any, dims: Sequence[str], origin: Sequence[int], extent: Sequence[int]) -> None:
        self._data = data
        self.dims, self.origin, self.extent = tuple(dims), tuple(origin), tuple(extent)

    def __descriptor__(self) -> Any:
        import dace

        return dace.data.create_datadescriptor(self._data)

    @property
    def __array_interface__(self) -> dict:
        return self._data.__array_interface__

    @property
    def shape(self) -> tuple:
        return self._data.shape

    @property
    def data(self) -> Any:
        return self._data

    @property
    def field(self) -> Any:
        """The compute domain, without halo points."""
        return self._data[tuple(slice(o, o + e) for o, e in zip(self.origin, self.extent))]

    def __getitem__(self, index: Any) -> Any:
        return self._data[index]

    def __setitem__(self, index: Any, value: Any) -> None:
        self._data[index] = value


@dataclasses.dataclass(frozen=True)
class GridIndexing:
    """Compute-domain bounds of one rank: ``nx`` x ``ny`` columns of ``nz`` levels, ``n_halo`` halo points."""

    nx: int
    ny: int
    nz: int
    n_halo: int = HALO

    @property
    def isc(self) -> int:
        return self.n_halo

    @property
    def jsc(self) -> int:
        return self.n_halo

    def origin_compute(self, add: Sequence[int] = (0, 0, 0)) -> tuple[int, int, int]:
        return (self.isc - add[0], self.jsc - add[1], 0)

    def domain_compute(self, add: Sequence[int] = (0, 0, 0)) -> tuple[int, int, int]:
        return (self.nx + 2 * add[0], self.ny + 2 * add[1], self.nz + add[2])

    @property
    def shape(self) -> tuple[int, int, int]:
        return (self.nx + 2 * self.n_halo, self.ny + 2 * self.n_halo, self.nz)


class StencilFactory:
    """Frozen stencils of one backend and grid (NDSL's ``from_origin_domain``, ``from_dims_halo``)."""

    def __init__(self, config: DaceConfig, grid_indexing: GridIndexing) -> None:
        self.config, self.grid_indexing = config, grid_indexing

    def from_origin_domain(self, func: Callable, origin: Any, domain: Sequence[int],
                           externals: Optional[Mapping[str, Any]] = None) -> FrozenStencil:
        return FrozenStencil(func, backend=self.config.backend, origin=origin, domain=domain, externals=externals)

    def from_dims_halo(self, func: Callable, compute_halos: Sequence[int] = (0, 0)) -> FrozenStencil:
        add = (*compute_halos, 0)
        return self.from_origin_domain(func, self.grid_indexing.origin_compute(add),
                                       self.grid_indexing.domain_compute(add))


class QuantityFactory:
    """Allocates quantities of the grid's full shape on the factory's backend."""

    def __init__(self, config: DaceConfig, grid_indexing: GridIndexing) -> None:
        self.backend, self.grid_indexing = config.backend, grid_indexing

    def zeros(self, dims: Sequence[str] = ("x", "y", "z")) -> Quantity:
        import gt4py.storage as gt_storage

        grid = self.grid_indexing
        data = gt_storage.zeros(grid.shape, dtype=np.float64, backend=self.backend)
        return Quantity(data, dims, grid.origin_compute(), grid.domain_compute())

    def random(self, seed: int, low: float = -1.0, high: float = 1.0) -> Quantity:
        quantity = self.zeros()
        quantity.data[:] = np.random.default_rng(seed).uniform(low, high, quantity.shape)
        return quantity


def periodic_halo(array: Any, n_halo: int) -> None:
    """Fill the halo of a doubly periodic domain (what a halo exchange gives on one tile)."""
    data = np.asarray(array)
    data[:n_halo] = data[-2 * n_halo:-n_halo]
    data[-n_halo:] = data[n_halo:2 * n_halo]
    data[:, :n_halo] = data[:, -2 * n_halo:-n_halo]
    data[:, -n_halo:] = data[:, n_halo:2 * n_halo]


class WrappedHaloUpdater:
    """Halo updates of named quantities of a captured state (a dict or an object), kept in Python."""

    def __init__(self, state: Any, names: Sequence[str], n_halo: int = HALO) -> None:
        self._state, self._names, self._n_halo = state, list(names), n_halo
        self.pending = 0
        self.updates = 0

    def _quantities(self) -> list:
        if isinstance(self._state, dict):
            return [self._state[name] for name in self._names]
        return [getattr(self._state, name) for name in self._names]

    @dace_inhibitor
    def start(self):
        self.pending += 1

    @dace_inhibitor
    def wait(self):
        for quantity in self._quantities():
            periodic_halo(getattr(quantity, "data", quantity), self._n_halo)
        self.pending -= 1
        self.updates += 1

    @dace_inhibitor
    def update(self):
        self.start()
        self.wait()
