"""Vertical merging (``merge_vertical_maps``): which maps merge, which must not, and bitwise results.

On :class:`tests.fusion.chain_model.ChainModel`: the chain merges, the stencil
reading the level above stays apart, and the merged program equals ``Python``
mode bit for bit.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

from orchestra import DaceConfig
from orchestra.passes.cpu import DEFAULT_CPU_PASSES
from orchestra.passes.fusion import merge_vertical_maps
from orchestra.passes.fusion.planes import plane_of
from tests.fusion.chain_model import chain_fields, expanded_chain, run_chain


def _vertical_maps(sdfg) -> list:
    from dace.sdfg import nodes

    found = []
    for state in sdfg.states():
        scopes = state.scope_dict()
        for node in state.nodes():
            if isinstance(node, nodes.MapEntry) and scopes[node] is None and len(node.map.params) == 1:
                found.append(node)
    return found


@pytest.fixture(scope="module")
def expanded(tmp_path_factory):
    """The chain's SDFG after the optimize stage's simplification, before any CPU pass."""
    return expanded_chain(tmp_path_factory.mktemp("merge_cache"))


def test_the_chain_merges_and_the_level_above_stays_separate(expanded):
    sdfg = copy.deepcopy(expanded)
    before = _vertical_maps(sdfg)
    # laplacian, update, smooth, above over the same levels (column is a FORWARD loop)
    assert len(before) == 4
    assert merge_vertical_maps(sdfg) == 2
    sdfg.validate()
    after = _vertical_maps(sdfg)
    labels = sorted(entry.map.label.split("__")[0] for entry in after)
    assert labels == ["above", "laplacian"]  # above reads out[k + 1], which smooth writes
    assert merge_vertical_maps(sdfg) == 0  # nothing left


@pytest.mark.parametrize(
    "subset,expected",
    [
        ("0:10, 1:9, k", (2, 0)),
        ("0:10, 1:9, k - 1", (2, -1)),
        ("i, j + 1, k + 2", (2, 2)),
        ("0:10, 1:9, 0:k + 1", None),  # a boundary memlet's over-approximation
        ("0:10, 1:9", None),  # no vertical dimension: every iteration writes it
        ("k, 0:3, k", None),  # two dimensions follow k
    ],
)
def test_plane_of_a_subset(subset, expected):
    from dace import subsets

    plane = plane_of(subsets.Range.from_string(subset), "k")
    assert (plane if plane is None else (plane[0], int(plane[1]))) == expected


def test_merged_program_equals_python_mode_bitwise(tmp_path):
    reference = run_chain(DaceConfig(None, backend="dace:cpu", orchestration="Python", cache_root=tmp_path))
    unfused = run_chain(DaceConfig(None, backend="dace:cpu", orchestration="BuildAndRun", cache_root=tmp_path))
    fused = run_chain(
        DaceConfig(
            None, backend="dace:cpu", orchestration="BuildAndRun", cache_root=tmp_path,
            cpu_passes=("merge_vertical_maps",) + DEFAULT_CPU_PASSES,
        )
    )
    for name, expected, got, without in zip(("q", "lap", "out", "total"), reference, fused, unfused):
        assert np.array_equal(expected.view(np.uint8), got.view(np.uint8)), name
        assert np.array_equal(expected.view(np.uint8), without.view(np.uint8)), name
    assert not np.array_equal(reference[3], chain_fields("numpy")[3])  # the program changed the fields


def test_describe_fusion_names_the_fused_kernel_and_why_above_stays_apart(expanded):
    from orchestra.passes.fusion.vertical import describe_fusion

    sdfg = copy.deepcopy(expanded)
    merge_vertical_maps(sdfg)
    described = describe_fusion(sdfg)
    assert ["laplacian", "update", "smooth"] in described["fused"]
    (pair,) = described["not_fused"]
    assert pair["first"].startswith("laplacian") and pair["second"].startswith("above")
    assert pair["why"] == "out is accessed outside one plane"


def _map_over_a_nested_read(window: bool):
    """A map over ``k`` whose body, a nested SDFG, reads ``A`` at level ``k + 1`` and writes ``B`` at ``k``.

    ``window``: the nested SDFG describes ``A`` DaCe 1.x's way, as the one
    element its memlet selects (``A[0]`` inside); otherwise as the caller's
    container, indexed as the caller does (``A[kk + 1]``, DaCe 2's contract).
    """
    import dace

    inner = dace.SDFG("body")
    inner.add_symbol("kk", dace.int64)
    if window:
        inner.add_array("A", [1], dace.float64)
    else:
        inner.add_array("A", [11], dace.float64)
    inner.add_array("B", [10], dace.float64)
    body = inner.add_state()
    tasklet = body.add_tasklet("copy", {"a"}, {"b"}, "b = a")
    body.add_edge(body.add_read("A"), None, tasklet, "a", dace.Memlet("A[0]" if window else "A[kk + 1]"))
    body.add_edge(tasklet, "b", body.add_write("B"), None, dace.Memlet("B[kk]"))

    outer = dace.SDFG("outer")
    outer.add_array("A", [11], dace.float64)
    outer.add_array("B", [10], dace.float64)
    state = outer.add_state()
    entry, exit_ = state.add_map("levels", {"k": "0:10"})
    nested = state.add_nested_sdfg(inner, {"A"}, {"B"}, symbol_mapping={"kk": "k"})
    state.add_memlet_path(state.add_read("A"), entry, nested, dst_conn="A", memlet=dace.Memlet("A[k + 1]"))
    state.add_memlet_path(nested, exit_, state.add_write("B"), src_conn="B", memlet=dace.Memlet("B[k]"))
    return state, entry, exit_


def test_a_nested_sdfgs_accesses_are_read_as_the_callers_indices_or_not_at_all():
    """DaCe 2's nested SDFG indexes the caller's container: no window origin is added to its indices.

    Read the DaCe 1.x way (adding the memlet's base ``k + 1``), the read of
    ``A[k + 1]`` would land at ``2k + 2``: no plane, a merge refused for the
    wrong reason or, for another offset, allowed wrongly. A window-style
    nested SDFG is not read at all (unknown footprint: no merge).
    """
    from orchestra.passes.fusion.planes import footprint

    state, entry, exit_ = _map_over_a_nested_read(window=False)
    accesses = footprint(state, entry, exit_)
    assert [plane_of(subset, "k") for subset, _ in accesses["A"]] == [(0, 1)]
    assert [plane_of(subset, "k") for subset, _ in accesses["B"]] == [(0, 0)]
    state, entry, exit_ = _map_over_a_nested_read(window=True)
    assert [subset for subset, _ in footprint(state, entry, exit_)["A"]] == [None]


def test_a_merged_maps_footprint_is_the_walk_of_its_merged_body(expanded, monkeypatch):
    """The footprint kept for a merged map (both bodies' footprints joined) equals a new walk of its body."""
    from orchestra.passes.fusion import planes, vertical

    sdfg = copy.deepcopy(expanded)
    checked = []
    merge = vertical._merge

    def merging(state, first_entry, second_entry):
        joined = vertical._Footprints(state).joined(first_entry, second_entry)
        merge(state, first_entry, second_entry)
        walked = planes.footprint(state, first_entry, state.exit_node(first_entry))
        as_text = lambda found: sorted((name, str(subset), write) for name, items in found.items()  # noqa: E731
                                       for subset, write in items)
        checked.append(as_text(joined) == as_text(walked))

    monkeypatch.setattr(vertical, "_merge", merging)
    assert merge_vertical_maps(sdfg) == 2
    assert checked == [True, True]
