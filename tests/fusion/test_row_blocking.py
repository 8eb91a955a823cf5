"""Row blocking (``tile_fused_maps``): the skews the dependences need, and bitwise results.

On :class:`tests.fusion.chain_model.ChainModel`, merged into one vertical map
of three horizontal maps (``laplacian`` writes ``lap`` from ``q`` read at rows
``i - 1 .. i + 1``; ``update`` writes ``q`` in place from ``lap``; ``smooth``
reads ``q`` at rows ``i - 1 .. i + 1`` on a domain one row wider), with
blocks of four rows. ``update`` must run one row behind ``laplacian`` (it
overwrites a row of ``q`` that ``laplacian`` still reads for the row above),
and ``smooth`` behind ``update``. With the skews set to zero the blocked
program computes something else, so the bitwise test can fail.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

from orchestra import DaceConfig
from orchestra.passes.cpu import DEFAULT_CPU_PASSES
from orchestra.passes.fusion import FUSION_PASSES, merge_vertical_maps, tile_fused_maps, tiling
from tests.fusion.chain_model import chain_fields, expanded_chain, run_chain


@pytest.fixture(scope="module")
def merged(tmp_path_factory):
    sdfg = expanded_chain(tmp_path_factory.mktemp("blocking_cache"))
    merge_vertical_maps(sdfg)
    return sdfg


def _plans(sdfg, budget: int) -> dict:
    from dace.sdfg import nodes

    plans = {}
    for state in sdfg.states():
        children = state.scope_children()
        for entry in children[None]:
            if isinstance(entry, nodes.MapEntry) and len(entry.map.params) == 1:
                plans[entry.map.label.split("__")[0]] = tiling.plan_blocks(state, entry, children, budget)
    return plans


def test_skews_follow_the_dependences(merged):
    plans = _plans(merged, budget=1)
    chain = plans["laplacian"]
    assert chain.rows == tiling.MIN_BLOCK_ROWS
    assert [(u.entry.map.label.split("__")[0], u.begin, u.end, u.skew) for u in chain.units] == [
        ("laplacian", 0, 7, 0),
        ("update", 0, 7, 1),  # overwrites q[i + 2], which laplacian reads at rows i + 1 .. i + 3
        ("smooth", 0, 9, 1),  # reads q at rows i .. i + 2 that update writes at i + 2
    ]
    assert (chain.first_block, chain.last_block) == (0, 2)
    assert plans["above"] == "fewer than two horizontal maps"


def test_a_level_that_fits_one_block_is_left_alone(merged):
    assert _plans(merged, budget=tiling.BLOCK_BUDGET_BYTES)["laplacian"] == "one block holds every row"
    assert tile_fused_maps(copy.deepcopy(merged)) == 0


def test_blocking_adds_one_block_loop_and_describes_it(merged):
    from orchestra.passes.fusion.tiling import describe_blocking

    assert {"kernel": ["laplacian", "update", "smooth"], "blocked": False, "why": "one block holds every row"} in (
        describe_blocking(merged)
    )
    sdfg = copy.deepcopy(merged)
    assert tile_fused_maps(sdfg, budget=1) == 1
    sdfg.validate()
    tiled = [n for s in sdfg.states() for n in s.nodes() if "_blocks" in getattr(n, "label", "")]
    assert len(tiled) == 2  # one entry, one exit
    described = describe_blocking(sdfg)
    assert {"kernel": ["laplacian", "update", "smooth"], "blocked": True, "blocks": 3} in described
    assert {"kernel": ["above"], "blocked": False, "why": "fewer than two horizontal maps"} in described


def _blocked(tmp_path) -> list[np.ndarray]:
    return run_chain(
        DaceConfig(
            None, backend="dace:cpu", orchestration="BuildAndRun", cache_root=tmp_path,
            cpu_passes=FUSION_PASSES + DEFAULT_CPU_PASSES, fusion_block_bytes=1,
        )
    )


def test_blocked_program_equals_python_mode_bitwise_and_needs_its_skews(tmp_path, monkeypatch):
    reference = run_chain(DaceConfig(None, backend="dace:cpu", orchestration="Python", cache_root=tmp_path))
    for name, expected, got in zip(("q", "lap", "out", "total"), reference, _blocked(tmp_path / "skewed")):
        assert np.array_equal(expected.view(np.uint8), got.view(np.uint8)), name
    assert not np.array_equal(reference[0], chain_fields("numpy")[0])  # the program changed q
    monkeypatch.setattr(tiling, "_skews", lambda rows: [0] * len(rows))
    unskewed = _blocked(tmp_path / "unskewed")
    assert not all(np.array_equal(a, b) for a, b in zip(reference, unskewed))


def test_the_block_budget_is_checked_and_keyed(tmp_path):
    from orchestra.errors import ConfigurationError
    from orchestra.pipeline.stages import OptimizeOptions

    for bad in (0, -1, 1.5, True, "64k"):
        with pytest.raises(ConfigurationError, match="fusion_block_bytes"):
            DaceConfig(None, orchestration="Python", cache_root=tmp_path, fusion_block_bytes=bad)
    assert OptimizeOptions(fusion_block_bytes=1).as_key() != OptimizeOptions().as_key()
