"""Run output: netCDF snapshots, restart files, and the final plot (written by rank 0).

Fields are gathered to rank 0 as global arrays ``[tile, i, j(, k)]``. Files
are written to a temporary name in the output folder and renamed into place
(``os.replace``), so a reader never sees a partial file and a run killed
while writing leaves the previous files intact.

Restart files (``restart_step<N>.npz``) hold the prognostic fields of the
whole cube, the step and the configuration fields they depend on; their
format and reading them are :mod:`driver.restart`'s. A restart may use
another layout (results then differ by round-off only where layout-dependent
quantities enter, see :class:`~driver.components.Hyperdiffusion`).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np

from orchestra.comm import Communicator

from driver.config import RunConfig
from driver.geometry import lon_lat
from driver.grid import GridGeometry
from driver.host_copies import to_host
from driver.plot import plot_cells
from driver.restart import save_restart
from driver.state import ModelState

def gather_global(communicator: Communicator, local: np.ndarray, geometry: GridGeometry) -> Optional[np.ndarray]:
    """``local`` (this rank's compute domain, ``[i, j, ...]``) of all ranks as ``[tile, i, j, ...]`` on rank 0.

    Collective; returns None on the other ranks.
    """
    s = geometry.subdomain
    pieces = communicator.mpi_comm.gather((s.tile, s.i_start, s.j_start, np.ascontiguousarray(local)), root=0)
    if pieces is None:
        return None
    out = np.empty((6, s.n_tile, s.n_tile, *local.shape[2:]), dtype=local.dtype)
    for tile, i0, j0, piece in pieces:
        out[tile, i0 : i0 + piece.shape[0], j0 : j0 + piece.shape[1]] = piece
    return out


def atomic_write(path: Path, write: Callable[[Path], None]) -> None:
    """Call ``write(temporary_path)`` in ``path``'s folder, then rename the result to ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(handle)
    try:
        write(Path(temporary))
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


#: What an earlier run leaves in its output folder.
RUN_FILES = ("*.nc", "*.npz", "*.png")


def fresh_directory(directory: Path, overwrite: bool) -> Path:
    """``directory`` if it holds no earlier run's files (or ``overwrite``), else the first free ``<dir>_runN``.

    Decide it on one rank and broadcast it: ranks must agree.
    """
    def holds_a_run(path: Path) -> bool:
        return path.is_dir() and any(next(path.glob(pattern), None) for pattern in RUN_FILES)

    if overwrite or not holds_a_run(directory):
        return directory
    number = 2
    while holds_a_run(candidate := directory.with_name(f"{directory.name}_run{number}")):
        number += 1
    return candidate


class OutputWriter:
    """Writes snapshots, restarts and the plot of one run into ``config.output.directory``."""

    def __init__(self, config: RunConfig, communicator: Communicator, geometry: GridGeometry) -> None:
        self.config = config
        self.communicator = communicator
        self.geometry = geometry
        self.directory = Path(config.output.directory)
        compute = geometry.subdomain.compute
        lon, lat = lon_lat(geometry.centres[compute])
        self._lon = gather_global(communicator, np.degrees(lon), geometry)
        self._lat = gather_global(communicator, np.degrees(lat), geometry)
        corners = geometry.corners[compute[0].start : compute[0].stop + 1, compute[1].start : compute[1].stop + 1]
        self._corners = gather_global(communicator, corners[:-1, :-1], geometry), gather_global(
            communicator, np.stack([corners[1:, :-1], corners[1:, 1:], corners[:-1, 1:]], axis=2), geometry
        )

    @property
    def is_root(self) -> bool:
        return self.communicator.rank == 0

    def _gather_state(self, state: ModelState) -> dict[str, Optional[np.ndarray]]:
        compute = self.geometry.subdomain.compute
        fields = {name: to_host(array)[compute] for name, array in state.prognostic().items()}
        fields["surface_height"] = to_host(state.surface_height)[compute]
        return {name: gather_global(self.communicator, value, self.geometry) for name, value in fields.items()}

    def snapshot(self, state: ModelState, step: int) -> Optional[Path]:
        """Write the prognostic fields at ``step`` to ``<name>_step<step>.nc`` (collective)."""
        fields = self._gather_state(state)
        if not self.is_root:
            return None
        import xarray as xr

        dims3 = ("tile", "i", "j", "k")
        dims2 = ("tile", "i", "j")
        hours = step * self.config.dt / 3600.0
        dataset = xr.Dataset(
            {
                "h": (dims3, fields["h"], {"long_name": "layer depth", "units": "m"}),
                "u": (dims3, fields["u"], {"long_name": "wind along the cell's i basis vector", "units": "m s-1"}),
                "v": (dims3, fields["v"], {"long_name": "wind along the cell's j basis vector", "units": "m s-1"}),
                "surface_height": (dims2, fields["surface_height"], {"units": "m"}),
                "free_surface": (
                    dims2, fields["surface_height"] + fields["h"].sum(axis=-1),
                    {"long_name": "free-surface height", "units": "m"},
                ),
            },
            coords={
                "lon": (dims2, self._lon, {"units": "degrees_east"}),
                "lat": (dims2, self._lat, {"units": "degrees_north"}),
            },
            attrs={"step": step, "time_hours": hours, "config": json.dumps(self.config.to_dict())},
        )
        path = self.directory / f"{self.config.name}_step{step:06d}.nc"
        atomic_write(path, lambda temporary: dataset.to_netcdf(temporary))
        return path

    def restart(self, state: ModelState, step: int, initial: Any) -> Optional[Path]:
        """Write ``restart_step<step>.npz`` (collective); ``initial`` (invariants) goes into its metadata."""
        fields = self._gather_state(state)
        if not self.is_root:
            return None
        path = self.directory / f"restart_step{step:06d}.npz"
        atomic_write(path, lambda temporary: save_restart(temporary, step, self.config, initial, fields))
        return path

    def plot(self, state: ModelState, step: int, title: str, exact: Optional[np.ndarray] = None) -> list[Path]:
        """Draw the free-surface height on a longitude-latitude map (PNG; collective).

        With ``exact`` (this rank's analytic free surface on its compute
        domain) also draw the error, ``<name>_step<N>_error.png``.
        """
        fields = self._gather_state(state)
        exact_global = gather_global(self.communicator, exact, self.geometry) if exact is not None else None
        if not self.is_root:
            return []
        surface = fields["surface_height"] + fields["h"].sum(axis=-1)
        first, others = self._corners
        corners = np.concatenate([first[:, :, :, None], others], axis=3)  # [tile, i, j, corner, xyz]
        path = self.directory / f"{self.config.name}_step{step:06d}.png"
        atomic_write(path, lambda temporary: plot_cells(corners, surface, title, temporary))
        paths = [path]
        if exact_global is not None:
            error_path = self.directory / f"{self.config.name}_step{step:06d}_error.png"
            atomic_write(
                error_path,
                lambda temporary: plot_cells(
                    corners, surface - exact_global, title.replace("free surface", "free-surface error"), temporary,
                    label="computed - exact (m)", symmetric=True,
                ),
            )
            paths.append(error_path)
        return paths

