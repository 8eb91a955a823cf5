"""Models unlike the dycore, run as a user runs them: their own script, orchestra installed from a wheel.

Each model of this folder is a script of its own (a periodic transport
model with a tracer dict and sub-cycling, a column physics scheme with
branches, ``exp`` and a sedimentation sweep, an implicit vertical solver, a
model whose components all receive one state object, a channel ocean
model whose callbacks fill its own arrays at three depths: before issue 54's
fixes it differed from ``Python`` mode by up to 13 without a word). The test builds
orchestra's wheel, installs it into a fresh environment (no editable
install, no ``.venv`` on the path for orchestra: its dependencies come from
``.venv``'s site-packages through a path file), copies each script to a
folder outside the repository and runs it there:

1. in ``Python`` mode and in ``BuildAndRun``: every saved array bit for bit equal;
2. the script edited by comments, blank lines, docstrings and unrelated
   functions everywhere (:func:`tests.layout_noise.with_layout_noise`), in ``Run``
   mode against the first build: it must find that build and compute the same.

The console of an orchestrated run carries no DaCe or gt4py warning.
"""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.layout_noise import with_layout_noise

ROOT = Path(__file__).resolve().parents[2]
MODELS = ["periodic_transport", "column_physics", "implicit_diffusion", "one_state", "channel_ocean"]


@pytest.fixture(scope="module")
def installed_python(tmp_path_factory) -> Path:
    """A fresh environment's python with orchestra installed from its wheel (dependencies from this one)."""
    folder = tmp_path_factory.mktemp("user_env")
    source, wheels = folder / "source", folder / "wheels"  # built from a copy: no build/ left in the clone
    source.mkdir()
    for part in ("orchestra", "driver"):
        shutil.copytree(ROOT / part, source / part, ignore=shutil.ignore_patterns("__pycache__"))
    for part in ("setup.cfg", "pyproject.toml", "README.md"):
        shutil.copy(ROOT / part, source / part)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "-w", str(wheels), str(source)], check=True, capture_output=True, cwd=folder)
    (wheel,) = wheels.glob("orchestra-*.whl")
    environment = folder / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(environment)], check=True)
    python = environment / "bin" / "python"
    target = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                 check=True, capture_output=True, text=True).stdout.strip())
    dependencies = [path for path in site.getsitepackages() if Path(path).is_dir()]
    (target / "dependencies.pth").write_text("".join(f"{path}\n" for path in dependencies))
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", "--target",
                    str(target), str(wheel)], check=True, capture_output=True)
    where = subprocess.run([str(python), "-c", "import orchestra; print(orchestra.__file__)"], check=True,
                           capture_output=True, text=True, cwd=folder, env=_user_environment(python)).stdout
    assert where.startswith(str(target)), where  # the installed wheel, not the clone
    return python


def _user_environment(python: Path) -> dict[str, str]:
    environment = {key: value for key, value in os.environ.items()
                   if key not in ("PYTHONPATH", "VIRTUAL_ENV", "FV3_DACEMODE", "ORCHESTRA_CACHE_DIR")}
    environment["PATH"] = f"{python.parent}{os.pathsep}{environment.get('PATH', '')}"
    return environment


def _run(python: Path, script: Path, mode: str, out: Path, cache: Path) -> subprocess.CompletedProcess:
    environment = _user_environment(python)
    environment.update(FV3_DACEMODE=mode, ORCHESTRA_CACHE_DIR=str(cache))
    process = subprocess.run([str(python), script.name, str(out)], cwd=script.parent, env=environment,
                             capture_output=True, text=True, timeout=600)
    assert process.returncode == 0, f"{script.name} ({mode}) failed:\n{process.stderr[-4000:]}"
    return process


def _same(expected: Path, got: Path) -> None:
    with np.load(expected) as want, np.load(got) as have:
        assert sorted(want.files) == sorted(have.files)
        for name in want.files:
            expected_bytes, got_bytes = (np.atleast_1d(array[name]).view(np.uint8) for array in (want, have))
            assert np.array_equal(expected_bytes, got_bytes), f"{name} differs"


@pytest.mark.parametrize("name", MODELS)
def test_a_users_model_orchestrates_bitwise_and_survives_comments(name, installed_python, tmp_path):
    project = tmp_path / "my_model"  # the user's own folder, outside the repository
    project.mkdir()
    script = project / f"{name}.py"
    shutil.copy(Path(__file__).with_name(f"{name}.py"), script)
    cache = tmp_path / "cache"
    _run(installed_python, script, "Python", tmp_path / "python.npz", cache)
    built = _run(installed_python, script, "BuildAndRun", tmp_path / "built.npz", cache)
    _same(tmp_path / "python.npz", tmp_path / "built.npz")
    assert "Warning" not in built.stderr, built.stderr[-3000:]  # DaCe's and gt4py's go to build_warnings.log

    script.write_text(with_layout_noise(script.read_text()))
    edited = _run(installed_python, script, "Run", tmp_path / "edited.npz", cache)
    _same(tmp_path / "python.npz", tmp_path / "edited.npz")
    assert "loaded from cache" in edited.stderr + edited.stdout and "Warning" not in edited.stderr
    assert not list(project.glob("report-*.json")) and not (project / ".dace.conf").exists()
