"""A failed build leaves nothing in the user's working directory.

DaCe saves an SDFG that fails validation as ``_dacegraphs/invalid.sdfgz`` in
the current directory (``failing.sdfgz`` on a code-generation failure); a
model run from a user's folder found that folder there after any failed
build. The build moves such files into its staging folder and names them in
the error. Here a real DaCe validation failure (an SDFG with no state) runs
inside the build's guard.
"""

from __future__ import annotations

import pytest

from orchestra.errors import BuildError
from orchestra.pipeline.build import _dace_debug_files_into


def _failing_validation() -> None:
    import dace

    try:
        dace.SDFG("no_states").validate()
    except Exception as error:  # noqa: BLE001 (what the optimize stage does with it)
        raise BuildError(f"optimizing no_states failed: {error}") from error


def test_dace_s_copy_of_an_invalid_sdfg_moves_into_the_staging_folder(tmp_path, monkeypatch):
    work, staging = tmp_path / "user_folder", tmp_path / "staging"
    work.mkdir()
    staging.mkdir()
    monkeypatch.chdir(work)
    with pytest.raises(BuildError, match=r"DaCe's copy of the failing SDFG: .*dace_debug/invalid\.sdfgz") as failed:
        with _dace_debug_files_into(staging):
            _failing_validation()
    assert list(work.iterdir()) == []  # no _dacegraphs left behind
    assert (staging / "dace_debug" / "invalid.sdfgz").is_file()
    assert "at least one state" in str(failed.value)


def test_files_the_user_had_there_stay(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    mine = tmp_path / "_dacegraphs" / "program.sdfgz"
    mine.parent.mkdir()
    mine.write_text("the user's own")
    with pytest.raises(BuildError):
        with _dace_debug_files_into(tmp_path / "staging"):
            _failing_validation()
    assert mine.read_text() == "the user's own"
    assert sorted(p.name for p in mine.parent.iterdir()) == ["program.sdfgz"]
