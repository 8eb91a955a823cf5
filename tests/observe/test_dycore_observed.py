"""The driver's dynamical core seen from outside, from one build (1 rank, 12x12x4).

* Its second call is recorded (``ORCHESTRA_RECORD``) and replayed bit for bit
  by ``orchestra replay --check`` in another process, halo callbacks included.
* The bytes the kernel profile counts for each stencil
  (:func:`orchestra.passes.kernel_timers.kernel_traffic`, from the program
  optimized without fusion) equal the benchmark's per-stencil traffic model
  (``scripts/bench_lib/traffic.py``, from a trace of the Python-mode model),
  except the Bernoulli function. It accumulates the free surface over the
  levels: one map before a loop over the levels, one in it, one after, each
  counted once where it stands (not per level), each moving the 2-D
  accumulator, where the model counts the stencil's fields once. The two
  counts agree at this size by accident and differ at others (216 000 against
  151 200 bytes at 24x24x1). The build itself is fused: its merged kernels
  are named by all their stencils and move fewer bytes in all.
"""

from __future__ import annotations

import collections
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from orchestra.observe.replay.recording import MANIFEST_NAME

ROOT = Path(__file__).resolve().parents[2]
SIZE, NZ = 12, 4


@pytest.fixture(scope="module")
def dycore(tmp_path_factory):
    """(model, its orchestrated program, the recording folder, h before the recorded call)."""
    records = tmp_path_factory.mktemp("records")
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(ROOT / "scripts"))
        patch.setenv("ORCHESTRA_RECORD", str(records))
        from bench_lib.dycore import build_model, communicator

        model = build_model("orchestrated", SIZE, NZ, communicator(), str(tmp_path_factory.mktemp("cache")))
        model.dycore()
        h_before = np.asarray(model.state.h).copy()
        model.dycore()
    program = model.dycore.__dict__["__orchestra_programs__"]["__call__"]
    return model, program, records / "DynamicalCore.__call__" / "rank0", h_before


def _bits_equal(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def test_the_dycore_records_and_replays_bitwise(dycore):
    model, _program, folder, h_before = dycore
    manifest = json.loads((folder / MANIFEST_NAME).read_text())
    assert len(manifest["callbacks"]) > 0  # halo updates (on one tile they change nothing) and scalar getters
    h_name = next(a["name"] for a in manifest["arguments"] if a["name"].endswith("state_h"))
    assert _bits_equal(np.load(folder / "before" / f"{h_name}.npy"), h_before)
    assert _bits_equal(np.load(folder / "after" / f"{h_name}.npy"), np.asarray(model.state.h))
    command = [sys.executable, "-m", "orchestra.cli", "replay", str(folder), "--check"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


def _modelled_bytes(monkeypatch) -> collections.Counter:
    """Bytes per stencil and step of the benchmark's per-stencil traffic model (Python mode)."""
    monkeypatch.syspath_prepend(str(ROOT / "scripts"))
    from bench_lib import dycore as bench_dycore
    from bench_lib import traffic

    python_mode = bench_dycore.build_model("numpy", SIZE, NZ, bench_dycore.communicator(), None)
    modelled: collections.Counter[str] = collections.Counter()
    for segment in traffic.trace_step(python_mode).segments:
        for name, accesses in segment:
            modelled[name] += 8 * sum(a.read_cells * a.read + a.write_cells * a.write for a in accesses)
    return modelled


def _unfused_sdfg(program):
    """The program parsed and optimized again without fusion (not compiled): one kernel per stencil call."""
    from orchestra.passes.cpu import UNFUSED_CPU_PASSES
    from orchestra.pipeline.stages import OptimizeOptions, optimize, parse
    from orchestra.toolchain import dace_settings

    with dace_settings():
        return optimize(parse(program.dace_program(), (), {}), OptimizeOptions(cpu_passes=UNFUSED_CPU_PASSES)).sdfg


def test_kernel_bytes_match_the_traffic_model(dycore, monkeypatch):
    import dace

    from orchestra.observe.kernel_profile import stencil_sources
    from orchestra.passes.kernel_timers import kernel_traffic

    _model, program, _folder, _h = dycore
    modelled = _modelled_bytes(monkeypatch)
    assert len(modelled) == 10

    counted: collections.Counter[str] = collections.Counter()
    for kernel in kernel_traffic(_unfused_sdfg(program)).values():
        counted[kernel["stencil"]] += kernel["bytes"]
    assert set(counted) == set(modelled)
    assert set(counted) <= set(stencil_sources(program.dace_program()))  # each named with its source line
    for name in modelled:
        if name == "bernoulli_function":  # a vertical accumulation: see the module docstring
            assert counted[name] > 0
        else:
            assert counted[name] == modelled[name], name

    # The build itself (fusion on by default): merged kernels are named by all their stencils,
    # every stencil is still named, and the fused kernels move less than the stencils would alone.
    fused = kernel_traffic(dace.SDFG.from_file(str(Path(program.fast_caller.origin["entry"]) / "program.sdfgz")))
    named = {name for kernel in fused.values() for name in kernel["stencils"]}
    assert named == set(modelled)
    merged = [kernel for kernel in fused.values() if len(kernel["stencils"]) > 1]
    assert merged and all(kernel["stencil"] == "+".join(kernel["stencils"]) for kernel in merged)
    assert sum(kernel["bytes"] for kernel in fused.values()) < sum(counted.values())
