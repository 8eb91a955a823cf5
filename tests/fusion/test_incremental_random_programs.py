"""An incremental build after a random edit is the program a cold build makes: the same fields, bit for bit.

A random program (:mod:`tests.fusion.random_programs`) drawn into two
orchestrated components is built whole; then one of its stencils, drawn
from the seed, is edited (its first output halved at its end), and the
edited model runs with ``split_at=("edited",)``: the cache finds the edit
inside one component and builds the components as programs of their own
instead of the whole model. Its fields must equal, bit for bit, those of a
cold whole build of the edited model (another cache) and of ``Python`` mode
(``dace:cpu`` stencil by stencil).
"""

from __future__ import annotations

import logging
import random

import pytest

from orchestra import DaceConfig
from tests.fusion.random_programs import differences, generate, load_module, run_program

#: Seeds whose edit is tried in CI (each costs a whole build, a split build, a cold build and Python mode).
SEEDS = (0,)
STENCILS = 4


def _config(mode: str, cache, **options) -> DaceConfig:
    return DaceConfig(None, backend="dace:cpu", orchestration=mode, cache_root=cache, exit_after_build=False, **options)


@pytest.mark.parametrize("seed", SEEDS)
def test_an_edit_rebuilt_incrementally_equals_a_cold_build_and_python_mode(seed, tmp_path, caplog):
    edited_stencil = random.Random(seed).randrange(STENCILS)
    edited_part = 0 if edited_stencil < STENCILS // 2 else 1  # two components of consecutive stencils
    program = generate(seed, n_stencils=STENCILS, components=2)
    edited = generate(seed, n_stencils=STENCILS, components=2, edited=edited_stencil)
    folder, cache = tmp_path / "programs", tmp_path / "cache"

    load_module(program, folder, fresh=True)
    before = run_program(program, folder, _config("BuildAndRun", cache))  # the whole model, built cold

    load_module(edited, folder, fresh=True)  # the developer's edit: the same module, one stencil changed
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="orchestra"):
        incremental = run_program(edited, folder, _config("BuildAndRun", cache, split_at=("edited",)))
    messages = [record.getMessage() for record in caplog.records]
    assert any(f"RandomProgram.__call__: split build (split_at edited) at Part{edited_part}:" in m
               for m in messages), messages
    built = sorted(m.split(": building (key")[0].split("] ")[-1] for m in messages if ": building (key" in m)
    assert built == ["Part0.__call__", "Part1.__call__"], built  # the first edit: both components, not the model

    cold = run_program(edited, folder, _config("BuildAndRun", tmp_path / "cold"))
    python = run_program(edited, folder, _config("Python", tmp_path / "python"))
    assert differences(python, cold) == []
    assert differences(python, incremental) == []
    assert differences(before, incremental) != []  # the edit changed what the model computes
