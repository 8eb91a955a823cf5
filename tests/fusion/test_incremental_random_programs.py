"""An incremental build after a random edit is the program a cold build makes: the same fields, bit for bit.

A random program (:mod:`tests.fusion.random_programs`) drawn into two
orchestrated components is built whole; then one of its stencils, drawn
from the seed, is edited (its first output halved at its end), and the
edited model runs with ``split_at=("edited",)``: the cache finds the edit
inside one component and builds the components as programs of their own
instead of the whole model. Its fields must equal, bit for bit, those of a
cold whole build of the edited model (another cache) and of ``Python`` mode
(``dace:cpu`` stencil by stencil). ``scripts/fuzz_programs.py --edits`` runs
many seeds the same way.
"""

from __future__ import annotations

import logging

import pytest

from tests.fusion.random_programs import check_edit

#: Seeds whose edit is checked in CI (each costs a whole build, a split build, a cold build and Python mode).
SEEDS = (0,)


@pytest.mark.parametrize("seed", SEEDS)
def test_an_edit_rebuilt_incrementally_equals_a_cold_build_and_python_mode(seed, tmp_path, caplog):
    with caplog.at_level(logging.INFO, logger="orchestra"):
        outcome = check_edit(seed, tmp_path)
    assert outcome.differing == {"cold": [], "incremental": []}
    assert outcome.changed  # the edit changed what the model computes
    edited_part = 0 if outcome.edited < 2 else 1  # two components of two consecutive stencils each
    messages = [record.getMessage() for record in caplog.records]
    assert any(f"RandomProgram.__call__: split build (split_at edited) at Part{edited_part}:" in m
               for m in messages), messages
    assert outcome.split_programs == ["Part0.__call__", "Part1.__call__"]  # the first edit: both, not the model
    assert outcome.ok
