"""Random stencil programs give bitwise the same fields orchestrated as in Python mode.

A few programs from :mod:`tests.fusion.random_programs` (fixed seeds, tiny
domains), each run stencil by stencil (``Python`` mode, ``dace:cpu``: one
library per stencil) and orchestrated in every variant of
:data:`tests.fusion.variants.VARIANTS`. ``scripts/fuzz_programs.py`` runs
hundreds the same way.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.fusion.random_programs import Shape, check_program, differences, generate
from tests.fusion.variants import VARIANTS

#: Seeds whose programs together cover every construct the generator draws
#: (checked by test_the_ci_programs_cover_every_construct).
COVERAGE_SEEDS = (0, 2, 5)

#: Seeds built and compared in CI: each program's Python-mode reference builds
#: one library per stencil (minutes on a shared 2-core machine), so CI builds
#: one; scripts/fuzz_programs.py runs the others and hundreds more.
CI_SEEDS = (0,)


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("random_programs")


@pytest.mark.parametrize("seed", CI_SEEDS)
def test_orchestrated_equals_python_mode_bitwise(seed, work):
    outcome = check_program(generate(seed), work / "programs", work / "cache", VARIANTS)
    assert not outcome.errors, outcome.errors
    assert all(not fields for fields in outcome.differing.values()), outcome.differing
    assert sorted(outcome.differing) == sorted(VARIANTS)
    # the net reaches row blocking: the fused build runs a chain block by block
    generated = [path.read_text() for path in (work / "cache").rglob("*.cpp")]
    assert any("for (int __tile_b" in code for code in generated), "no blocked map in the fused build"


def test_the_ci_programs_cover_every_construct():
    sources = "\n".join(generate(seed).source for seed in COVERAGE_SEEDS)
    for construct in (
        "computation(FORWARD)", "computation(BACKWARD)", "with horizontal(", "tmp = ",
        "[0, 0, -1]", "self.exchange(", "c: float = self.coefficient()", "self.scratch",
    ):
        assert construct in sources, f"no program has {construct!r}; choose other COVERAGE_SEEDS"
    assert "domain=(8, 7, 3)" in sources  # an extended domain (writes into the halo)


def test_generation_is_deterministic_and_varied():
    assert generate(3).source == generate(3).source
    assert generate(3).source != generate(4).source
    assert generate(3, Shape(halo=3)).shape.array == (12, 11, 3)


def test_differences_compare_bits():
    a = {"x": np.array([0.0, np.nan]), "y": np.ones(2)}
    assert differences(a, {"x": np.array([0.0, np.nan]), "y": np.ones(2)}) == []
    assert differences(a, {"x": np.array([-0.0, np.nan]), "y": np.ones(2)}) == ["x"]
    assert differences(a, {"x": a["x"], "y": np.ones(3)}) == ["y"]


def test_the_cpu_passes_are_chosen_in_the_config(tmp_path):
    from orchestra import ConfigurationError, DaceConfig

    config = DaceConfig(None, orchestration="Python", cache_root=tmp_path, cpu_passes=["single_parallel_level"])
    assert config.cpu_passes == ("single_parallel_level",)
    assert DaceConfig(None, orchestration="Python", cache_root=tmp_path).cpu_passes is None
    with pytest.raises(ConfigurationError, match="split_region_maps"):
        DaceConfig(None, orchestration="Python", cache_root=tmp_path, cpu_passes=["fuse_everything"])
