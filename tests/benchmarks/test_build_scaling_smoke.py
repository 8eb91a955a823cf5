"""``scripts/build_scaling.py`` runs end to end on a tiny model: a cold build, then a one-stencil edit."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _row(tmp_path: Path, *options: str) -> dict:
    """The JSON row of ``build_scaling.py`` on 3 stencils, 2 to a component, with ``options``."""
    out = tmp_path / "scaling.json"
    command = [sys.executable, str(ROOT / "scripts" / "build_scaling.py"), "--stencils", "3",
               "--per-component", "2", *options, "--json", str(out)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (row,) = json.loads(out.read_text())
    return row


def test_build_scaling_times_a_cold_build_and_an_edit_that_lowers_one_stencil(tmp_path):
    row = _row(tmp_path)
    assert row["stencils"] == 3 and row["components"] == 2
    # cold: every stencil lowered, by the builder or (on a machine with an idle core) its lowering process
    found, lowered = map(int, re.search(r"(\d) of 3 found lowered, (\d) lowered here", row["cold"]["parse_line"]).groups())
    assert found + lowered == 3
    assert found == 0 or "process lowering beside the builder (3 stencils to lower)" in row["cold"]["parse_line"]
    assert "2 of 3 found lowered, 1 lowered here" in row["edit"]["parse_line"]  # only the edited stencil
    assert "2 found restated" in row["edit"]["parse_line"]  # the unchanged ones: as the cold build restated them
    for phase in ("cold", "edit"):
        assert row[phase]["first_call_s"] >= row[phase]["compiled_s"] > 0 and row[phase]["builds"] == 1


def test_a_split_build_edit_rebuilds_only_the_edited_component(tmp_path):
    row = _row(tmp_path, "--split-depth", "1")
    assert row["cold"]["builds"] == 2  # one program per component, none for the model
    assert row["edit"]["builds"] == 1  # the component holding stencil 0
    assert "1 of 2 found lowered, 1 lowered here" in row["edit"]["parse_line"]


def test_split_at_edited_builds_whole_then_splits_at_the_edited_component(tmp_path):
    row = _row(tmp_path, "--split-at", "edited")
    assert row["cold"]["builds"] == 1  # no earlier build: the whole model, one program
    assert row["edit"]["builds"] == 2  # split at the edited component's class: both components are programs
    assert row["edit2"]["builds"] == 1  # the edited component alone
    assert "1 of 2 found lowered, 1 lowered here" in row["edit2"]["parse_line"]
