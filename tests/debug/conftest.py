"""Shared fixtures: one build cache per test module, SDFGs of the test model."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from orchestra import DaceConfig
from tests.debug.programs import ThicknessModel, inputs


@pytest.fixture(scope="module")
def cache_root(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("orchestra_debug_cache")


@pytest.fixture(scope="module")
def parsed_sdfg(cache_root):
    """The test model parsed into one SDFG (not optimized, not compiled)."""
    from orchestra.pipeline.stages import parse
    from orchestra.toolchain import dace_settings

    config = DaceConfig(None, backend="dace:cpu", orchestration="BuildAndRun", cache_root=cache_root)
    model = ThicknessModel(config)
    arrays = inputs("clean", "dace:cpu")
    args = tuple(arrays[name] for name in ("num", "den", "h", "ratio", "out"))
    with dace_settings():
        program = model.__orchestra_programs__["__call__"].dace_program(args)
        return parse(program, args, {}).sdfg


def optimized(parsed_sdfg, **options):
    """A copy of ``parsed_sdfg`` through the optimize stage with ``OptimizeOptions(**options)``."""
    from orchestra.pipeline.stages import OptimizeOptions, ParsedProgram, optimize
    from orchestra.toolchain import dace_settings

    with dace_settings():
        return optimize(ParsedProgram(copy.deepcopy(parsed_sdfg), 0.0), OptimizeOptions(**options)).sdfg


@pytest.fixture(scope="module")
def optimized_sdfg(parsed_sdfg):
    """The test model's SDFG after the optimize stage without checks, through the passes a
    build with checks runs (fusion left out: one kernel per stencil)."""
    from orchestra.passes.cpu import UNFUSED_CPU_PASSES

    return optimized(parsed_sdfg, cpu_passes=UNFUSED_CPU_PASSES)


@pytest.fixture
def sdfg(optimized_sdfg, tmp_path):
    """A fresh copy; code generated from it lands under ``tmp_path``."""
    copied = copy.deepcopy(optimized_sdfg)
    copied.build_folder = str(tmp_path / "build")
    return copied
