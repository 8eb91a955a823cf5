"""Building stencils and fields for one rank: origins, domains, region externals, storages."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Mapping, Optional

import numpy as np

from orchestra import DaceConfig, FrozenStencil, Scratch

from driver.grid import Subdomain
from driver.regions import edge_externals


@dataclasses.dataclass(frozen=True)
class StencilFactory:
    """Makes :class:`~orchestra.FrozenStencil` s and gt4py storages for one subdomain.

    Domains: ``compute`` (the rank's cells, optionally extended by ``extend``
    halo rings), ``x_faces`` (``nx + 1`` west faces, the last one the east
    face of the last cell), ``y_faces``, and ``full`` (every cell, halos
    included). Every stencil gets the tile-edge region externals of
    :func:`driver.regions.edge_externals`.
    """

    subdomain: Subdomain
    nz: int
    dace_config: DaceConfig
    validate_args: bool = True
    #: whether :meth:`scratch` declares the fields it makes ``orchestra.Scratch``
    scratch_intermediates: bool = False

    @property
    def backend(self) -> str:
        """The gt4py backend."""
        return self.dace_config.backend

    @property
    def shape(self) -> tuple[int, int, int]:
        """Shape of every cell-centred 3-D field."""
        return (*self.subdomain.shape, self.nz)

    def _stencil(
        self, definition: Callable, origin: tuple[int, int, int], domain: tuple[int, int, int],
        externals: Optional[Mapping[str, Any]],
    ) -> FrozenStencil:
        return FrozenStencil(
            definition,
            backend=self.backend,
            origin=origin,
            domain=domain,
            externals={**edge_externals(self.subdomain.edges), **(externals or {})},
            validate_args=self.validate_args,
        )

    def compute(
        self, definition: Callable, extend: int = 0, externals: Optional[Mapping[str, Any]] = None
    ) -> FrozenStencil:
        """A stencil on the compute domain grown by ``extend`` halo rings."""
        s, h = self.subdomain, self.subdomain.n_halo
        if not 0 <= extend <= h:
            raise ValueError(f"extend={extend} must lie in 0..n_halo={h}")
        origin = (h - extend, h - extend, 0)
        return self._stencil(definition, origin, (s.nx + 2 * extend, s.ny + 2 * extend, self.nz), externals)

    def x_faces(self, definition: Callable, externals: Optional[Mapping[str, Any]] = None) -> FrozenStencil:
        """A stencil on the ``nx + 1`` x-faces of the compute domain (``west`` is the first face)."""
        s, h = self.subdomain, self.subdomain.n_halo
        return self._stencil(definition, (h, h, 0), (s.nx + 1, s.ny, self.nz), externals)

    def y_faces(self, definition: Callable, externals: Optional[Mapping[str, Any]] = None) -> FrozenStencil:
        """A stencil on the ``ny + 1`` y-faces of the compute domain (``south`` is the first face)."""
        s, h = self.subdomain, self.subdomain.n_halo
        return self._stencil(definition, (h, h, 0), (s.nx, s.ny + 1, self.nz), externals)

    def full(self, definition: Callable, externals: Optional[Mapping[str, Any]] = None) -> FrozenStencil:
        """A stencil on every cell, halos included."""
        return self._stencil(definition, (0, 0, 0), self.shape, externals)

    def zeros(self) -> Any:
        """A zero 3-D field ``[i, j, k]`` allocated for the backend."""
        import gt4py.storage as gt_storage

        return gt_storage.zeros(self.shape, np.float64, backend=self.backend)

    def scratch(self) -> Any:
        """A 3-D field for an intermediate that no one reads between steps: ``orchestra.Scratch`` if so configured.

        Declared scratch, the compiled step keeps it as its own transient (the
        array Python holds is never written); otherwise a plain zero field.
        """
        return Scratch(self.zeros()) if self.scratch_intermediates else self.zeros()

    def zeros_ij(self) -> Any:
        """A zero 2-D field ``[i, j]`` allocated for the backend."""
        import gt4py.storage as gt_storage

        return gt_storage.zeros(self.subdomain.shape, np.float64, backend=self.backend, dimensions=("I", "J"))
