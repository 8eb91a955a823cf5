"""``scripts/bench_fv3_build.py``: the generated model's shape, and one tiny run end to end.

The run (5 stencils, one per component) skips the Python-mode phase, where
gt4py compiles each stencil one by one (146 s of a 4 min 10 s run on this
2-core machine at a load of 9-12): bitwise equality with Python mode is what
the idiom corpus, the foreign models and the random programs check; here the
warm start must equal the cold build, and every phase must be timed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

from bench_lib.fv3_layout import edited_stencil, plan, shape  # noqa: E402
from bench_lib.fv3_model import callback_sites, model_source  # noqa: E402


def test_the_default_model_has_fv3s_size_and_a_smaller_one_the_same_kind():
    full = shape(plan(324))
    assert full["stencils"] == 324 and full["components"] >= 40 and full["depth"] == 3
    assert full["components_at_depth_3"] == 32 and full["components_at_depth_1"] == 8
    small = shape(plan(40))
    assert small["stencils"] == 40 and small["depth"] == 3 and small["components"] < full["components"]
    tiny = plan(5)
    assert shape(tiny)["stencils"] == 5 and all(len(c.stencils) == 1 for c in tiny.walk())
    source = model_source(5)
    assert callback_sites(source) >= 10 and callback_sites(source) == callback_sites(model_source(324))
    for idiom in ('dace_compiletime_args=["state"]', "dace_nounroll(range(self._n_split))", "horizontal(region[",
                  "computation(FORWARD)", "interval(1, None)", "from __externals__ import"):
        assert idiom in model_source(40), idiom


def test_an_edit_changes_one_stencil_of_a_depth_3_component():
    root = plan(40)
    edited = edited_stencil(root)
    assert any(edited in c.stencils for c in root.walk() if c.depth == 3)
    before, after = (model_source(40, edits=edits).split("\ndef ") for edits in (0, 1))
    assert len(before) == len(after) > 40  # the header, then the 40 stencils (and functions of the header)
    (changed,) = [b for a, b in zip(before, after) if a != b]
    assert changed.split("(")[0].endswith(f"_{edited}")


def test_the_benchmark_times_every_phase_and_the_warm_start_equals_the_cold_build(tmp_path):
    out = tmp_path / "fv3.json"
    command = [sys.executable, str(ROOT / "scripts" / "bench_fv3_build.py"), "--stencils", "5", "--json", str(out),
               "--skip-python-check"]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=1500)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["model"]["stencils"] == 5 and result["model"]["depth"] == 3
    assert result["model"]["halo_updaters"] >= 10
    phases = result["phases"]
    assert list(phases) == ["cold", "warm", "edit"]
    for name in ("cold", "edit"):  # a whole build: every stage timed, in the log and in the manifest
        row = phases[name]
        assert row["builds"] == 1 and row["manifests"] == 1
        assert row["parse_s"] > 0 and row["optimize_s"] > 0 and row["compile_s"] > 0 and row["load_s"] > 0
        assert set(row["manifest_stage_seconds"]) == {"parse", "optimize", "compile"}
        assert 0 < row["lowering_s"] < row["first_call_s"]
        assert row["stencils_found_lowered"] + row["stencils_lowered_here"] == row["stencils_parsed"] > 0
    assert phases["edit"]["stencils_found_lowered"] >= phases["edit"]["stencils_parsed"] - 1  # the edited one only
    warm = phases["warm"]
    assert warm["builds"] == 0 and warm["manifests"] == 0 and warm["load_s"] > 0 and warm["parse_s"] == 0
    for row in phases.values():
        assert row["load_1min_before"] >= 0 and row["load_1min_after"] >= 0 and row["finite"]
        assert "orchestra_bench_fv3_" in row["orchestra_path"]  # the copy of orchestra taken at the start
    assert result["machine"]["cores"] >= 1
    checks = result["checks"]
    assert "orchestrated_equals_python" not in checks
    assert checks["warm_equals_cold"]["equal"] and checks["all_finite"]
