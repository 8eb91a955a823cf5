"""A longitude-latitude map of a cell field on the cubed sphere (matplotlib, PNG)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from driver.geometry import lon_lat

#: Latitude (degrees) beyond which a corner is taken to be a pole.
POLE = 89.9999


def cell_polygons(lon: np.ndarray, lat: np.ndarray) -> list[np.ndarray]:
    """Longitude-latitude polygons (degrees) of one cell with corners ``lon[4], lat[4]``.

    Longitudes are unwrapped around the first corner that is not a pole; a
    corner on a pole becomes two points at the pole's latitude; a cell around
    a pole becomes a band. Polygons leaving [0, 360] get a copy shifted by
    360 degrees.
    """
    at_pole = np.abs(lat) > POLE
    reference = lon[np.argmin(at_pole)]
    lon = reference + (lon - reference + 180.0) % 360.0 - 180.0
    if not at_pole.any() and lon.max() - lon.min() > 180.0:
        pole = 90.0 if lat.mean() > 0 else -90.0
        return [np.array([[0.0, lat.min()], [360.0, lat.min()], [360.0, pole], [0.0, pole]])]
    points = []
    for k in range(4):
        if at_pole[k]:
            before, after = lon[(k - 1) % 4], lon[(k + 1) % 4]
            points.extend([(before, lat[k]), (after, lat[k])])
        else:
            points.append((lon[k], lat[k]))
    polygon = np.array(points)
    polygons = [polygon]
    if polygon[:, 0].min() < 0.0:
        polygons.append(polygon + [360.0, 0.0])
    if polygon[:, 0].max() > 360.0:
        polygons.append(polygon - [360.0, 0.0])
    return polygons


def plot_cells(
    corners: np.ndarray, values: np.ndarray, title: str, path: Path,
    label: str = "free-surface height (m)", symmetric: bool = False,
) -> None:
    """Fill each cell (corners ``[..., 4, 3]`` unit vectors, counter-clockwise) with its value; save PNG.

    ``symmetric`` centres a diverging colour map on zero (for errors).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.collections import PolyCollection

    lon, lat = (np.degrees(a) for a in lon_lat(corners.reshape(-1, 4, 3)))
    flat = values.reshape(-1)
    polygons, colours = [], []
    for cell in range(flat.size):
        for polygon in cell_polygons(lon[cell], lat[cell]):
            polygons.append(polygon)
            colours.append(flat[cell])
    figure, axes = plt.subplots(figsize=(10, 5), dpi=120)
    colours = np.asarray(colours)
    limit = float(np.abs(colours).max()) or 1.0
    # no antialiasing: antialiased edges of adjacent polygons leave faint seams
    collection = PolyCollection(
        polygons, array=colours, cmap="RdBu_r" if symmetric else "viridis",
        edgecolors="face", linewidths=0.6, antialiaseds=False,
    )
    if symmetric:
        collection.set_clim(-limit, limit)
    axes.add_collection(collection)
    axes.set_xlim(0, 360)
    axes.set_ylim(-90, 90)
    axes.set_xticks(range(0, 361, 60))
    axes.set_yticks(range(-90, 91, 30))
    axes.set_xlabel("longitude (degrees)")
    axes.set_ylabel("latitude (degrees)")
    axes.set_title(title)
    figure.colorbar(collection, ax=axes, label=label, shrink=0.9)
    figure.tight_layout()
    figure.savefig(path, format="png")
    plt.close(figure)


def cube_corners(resolution: int) -> np.ndarray:
    """Corners ``[tile, i, j, 4, 3]`` of every cell of a C``resolution`` cube (counter-clockwise)."""
    from orchestra.comm import CubedSpherePartitioner, TilePartitioner

    from driver.grid import GridGeometry, Subdomain

    partitioner = CubedSpherePartitioner(TilePartitioner((1, 1)))
    tiles = []
    for tile in range(6):
        geometry = GridGeometry.build(Subdomain.of_rank(partitioner, tile, resolution, 1))
        c = geometry.corners[1 : resolution + 2, 1 : resolution + 2]
        tiles.append(np.stack([c[:-1, :-1], c[1:, :-1], c[1:, 1:], c[:-1, 1:]], axis=2))
    return np.stack(tiles)


def main(argv: "list[str] | None" = None) -> None:
    """``python -m driver.plot SNAPSHOT.nc OUT.png [TITLE]``: map a snapshot's free surface."""
    import argparse

    import xarray as xr

    parser = argparse.ArgumentParser(prog="python -m driver.plot", description=main.__doc__)
    parser.add_argument("snapshot", help="a <name>_step<N>.nc file written by the driver")
    parser.add_argument("png", help="the PNG to write")
    parser.add_argument("title", nargs="?", default=None)
    arguments = parser.parse_args(argv)
    with xr.open_dataset(arguments.snapshot) as data:
        surface = data["free_surface"].values
        title = arguments.title or f"free surface at {data.attrs.get('time_hours', 0):g} h"
    plot_cells(cube_corners(surface.shape[1]), surface, title, Path(arguments.png))


if __name__ == "__main__":
    main()
