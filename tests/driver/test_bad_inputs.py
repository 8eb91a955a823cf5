"""Every namelist, configuration-file, restart and output-folder defect gets its own one-line message.

The unit tests feed broken files to the readers and check the wording; the
MPI tests run the real driver on 6 ranks and check that the message appears
exactly once (rank 0), that every rank ends with exit status 2 and that no
traceback is printed.
"""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import numpy as np
import pytest

from driver.config import ConfigError, load_config
from driver.namelist import unterminated_string_line
from driver.restart import RestartError, load_restart, save_restart
from tests.mpi_launcher import run_mpi

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "configs" / "c24_case2.yaml"


# ------------------------------------------------------------------ namelists
@pytest.mark.parametrize(
    "text, message",
    [
        ("&coupler_nml\n days = 'abc\n/\n", "not a valid Fortran namelist: line 2: a string is not terminated"),
        ('&coupler_nml\n dt_atmos = 900\n days = "1\n/\n', "line 3: a string is not terminated"),
        ("&coupler_nml\n days = 'abc'\n/\n", "coupler_nml days: expected a finite number, got 'abc' (str)"),
        ("&coupler_nml\n days = abc\n/\n", "coupler_nml days: expected a finite number, got 'abc' (str)"),
        ("&coupler_nml\n days = 1, 2\n/\n", "coupler_nml days: expected a finite number, got [1, 2] (list)"),
        ("&coupler_nml\n days = inf\n/\n", "coupler_nml days: expected a finite number, got inf (float)"),
        ("&coupler_nml\n hours = 'x'\n/\n", "coupler_nml hours: expected a finite number, got 'x' (str)"),
        ("&coupler_nml\n dt_atmos = .true.\n/\n", "coupler_nml dt_atmos: expected a finite number, got True"),
        ("&fv_core_nml\n npx = 25.5\n/\n", "fv_core_nml npx: expected an integer, got 25.5 (float)"),
        ("&fv_core_nml\n npz = 'x'\n/\n", "fv_core_nml npz: expected an integer, got 'x' (str)"),
        ("&fv_core_nml\n n_split = .true.\n/\n", "fv_core_nml n_split: expected an integer, got True (bool)"),
        ("&fv_core_nml\n layout = 1, 2\n/\n", "fv_core_nml layout: expected two equal integers"),
        ("&fv_core_nml\n layout = 1.5, 1.5\n/\n", "fv_core_nml layout: expected an integer, got 1.5"),
        ("&test_case_nml\n alpha = 'x'\n/\n", "test_case_nml alpha: expected a finite number, got 'x' (str)"),
        ("&fv_core_nml\n npx = 25\n", "End-of-file reached before end of namelist. (a group is not closed"),
        ("&coupler_nml\n days(3 = 1\n/\n", "not a valid Fortran namelist: days index did not terminate"),
        ("hello, this is a plain text file\nnot a namelist\n", "not an FV3 namelist for this driver"),
        (CONFIG.read_text(), "holds none of &fv_core_nml, &coupler_nml, &test_case_nml"),
        ("", "(found: no '&group ... /' block at all)"),
        ("&other_nml\n x = 1\n/\n", "(found: &other_nml)"),
        ("&coupler_nml\n days = 1\n/\n&coupler_nml\n days = 2\n/\n", "the group &coupler_nml appears 2 times"),
    ],
    ids=[
        "unterminated-string", "unterminated-double-quote", "days-quoted-text", "days-bare-text", "days-list",
        "days-inf", "hours-text", "dt-logical", "npx-float", "npz-text", "n_split-logical", "layout-unequal",
        "layout-float", "alpha-text", "group-not-closed", "bad-index", "plain-text", "yaml-file", "empty",
        "other-group", "repeated-group",
    ],
)
def test_namelist_defects(tmp_path, text, message):
    path = tmp_path / "input.nml"
    path.write_text(text)
    with pytest.raises(ConfigError) as raised:
        load_config(CONFIG, path)
    assert str(raised.value).startswith(f"{path}: "), raised.value
    assert message in str(raised.value), raised.value
    assert "\n" not in str(raised.value)


def test_namelist_parse_failures_print_nothing(tmp_path, capfd):
    path = tmp_path / "input.nml"
    path.write_text("&coupler_nml\n days = 'abc\n/\n")  # f90nml prints its tokenizer table here
    with pytest.raises(ConfigError):
        load_config(CONFIG, path)
    out, err = capfd.readouterr()
    assert out == "" and err == ""


def test_namelist_ranges_are_checked_with_the_configuration(tmp_path):
    path = tmp_path / "input.nml"
    path.write_text("&coupler_nml\n days = -1\n/\n")
    with pytest.raises(ConfigError, match=r"field 'days': expected a number > 0, got -1.0"):
        load_config(CONFIG, path)


def test_binary_directory_and_missing_namelists(tmp_path):
    binary = tmp_path / "binary.nml"
    binary.write_bytes(b"\x00\xff\xfe\x01")
    with pytest.raises(ConfigError, match="cannot read the namelist: not a text file"):
        load_config(CONFIG, binary)
    with pytest.raises(ConfigError, match="cannot read the namelist: No such file or directory"):
        load_config(CONFIG, tmp_path / "missing.nml")
    with pytest.raises(ConfigError, match="cannot read the namelist: Is a directory"):
        load_config(CONFIG, tmp_path)


def test_a_good_namelist_with_comments_and_other_groups_still_reads(tmp_path):
    path = tmp_path / "input.nml"
    path.write_text(
        "! the model's namelist\n&fv_core_nml\n npx = 13 ! it's C12\n layout = 1, 1\n/\n"
        "&atmos_model_nml\n blocksize = 32\n/\n&coupler_nml\n days = 1\n hours = 6\n/\n"
    )
    config = load_config(CONFIG, path)
    assert config.resolution == 12 and config.days == 1.25


def test_unterminated_string_line():
    assert unterminated_string_line("&g\n x = 'it''s' ! don't\n y = \"a'b\"\n z = 'open\n/\n") == 4
    assert unterminated_string_line("&g\n x = 'closed' ! it's fine\n/\n") is None


# ----------------------------------------------------------- configuration file
def test_binary_and_directory_configurations(tmp_path):
    binary = tmp_path / "run.yaml"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff")
    with pytest.raises(ConfigError, match="cannot read the configuration: not a text file"):
        load_config(binary)
    with pytest.raises(ConfigError, match="cannot read the configuration: Is a directory"):
        load_config(tmp_path)


# ------------------------------------------------------------------- restarts
def _config(**changes):
    return load_config(CONFIG, overrides={"resolution": 12, "nz": 1, **changes})


def _restart(path: Path, config, step: int = 4, fields=None, initial=None) -> Path:
    shape = (6, config.resolution, config.resolution, config.nz)
    arrays = {name: np.ones(shape) for name in ("h", "u", "v")}
    arrays.update(fields or {})
    save_restart(path, step, config, initial, arrays)
    return path


def _write_npz(path: Path, **arrays) -> None:
    with open(path, "wb") as stream:
        np.savez(stream, **arrays)


def test_a_good_restart_loads(tmp_path):
    config = _config()
    initial = {"mass": 1.0, "energy": 2.0, "enstrophy": float("nan")}
    restart = load_restart(_restart(tmp_path / "r.npz", config, initial=initial), config)
    assert restart.step == 4 and restart.fields["h"].shape == (6, 12, 12, 1)
    assert restart.initial_invariants["mass"] == 1.0


def _damage(path: Path, damage: str, config) -> None:
    """Write the restart file ``damage`` names to ``path``."""
    ones = np.ones((6, 12, 12, 1))
    if damage == "truncated":
        data = _restart(path, config).read_bytes()
        path.write_bytes(data[: len(data) // 2])
    elif damage == "empty-file":
        path.write_bytes(b"")
    elif damage == "garbage":
        path.write_bytes(b"this is not a restart file\n" * 20)
    elif damage == "python-pickle":
        path.write_bytes(pickle.dumps({"h": [1.0]}))
    elif damage == "object-array":
        with open(path, "wb") as stream:
            np.save(stream, np.array([{"h": 1}], dtype=object), allow_pickle=True)
    elif damage == "pickled-member":
        _write_npz(path, metadata="{}", h=np.array([{"h": 1}], dtype=object), u=ones, v=ones)
    elif damage == "bare-array":
        with open(path, "wb") as stream:
            np.save(stream, np.ones(3))
    elif damage == "foreign-npz":
        _write_npz(path, temperature=ones)
    elif damage == "no-field":
        _write_npz(path, metadata="{}", h=ones, u=ones)
    elif damage == "metadata-not-json":
        _write_npz(path, metadata="{not json", h=ones, u=ones, v=ones)
    elif damage == "metadata-list":
        _write_npz(path, metadata="[1, 2]", h=ones, u=ones, v=ones)
    elif damage == "step-text":
        _write_npz(path, metadata=json.dumps({"step": "4", "config": {}}), h=ones, u=ones, v=ones)
    elif damage == "config-lacks-dt":
        written = {"resolution": 12, "nz": 1, "test_case": 2, "alpha_degrees": 0}
        _write_npz(path, metadata=json.dumps({"step": 4, "config": written}), h=ones, u=ones, v=ones)
    elif damage == "bad-invariants":
        _restart(path, config, initial={"mass": 1.0})
    elif damage == "other-resolution":
        _restart(path, _config(resolution=24))
    elif damage == "other-test-case":
        _restart(path, _config(test_case=6))
    elif damage == "other-dt":
        _restart(path, _config(dt=450))
    elif damage == "wrong-layers":
        _restart(path, config, fields={"h": np.ones((6, 12, 12, 3))})
    elif damage == "wrong-tiles":
        _restart(path, config, fields={"u": np.ones((1, 12, 12, 1))})
    elif damage == "integer-field":
        _restart(path, config, fields={"v": np.ones((6, 12, 12, 1), dtype=np.int64)})
    elif damage == "nan-field":
        h = np.ones((6, 12, 12, 1))
        h[2, 3, 4, 0] = np.nan
        _restart(path, config, fields={"h": h})
    elif damage == "step-at-end":
        _restart(path, config, step=config.n_steps)
    elif damage == "step-beyond":
        _restart(path, config, step=100000)
    elif damage == "negative-step":
        _restart(path, config, step=-1)
    elif damage == "directory":
        path.mkdir()
    else:
        assert damage == "missing"


RESTART_DEFECTS = {
    "missing": "no such restart file",
    "directory": "not a file; give a restart_step<N>.npz file",
    "truncated": "not a readable restart file (truncated, or not a restart_step<N>.npz",
    "empty-file": "the file is empty",
    "garbage": "not a restart file: it is no .npz archive (it starts with b'this i')",
    "python-pickle": "holds pickled Python objects, which the driver never loads",
    "object-array": "holds pickled Python objects, which the driver never loads",
    "pickled-member": "holds pickled Python objects, which the driver never loads",
    "bare-array": "a single array (.npy), not a restart archive",
    "foreign-npz": "not a restart file of this driver: the archive lacks metadata, h, u, v (it holds temperature)",
    "no-field": "not a restart file of this driver: the archive lacks v",
    "metadata-not-json": "its metadata is damaged (not JSON",
    "metadata-list": "its metadata is damaged: expected a JSON object, got list",
    "step-text": "its metadata is damaged: 'step' should be a whole number >= 0, got '4'",
    "negative-step": "its metadata is damaged: 'step' should be a whole number >= 0, got -1",
    "config-lacks-dt": "its metadata is damaged: 'config' lacks 'dt'",
    "bad-invariants": "its metadata is damaged: 'initial_invariants' should be null or numbers",
    "other-resolution": "written by a run with resolution=24, but this run has resolution=12",
    "other-test-case": "written by a run with test_case=6, but this run has test_case=2",
    "other-dt": "written by a run with dt=450.0, but this run has dt=900.0",
    "wrong-layers": "field h has shape (6, 12, 12, 3), but this run needs (6, 12, 12, 1)",
    "wrong-tiles": "field u has shape (1, 12, 12, 1), but this run needs (6, 12, 12, 1)",
    "integer-field": "field v holds int64 values, not floating-point numbers",
    "nan-field": "field h holds 1 NaN or infinite value(s)",
    "step-at-end": "the file is at step 480, but this run ends at step 480 (5 days): nothing is left to run",
    "step-beyond": "the file is at step 100000, but this run ends at step 480",
}


@pytest.mark.parametrize("damage", sorted(RESTART_DEFECTS))
def test_restart_defects(tmp_path, damage):
    config = _config()
    path = tmp_path / "restart_step000004.npz"
    _damage(path, damage, config)
    with pytest.raises(RestartError) as raised:
        load_restart(path, config)
    message = str(raised.value)
    assert message.startswith(f"{path}: ") and RESTART_DEFECTS[damage] in message, message
    assert "\n" not in message
    assert "allow_pickle" not in message  # numpy's own advice is to load it unsafely


def test_a_restart_may_use_another_layout_and_days(tmp_path):
    path = _restart(tmp_path / "r.npz", _config(layout=2, days=10))
    assert load_restart(path, _config()).step == 4


# ------------------------------------------------------------- under mpirun
YAML = """
resolution: 12
layout: 1
dt: 1800
days: 0.125
test_case: 2
backend: numpy
output:
  directory: {directory}
  plot: false
"""


def _driver(tmp_path: Path, *extra: str):
    config = tmp_path / "run.yaml"
    config.write_text(YAML.format(directory=tmp_path / "out"))
    return run_mpi(6, "-m", "driver", str(config), *extra, timeout=240, check=False)


def _bad_input(tmp_path: Path, kind: str, monkeypatch) -> tuple[list[str], str]:
    """The driver's extra arguments (and environment) for ``kind``, and the message expected once."""
    if kind == "env-log-level":
        monkeypatch.setenv("FV3_DACEMODE", "BuildAndRun")
        monkeypatch.setenv("ORCHESTRA_LOG_LEVEL", "loud")
        return ["--set", "backend=dace:cpu"], "configuration error: " + str(tmp_path / "run.yaml") + (
            ": ORCHESTRA_LOG_LEVEL='loud' is not a log level"
        )
    if kind == "restart-garbage":
        bad = tmp_path / "restart_step000004.npz"
        bad.write_bytes(b"garbage" * 100)
        return ["--restart", str(bad)], f"restart error: {bad}: not a restart file: it is no .npz archive"
    if kind == "restart-other-config":
        bad = _restart(tmp_path / "restart_step000002.npz", _config(resolution=24, dt=1800), step=2)
        return ["--restart", str(bad)], "resolution=24, but this run has resolution=12"
    if kind == "restart-missing":
        return ["--restart", str(tmp_path / "nothing.npz")], "restart error: " + str(tmp_path / "nothing.npz")
    if kind == "namelist-plain-text":
        bad = tmp_path / "input.nml"
        bad.write_text("just some text\n")
        return ["--namelist", str(bad)], f"configuration error: {bad}: not an FV3 namelist for this driver"
    if kind == "namelist-days-text":
        bad = tmp_path / "input.nml"
        bad.write_text("&coupler_nml\n days = 'five'\n/\n")
        return ["--namelist", str(bad)], "coupler_nml days: expected a finite number, got 'five' (str)"
    if kind == "output-is-a-file":
        (tmp_path / "blocker").write_text("a file")
        target = tmp_path / "blocker" / "out"
        return [f"--set=output.directory={target}"], f"output error: {target}: cannot write the run's output there"
    assert kind == "missing-argument-value"
    return ["--restart"], "error: argument --restart: expected one argument"


@pytest.mark.mpi
@pytest.mark.parametrize(
    "kind",
    [
        "restart-garbage", "restart-other-config", "restart-missing", "namelist-plain-text",
        "namelist-days-text", "output-is-a-file", "missing-argument-value", "env-log-level",
    ],
)
def test_bad_input_under_mpirun_is_one_line_from_one_rank(tmp_path, kind, monkeypatch):
    extra, expected = _bad_input(tmp_path, kind, monkeypatch)
    process = _driver(tmp_path, *extra)
    output = process.stdout
    assert process.returncode == 2, output[-3000:]
    assert len([line for line in output.splitlines() if expected in line]) == 1, output[-3000:]
    assert "Traceback" not in output and "rank 1" not in output, output[-3000:]
    assert not (tmp_path / "out").exists(), "the run went on to write output"


@pytest.mark.mpi
def test_a_rank_that_cannot_read_an_input_is_named(tmp_path):
    worker = Path(__file__).resolve().parent / "workers" / "agree_inputs.py"
    process = run_mpi(3, worker, timeout=120, check=False)
    output = process.stdout
    assert process.returncode == 2, output[-3000:]
    expected = "restart error (on rank 2; rank 0 could read it): /data/r.npz: no such restart file"
    assert output.count(expected) == 1, output[-3000:]
    assert "Traceback" not in output, output[-3000:]
