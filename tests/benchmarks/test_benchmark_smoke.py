"""``scripts/benchmark.py`` runs end to end at a tiny size and writes its JSON and plot.

Only the numpy variant (no compiled builds) on one rank, one step per batch;
the bandwidth triad runs separately on small arrays.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))


def test_benchmark_writes_table_json_and_plot(tmp_path):
    out = tmp_path / "bench"
    command = [
        sys.executable, str(ROOT / "scripts" / "benchmark.py"), "--sizes", "12", "--nz", "2", "--ranks", "1",
        "--variants", "numpy", "--threads", "1", "--steps", "1", "--repeats", "2", "--warmup", "0",
        "--no-triad", "--out", str(out),
    ]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "12x12x2" in done.stdout
    result = json.loads((out / "benchmark.json").read_text())
    (row,) = result["rows"]
    assert row["variant"] == "numpy" and row["ranks"] == 1 and row["step"]["repeats"] == 2
    assert 0 < row["step"]["p10"] <= row["step"]["median"] <= row["step"]["p90"]
    traffic = result["traffic"]["12"]["2"]
    assert traffic["stencil_calls"] == 46 and traffic["segments"] == 4  # copy + 3 Runge-Kutta stages
    assert 0 < traffic["per_stage_bytes"] < traffic["per_stencil_bytes"]
    assert result["summary"][0]["numpy_ms"] > 0
    assert (out / "benchmark.png").stat().st_size > 10_000


def test_triad_measures_a_plausible_bandwidth():
    from bench_lib.triad import measure_triad

    (result,) = measure_triad(threads=(1,), elements=(1 << 20,), repeats=3)
    assert result.bytes_per_repeat == 24 * (1 << 20)
    assert 0.1 < result.best_gbs < 10_000 and result.best_gbs >= result.median_gbs
