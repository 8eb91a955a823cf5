"""The stand-in for DaCe's ``rebase_descendants`` restates what DaCe's does, walking each SDFG once per integration.

Programs of nested DaCe programs three deep (a connector restated at the top
is restated below it too), parsed with and without the stand-in: the parsed
programs are the same text, and the connectors below were restated (so the
comparison is about restated programs, not untouched ones).
"""

from __future__ import annotations

import dace
import numpy as np
import pytest
from dace.sdfg import dealias

from orchestra.observe.program_text import program_text
from orchestra.toolchain import descendant_rebase
from orchestra.toolchain.descendant_rebase import rebase_once_per_integration

#: DaCe's own, taken before any test installs the stand-ins.
DACE_SAME_CONTAINER, DACE_WINDOWED_EDGES = dealias._same_container, dealias._windowed_edges
N = dace.symbol("N")
M = dace.symbol("M")


@dace.program
def _leaf(a: dace.float64[N], b: dace.float64[N]):
    b[:] = a + 1.0


@dace.program
def _middle(a: dace.float64[N], b: dace.float64[N]):
    _leaf(a, b)
    _leaf(b, a)


@dace.program
def _fixed(a: dace.float64[20], b: dace.float64[20]):
    _middle(a, b)


@dace.program
def _other_symbol(a: dace.float64[M], b: dace.float64[M]):
    _middle(a, b)


@dace.program
def _windows(a: dace.float64[20], b: dace.float64[20]):
    _middle(a[2:12], b[4:14])


@dace.program
def _rows(a: dace.float64[6, M], b: dace.float64[6, M]):
    for i in range(6):
        _middle(a[i], b[i])


def _parsed(program) -> dace.SDFG:
    return program.to_sdfg(simplify=False, validate=False)


def _leaf_connectors(sdfg: dace.SDFG) -> list:
    """The shapes of every ``_leaf``'s connectors, at whatever depth."""
    return [desc.shape for nested in sdfg.all_sdfgs_recursive() if nested.name.endswith("_leaf")
            for name, desc in nested.arrays.items() if not desc.transient]


@pytest.mark.parametrize("program", [_fixed, _other_symbol, _windows, _rows], ids=lambda p: p.name)
def test_the_stand_in_parses_what_dace_parses(program, monkeypatch):
    calls = []
    original = descendant_rebase.rebase_descendants

    def counted(*args):
        calls.append(args[1])
        return original(*args)

    monkeypatch.setattr(descendant_rebase, "rebase_descendants", counted)
    expected = _parsed(program)
    with rebase_once_per_integration():
        assert dealias.rebase_descendants is counted  # installed for the block
        restated = _parsed(program)
    assert dealias.rebase_descendants is not counted  # DaCe's again
    assert calls, "the program restated no connector below another: the comparison would prove nothing"
    assert program_text(restated) == program_text(expected)
    assert _leaf_connectors(restated) == _leaf_connectors(expected)


def test_a_connector_restated_in_the_callers_symbols_gets_them_and_computes_the_same():
    with rebase_once_per_integration():
        sdfg = _parsed(_other_symbol)
    shapes = _leaf_connectors(sdfg)
    assert shapes and all(str(shape[0]) == "M" for shape in shapes), shapes  # written in the caller's symbol
    assert all("M" in nested.symbols for nested in sdfg.all_sdfgs_recursive() if nested.name.endswith("_leaf"))
    a, b = np.arange(7.0), np.zeros(7)
    sdfg(a=a, b=b, M=7)
    assert np.array_equal(b, np.arange(7.0) + 1.0) and np.array_equal(a, np.arange(7.0) + 2.0)


def _middle_and_leaf(window: bool = False) -> dace.SDFG:
    """``middle`` (symbols N and K, an int32) passes its container ``x[N]`` to ``leaf``'s connector ``y[N]``
    (``window``: ``x[2:N]`` to ``y[N - 2]``, as SDFGs made for DaCe 1 do)."""
    middle = dace.SDFG("middle")
    middle.add_symbol("K", dace.int32)
    middle.add_array("x", [N], dace.float64)
    leaf = dace.SDFG("leaf")
    leaf.add_array("y", [N - 2] if window else [N], dace.float64)
    leaf.add_state().add_access("y")
    state = middle.add_state()
    node = state.add_nested_sdfg(leaf, {"y"}, set(), symbol_mapping={"N": N})
    state.add_edge(state.add_read("x"), None, node, "y", dace.Memlet("x[2:N]" if window else "x[0:N]"))
    return middle


def test_a_restated_connector_gets_the_symbols_it_lacks_with_the_callers_types():
    # x restated from [N] to [K]: leaf's y follows, and leaf needs K, typed as middle defines it
    restated = {}
    for label, rebase in (("dace", dealias.rebase_descendants), ("orchestra", descendant_rebase.rebase_descendants)):
        middle = _middle_and_leaf()
        old = middle.arrays["x"]
        middle.arrays["x"] = new = dace.data.Array(dace.float64, [dace.symbol("K")])
        rebase(middle, "x", old, new)
        restated[label] = middle
    (leaf,) = [nested for nested in restated["orchestra"].all_sdfgs_recursive() if nested.name == "leaf"]
    assert [str(s) for s in leaf.arrays["y"].shape] == ["K"] and leaf.symbols["K"] == dace.int32
    assert program_text(restated["orchestra"]) == program_text(restated["dace"])


def _connections(sdfg: dace.SDFG):
    """(parent descriptor, connector descriptor, the nested SDFG's symbols, node) of every connector below ``sdfg``."""
    for nested in sdfg.all_sdfgs_recursive():
        node = nested.parent_nsdfg_node
        if node is None:
            continue
        for edge in nested.parent.all_edges(node):
            connector = edge.dst_conn if edge.dst is node else edge.src_conn
            if connector in nested.arrays and edge.data.data in nested.parent_sdfg.arrays:
                yield nested.parent_sdfg.arrays[edge.data.data], nested.arrays[connector], set(nested.symbols), node


def test_same_container_answers_as_dace_does_inside_and_outside_an_integration():
    renamed = _middle_and_leaf()
    (node,) = [n for s in renamed.states() for n in s.nodes() if isinstance(n, dace.sdfg.nodes.NestedSDFG)]
    node.symbol_mapping["N"] = dace.symbol("K")  # the connector's N is the caller's K
    programs = [renamed, _middle_and_leaf()] + [_parsed(p) for p in (_fixed, _other_symbol, _windows, _rows)]
    answers = []
    for program in programs:
        for connection in _connections(program):
            expected = DACE_SAME_CONTAINER(*connection)
            assert descendant_rebase.same_container(*connection) == expected
            token = descendant_rebase._integration.set(descendant_rebase._Integration())
            try:
                assert descendant_rebase.same_container(*connection) == expected  # renamed symbols remembered
                assert descendant_rebase.same_container(*connection) == expected
            finally:
                descendant_rebase._integration.reset(token)
            answers.append(expected)
    assert True in answers and False in answers  # both answers were compared


def test_windowed_edges_are_dace_s_in_dace_s_order():
    programs = [_middle_and_leaf(window=True), _middle_and_leaf()] + [_parsed(p) for p in (_fixed, _windows, _rows)]
    found = []
    for program in programs:
        for nested in program.all_sdfgs_recursive():
            if nested.parent_nsdfg_node is None:
                continue
            symbol_types = dealias.SymbolResolver().defined_at(nested.parent, nested.parent_nsdfg_node)
            expected = list(DACE_WINDOWED_EDGES(nested, symbol_types))
            assert list(descendant_rebase.windowed_edges(nested, symbol_types)) == expected
            found += expected
    assert found  # a window was among them: y of the DaCe 1 style leaf


def test_another_dace_keeps_its_own_functions(monkeypatch):
    def rebase_descendants(sdfg, name, old_desc, new_desc):  # a DaCe whose function differs
        return None

    monkeypatch.setattr(dealias, "rebase_descendants", rebase_descendants)
    assert not descendant_rebase.recognizes(dealias)
    original = dealias.integrate_nested_sdfg
    with rebase_once_per_integration():
        assert dealias.integrate_nested_sdfg is original and dealias.rebase_descendants is rebase_descendants
