"""The kernel profile: time per stencil and kernel, bytes each must move, fraction of bandwidth.

A model with two stencils of known traffic runs with ``profile="kernels"``:
it must be another cache entry than the plain build and compute the same
bits; the report must name both stencils with their source lines, count the
calls, give each a positive time, and give exactly the bytes the benchmark's
per-stencil traffic model counts (each field read once over the region read,
each field written once over the region written). After the report, the
ended program refuses a call with a clear error.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from gt4py.cartesian.gtscript import PARALLEL, Field, computation, interval

from orchestra import DaceConfig, FrozenStencil, OrchestraError, orchestrate
from orchestra.errors import ConfigurationError
from orchestra.observe.kernel_profile import format_profile, kernel_report

FloatField = Field[np.float64]
SHAPE = (10, 9, 4)  # arrays, halo of 1 around the domain
DOMAIN = (8, 7, 4)


def scale(x: FloatField, y: FloatField):
    with computation(PARALLEL), interval(...):
        y = 2.0 * x


def smooth(y: FloatField, z: FloatField):
    with computation(PARALLEL), interval(...):
        z = 0.5 * (y[-1, 0, 0] + y[1, 0, 0])


class Model:
    def __init__(self, config: DaceConfig) -> None:
        self.scale = FrozenStencil(scale, backend=config.backend, origin=(1, 1, 0), domain=DOMAIN)
        self.smooth = FrozenStencil(smooth, backend=config.backend, origin=(1, 1, 0), domain=DOMAIN)
        orchestrate(obj=self, config=config)

    def __call__(self, x, y, z):
        self.scale(x, y)
        self.smooth(y, z)


def _run(config: DaceConfig, calls: int) -> tuple[Model, list[np.ndarray]]:
    rng = np.random.default_rng(5)
    arrays = [rng.random(SHAPE) for _ in range(3)]
    model = Model(config)
    for _ in range(calls):
        model(*arrays)
    return model, arrays


def _profiled(tmp_path, passes):
    """The report of the model profiled over 3 calls, checked bitwise against the plain build."""
    _plain, expected = _run(DaceConfig(backend="dace:cpu", orchestration="BuildAndRun", cache_root=tmp_path,
                                       cpu_passes=passes), 3)
    config = DaceConfig(backend="dace:cpu", orchestration="BuildAndRun", cache_root=tmp_path, profile="kernels",
                        cpu_passes=passes)
    model, got = _run(config, 3)
    for a, b in zip(got, expected):
        np.testing.assert_array_equal(a, b)
    assert len(list(tmp_path.glob("Model.__call__/*/COMPLETE"))) == 2  # another program, another entry
    combined = kernel_report(path=tmp_path / "kernels.json")
    assert json.loads((tmp_path / "kernels.json").read_text())["Model.__call__"]["calls"] == [3]
    return model, got, combined["Model.__call__"]


CELLS = DOMAIN[0] * DOMAIN[1] * DOMAIN[2]
#: scale reads x and writes y over the domain; smooth reads y one cell wider along I, writes z
SCALE_BYTES, SMOOTH_BYTES = 8 * 2 * CELLS, 8 * ((DOMAIN[0] + 2) * DOMAIN[1] * DOMAIN[2] + CELLS)


def _where(stencil) -> str:
    return f"test_kernel_profile.py:{stencil.__code__.co_firstlineno}"


def test_kernel_profile_names_stencils_with_their_traffic(tmp_path):
    from orchestra.passes.cpu import UNFUSED_CPU_PASSES

    model, got, entry = _profiled(tmp_path, UNFUSED_CPU_PASSES)
    assert entry["calls"] == [3]
    stencils = entry["stencils"]
    assert set(stencils) == {"scale", "smooth"}
    assert stencils["scale"]["source"] == _where(scale)
    assert stencils["scale"]["bytes"] == SCALE_BYTES
    assert stencils["smooth"]["bytes"] == SMOOTH_BYTES
    for figures in stencils.values():
        assert figures["seconds"] > 0 and 0 < figures["fraction_of_bandwidth"]
    assert entry["program_s"] >= sum(s["seconds"] for s in stencils.values())

    with pytest.raises(OrchestraError, match="ended by orchestra.kernel_report"):
        model(*got)


def test_a_fused_kernel_is_profiled_as_all_its_stencils(tmp_path):
    """The default passes merge the two stencils into one map over k: one kernel, named by
    both, moving what enters and leaves it (here as much as the two: smooth reads y wider than
    scale writes it, so y is read from memory; the write of y is kept, y is the model's)."""
    _model, _got, entry = _profiled(tmp_path, None)
    (name,) = entry["stencils"]
    fused = entry["stencils"][name]
    assert name == "scale+smooth" and fused["source"] == f"{_where(scale)} {_where(smooth)}"
    assert fused["bytes"] == SCALE_BYTES + SMOOTH_BYTES
    assert fused["seconds"] > 0 and entry["program_s"] >= fused["seconds"]
    table = format_profile({"Model.__call__": entry})  # long names and sources are printed whole
    assert f"\n    {_where(scale)} {_where(smooth)}\n" in table and "\n  scale+smooth\n" in table


def test_an_unknown_profile_is_refused(tmp_path):
    with pytest.raises(ConfigurationError, match="unknown profile 'kernel'.*kernels"):
        DaceConfig(backend="dace:cpu", orchestration="BuildAndRun", cache_root=tmp_path, profile="kernel")
