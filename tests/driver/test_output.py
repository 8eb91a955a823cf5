"""Serial pieces of the run output: progress line, map polygons, atomic writes, the plot."""

import io
from pathlib import Path

import numpy as np
import pytest

from orchestra.comm import CubedSpherePartitioner, TilePartitioner

from driver.grid import GridGeometry, Subdomain
from driver.output import atomic_write
from driver.plot import cell_polygons, plot_cells
from driver.progress import ProgressBar, format_duration, format_sim_time


def test_progress_lines_when_not_a_terminal():
    stream = io.StringIO()
    bar = ProgressBar(0, 20, 1800.0, stream, percent_step=50)
    for step in range(1, 21):
        bar.update(step)
    lines = stream.getvalue().splitlines()
    assert len(lines) == 3  # 0 %, 50 %, 100 %
    assert "step 20/20" in lines[-1] and "t = 0d 10:00" in lines[-1] and "ETA 0.0s" in lines[-1]
    assert lines[-1].startswith("[" + "#" * 30 + "]")


def test_durations():
    assert format_duration(5.04) == "5.0s"
    assert format_duration(125) == "2m05s"
    assert format_duration(3723) == "1h02m03s"
    assert format_sim_time(5 * 86400 + 3600 * 3 + 60 * 15) == "5d 03:15"


def test_polygons_wrap_and_poles():
    # a cell across longitude 0 is drawn twice (shifted by 360 degrees)
    wrapped = cell_polygons(np.array([358.0, 2.0, 2.0, 358.0]), np.array([0.0, 0.0, 2.0, 2.0]))
    assert len(wrapped) == 2
    # a corner on the pole becomes two points at the pole's latitude
    at_pole = cell_polygons(np.array([0.0, 0.0, 90.0, 45.0]), np.array([80.0, 90.0, 80.0, 85.0]))
    assert len(at_pole[0]) == 5 and np.count_nonzero(at_pole[0][:, 1] == 90.0) == 2
    # a cell around the pole becomes a band up to the pole
    around = cell_polygons(np.array([45.0, 135.0, 225.0, 315.0]), np.array([88.0, 88.0, 88.0, 88.0]))
    assert around[0][:, 0].min() == 0.0 and around[0][:, 0].max() == 360.0 and around[0][:, 1].max() == 90.0


def test_atomic_write_leaves_no_partial_file(tmp_path):
    target = tmp_path / "sub" / "file.txt"
    atomic_write(target, lambda temporary: temporary.write_text("done"))
    assert target.read_text() == "done"

    def failing(temporary: Path) -> None:
        temporary.write_text("partial")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        atomic_write(target, failing)
    assert target.read_text() == "done"
    assert [p.name for p in target.parent.iterdir()] == ["file.txt"]


def test_plot_of_the_whole_sphere(tmp_path):
    partitioner = CubedSpherePartitioner(TilePartitioner((1, 1)))
    corners, values = [], []
    for rank in range(6):
        g = GridGeometry.build(Subdomain.of_rank(partitioner, rank, 8, 2))
        c = g.corners[2:11, 2:11]
        corners.append(np.stack([c[:-1, :-1], c[1:, :-1], c[1:, 1:], c[:-1, 1:]], axis=2))
        values.append(g.compute(g.centres)[..., 2])
    path = tmp_path / "map.png"
    plot_cells(np.stack(corners), np.stack(values), "z", path, label="z", symmetric=True)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_an_earlier_run_is_never_overwritten(tmp_path):
    from driver.output import fresh_directory

    directory = tmp_path / "c24_case2"
    assert fresh_directory(directory, overwrite=False) == directory  # nothing there yet
    directory.mkdir()
    (directory / "notes.txt").write_text("mine")
    assert fresh_directory(directory, overwrite=False) == directory  # no run output in it
    (directory / "run_step000000.nc").write_text("an earlier run")
    assert fresh_directory(directory, overwrite=False) == tmp_path / "c24_case2_run2"
    (tmp_path / "c24_case2_run2").mkdir()
    (tmp_path / "c24_case2_run2" / "restart_step000010.npz").write_text("the second run")
    assert fresh_directory(directory, overwrite=False) == tmp_path / "c24_case2_run3"
    assert fresh_directory(directory, overwrite=True) == directory


def test_output_overwrite_is_a_configuration_field():
    from driver.config import config_from_dict

    required = {"resolution": 12, "layout": 1, "dt": 900, "days": 1, "test_case": 2, "backend": "numpy"}
    assert config_from_dict({**required, "output": {"overwrite": True}}).output.overwrite is True
    assert config_from_dict(required).output.overwrite is False
