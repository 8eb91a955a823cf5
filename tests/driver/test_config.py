"""Configuration files: valid ones load, bad ones fail with one clear line naming the field."""

import subprocess
import sys
from pathlib import Path

import pytest

from driver.config import ConfigError, RunConfig, load_config, parse_overrides

ROOT = Path(__file__).resolve().parents[2]
GOOD = """
resolution: 24
layout: 2
dt: 900
days: 1
test_case: 2
backend: numpy
output:
  directory: out
"""


def write(tmp_path: Path, text: str, name: str = "run.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize("path", sorted((ROOT / "configs").glob("*.yaml")), ids=lambda p: p.name)
def test_shipped_configs_are_valid(path):
    config = load_config(path)
    assert isinstance(config, RunConfig)
    assert config.name == path.stem


def test_good_config(tmp_path):
    config = load_config(write(tmp_path, GOOD))
    assert (config.resolution, config.layout, config.total_ranks, config.n_steps) == (24, 2, 24, 96)
    assert config.output.directory == "out" and config.output.plot is True
    assert config.n_halo == 3 and config.nz == 1 and config.hyperdiffusion is True


@pytest.mark.parametrize(
    "change, words",
    [
        ("layout: two", ["'layout'", "integer", "'two'"]),
        ("layout: 5", ["'layout'", "divisor of resolution 24", "5"]),
        ("dt: -10", ["'dt'", "> 0", "-10"]),
        ("days: 0.01", ["'days'", "whole number of time steps"]),
        ("test_case: 3", ["'test_case'", "1, 2, 5, 6", "3"]),
        ("backend: cuda", ["'backend'", "numpy", "dace:cpu", "'cuda'"]),
        ("n_halo: 1", ["'n_halo'", ">= 2"]),
        ("n_halo: 13", ["'n_halo'", "at most"]),
        ("hyperdiffusion: maybe", ["'hyperdiffusion'", "true or false", "'maybe'"]),
        ("resolutoin: 24", ["unknown field", "'resolutoin'", "valid fields are", "resolution"]),
        ("output: {plot: 3}", ["'output.plot'", "true or false"]),
        ("output: {netcdf_interval_hours: 0.1}", ["'output.netcdf_interval_hours'", "whole number of time steps"]),
        ("output: {every: 3}", ["unknown field in 'output'", "'every'", "netcdf_interval_hours"]),
    ],
)
def test_bad_fields_give_one_line_naming_the_field(tmp_path, change, words):
    key = change.split(":")[0]
    lines = [
        line for line in GOOD.splitlines()
        if not line.startswith(key + ":") and not (key == "output" and line.startswith("  "))
    ]
    path = write(tmp_path, "\n".join(lines) + "\n" + change + "\n")
    with pytest.raises(ConfigError) as raised:
        load_config(path)
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith(str(path))
    for word in words:
        assert word in message, message


@pytest.mark.parametrize("missing", ["resolution", "layout", "dt", "days", "test_case", "backend"])
def test_missing_required_field(tmp_path, missing):
    lines = [line for line in GOOD.splitlines() if not line.startswith(missing + ":")]
    with pytest.raises(ConfigError, match=f"missing required field '{missing}'"):
        load_config(write(tmp_path, "\n".join(lines)))


def test_unreadable_files(tmp_path):
    with pytest.raises(ConfigError, match="cannot read the configuration"):
        load_config(tmp_path / "absent.yaml")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(write(tmp_path, "resolution: [24\n"))
    with pytest.raises(ConfigError, match="the file is empty"):
        load_config(write(tmp_path, ""))
    with pytest.raises(ConfigError, match="expected a mapping"):
        load_config(write(tmp_path, "- 1\n- 2\n"))


def test_namelist_overrides_shared_fields(tmp_path):
    namelist = write(
        tmp_path,
        "&fv_core_nml\n npx = 49, npy = 49, npz = 2, layout = 2, 2, n_split = 2\n/\n"
        "&coupler_nml\n dt_atmos = 450, days = 2, hours = 12\n/\n"
        "&test_case_nml\n test_case = 6, alpha = 0.0\n/\n",
        "input.nml",
    )
    config = load_config(write(tmp_path, GOOD), namelist)
    assert (config.resolution, config.nz, config.layout, config.n_substeps) == (48, 2, 2, 2)
    assert (config.dt, config.days, config.test_case) == (450.0, 2.5, 6)
    assert load_config(ROOT / "configs" / "c24_case2.yaml", ROOT / "configs" / "input.nml").days == 1.0


def test_bad_namelists(tmp_path):
    config = write(tmp_path, GOOD)
    uneven = write(tmp_path, "&fv_core_nml\n layout = 2, 3\n/\n", "a.nml")
    with pytest.raises(ConfigError, match="layout: expected two equal integers"):
        load_config(config, uneven)
    rectangular = write(tmp_path, "&fv_core_nml\n npx = 25, npy = 49\n/\n", "b.nml")
    with pytest.raises(ConfigError, match="npx=25 and npy=49 differ"):
        load_config(config, rectangular)
    bad_case = write(tmp_path, "&test_case_nml\n test_case = 4\n/\n", "c.nml")
    with pytest.raises(ConfigError, match="'test_case'.*got 4"):
        load_config(config, bad_case)


def test_overrides(tmp_path):
    overrides = parse_overrides(["days=0.5", "output.plot=false", "backend=gt:cpu_kfirst"])
    assert overrides == {"days": 0.5, "output": {"plot": False}, "backend": "gt:cpu_kfirst"}
    config = load_config(write(tmp_path, GOOD), overrides=overrides)
    assert config.days == 0.5 and config.output.plot is False and config.output.directory == "out"
    with pytest.raises(ConfigError, match="expected FIELD=VALUE"):
        parse_overrides(["days"])


def test_driver_reports_a_bad_config_and_exits_2(tmp_path):
    path = write(tmp_path, GOOD.replace("layout: 2", "layout: -1"))
    result = subprocess.run(
        [sys.executable, "-m", "driver", str(path)], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 2
    assert "configuration error" in result.stderr and "'layout'" in result.stderr
    assert "Traceback" not in result.stderr


def test_driver_refuses_the_wrong_number_of_ranks(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "driver", str(write(tmp_path, GOOD))], cwd=ROOT, capture_output=True, text=True,
        timeout=120,
    )
    assert result.returncode == 2
    assert "needs 24 ranks" in result.stderr and "mpirun -n 24" in result.stderr


def test_reading_a_configuration_imports_neither_gt4py_nor_dace():
    """scripts/run.sh reads the rank count before mpirun: importing gt4py there cost about 3 s of every launch."""
    probe = (
        "import sys; from driver.config import load_config; load_config('configs/c24_case2.yaml'); "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'gt4py', 'dace', 'mpi4py', 'orchestra'}))"
    )
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
