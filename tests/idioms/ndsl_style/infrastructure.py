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
    """Allocates quantities of the grid's full shape on the factory's backend (one more point along an
    interface dimension: ``x_interface``, ``y_interface``)."""

    def __init__(self, config: DaceConfig, grid_indexing: GridIndexing) -> None:
        self.backend, self.grid_indexing = config.backend, grid_indexing

    def zeros(self, dims: Sequence[str] = ("x", "y", "z")) -> Quantity:
        import gt4py.storage as gt_storage

        grid = self.grid_indexing
        stagger = (int("x_interface" in dims), int("y_interface" in dims), 0)
        shape = tuple(n + s for n, s in zip(grid.shape, stagger))
        data = gt_storage.zeros(shape, dtype=np.float64, backend=self.backend)
        extent = tuple(n + s for n, s in zip(grid.domain_compute(), stagger))
        return Quantity(data, dims, grid.origin_compute(), extent)

    def random(self, seed: int, low: float = -1.0, high: float = 1.0,
               dims: Sequence[str] = ("x", "y", "z")) -> Quantity:
        quantity = self.zeros(dims)
        quantity.data[:] = np.random.default_rng(seed).uniform(low, high, quantity.shape)
        return quantity


def _period(quantity: Any, axis: int) -> int:
    """Cells across the doubly periodic tile along ``axis`` (an interface dimension has one point more)."""
    return quantity.extent[axis] - int(quantity.dims[axis].endswith("_interface"))


def periodic_halo(quantity: Quantity, n_halo: int) -> None:
    """Fill the halo of a doubly periodic domain (what a halo exchange gives on one tile).

    Ghost point ``k`` beyond an edge is the point one period away; on an
    interface dimension the last compute point is the first one's image.
    """
    data = np.asarray(quantity.data)
    h = n_halo
    for axis in (0, 1):
        n, c = _period(quantity, axis), quantity.extent[axis]
        moved = np.moveaxis(data, axis, 0)
        moved[:h] = moved[n : n + h]
        moved[h + c :] = moved[h + c - n : 2 * h + c - n]


def periodic_interfaces(x: Quantity, y: Quantity, n_halo: int) -> None:
    """NDSL's vector interface synchronization on one doubly periodic tile: the north edge of ``x``
    (on y interfaces) takes the south edge, the east edge of ``y`` (on x interfaces) the west edge."""
    h = n_halo
    xd, yd = np.asarray(x.data), np.asarray(y.data)
    xd[h : h + x.extent[0], h + _period(x, 1)] = xd[h : h + x.extent[0], h]
    yd[h + _period(y, 0), h : h + y.extent[1]] = yd[h, h : h + y.extent[1]]


class WrappedHaloUpdater:
    """Halo updates of named quantities of a captured state (a dict or an object), kept in Python.

    ``names`` are scalars, ``x_names``/``y_names`` vector components (NDSL's
    ``WrappedHaloUpdater(updater, state, qty_x_names, qty_y_names)``); with an
    ``updater`` (orchestra's ``HaloUpdater``) the exchange goes over MPI, else
    the domain is one doubly periodic tile. ``interface()`` synchronizes the
    shared edge points of the one vector pair, through ``comm`` when given.
    """

    def __init__(self, state: Any, names: Sequence[str], n_halo: int = HALO, x_names: Sequence[str] = (),
                 y_names: Sequence[str] = (), updater: Any = None, comm: Any = None) -> None:
        self._state, self._names, self._n_halo = state, list(names), n_halo
        self._x_names, self._y_names = list(x_names), list(y_names)
        self._updater, self._comm = updater, comm
        self.pending = 0
        self.updates = 0
        self.interfaces = 0

    def _get(self, name: str) -> Any:
        return self._state[name] if isinstance(self._state, dict) else getattr(self._state, name)

    @dace_inhibitor
    def start(self):
        self.pending += 1
        if self._updater is not None:
            self._updater.start_fields([self._get(n) for n in self._names],
                                       [(self._get(x), self._get(y)) for x, y in zip(self._x_names, self._y_names)])

    @dace_inhibitor
    def wait(self):
        if self._updater is not None:
            self._updater.wait()
        else:
            for name in (*self._names, *self._x_names, *self._y_names):
                periodic_halo(self._get(name), self._n_halo)
        self.pending -= 1
        self.updates += 1

    @dace_inhibitor
    def update(self):
        self.start()
        self.wait()

    @dace_inhibitor
    def interface(self):
        (x_name,), (y_name,) = self._x_names, self._y_names
        if self._comm is not None:
            self._comm.synchronize_vector_interfaces(self._get(x_name), self._get(y_name))
        else:
            periodic_interfaces(self._get(x_name), self._get(y_name), self._n_halo)
        self.interfaces += 1
