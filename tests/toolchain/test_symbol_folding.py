"""The stand-in for DaCe's ``fold_symbol_mapping`` skips the walk only where DaCe's would fold nothing.

Programs of nested DaCe programs three deep, simplified with DaCe's function
and inside :func:`folding_only_where_possible`: the simplified programs are
the same text, and the comparison covers both paths (integrations whose
mapping may fold and ran DaCe's function, and integrations that skipped it).
"""

from __future__ import annotations

import copy

import dace
import pytest
from dace.sdfg import dealias
from dace.transformation.passes.simplify import SimplifyPass

from orchestra.observe.program_text import program_text
from orchestra.toolchain import symbol_folding
from orchestra.toolchain.symbol_folding import folding_only_where_possible, may_fold, recognizes

N = dace.symbol("N")
M = dace.symbol("M")


@dace.program
def _leaf(a: dace.float64[N], b: dace.float64[N]):
    b[:] = a + 1.0


@dace.program
def _point(x: dace.float64[2], y: dace.float64[2]):
    y[1] = x[0] + 1.0


@dace.program
def _middle(a: dace.float64[N], b: dace.float64[N]):
    for _ in range(3):  # more than one state: inlined by DaCe's multistate inlining, which integrates...
        _leaf(a, b)
        for i in dace.map[0:N - 1]:  # ...the nested SDFGs left in it (inside maps, not inlined)
            _point(a[i:i + 2], b[i:i + 2])


@dace.program
def _fixed(a: dace.float64[20], b: dace.float64[20]):
    _middle(a, b)


@dace.program
def _other_symbol(a: dace.float64[M], b: dace.float64[M]):
    _middle(a, b)


def _simplified(sdfg: dace.SDFG) -> str:
    SimplifyPass(validate=False, validate_all=False, verbose=False).apply_pass(sdfg, {})
    return program_text(sdfg, numbering=False)


def test_written_for_the_installed_dace():
    assert recognizes(dealias.fold_symbol_mapping)
    assert not recognizes(lambda sdfg, symbols=None: {})


@pytest.mark.parametrize("program", [_fixed, _other_symbol], ids=lambda p: p.name)
def test_simplified_programs_are_dace_s(program, monkeypatch):
    parsed = program.to_sdfg(simplify=False, validate=False)
    expected = _simplified(copy.deepcopy(parsed))
    answers = []
    original = symbol_folding.may_fold

    def counted(sdfg):
        answers.append(original(sdfg))
        return answers[-1]

    monkeypatch.setattr(symbol_folding, "may_fold", counted)
    with folding_only_where_possible():
        assert getattr(dealias.fold_symbol_mapping, "__orchestra_stand_in__", False)
        assert _simplified(parsed) == expected
    assert dealias.fold_symbol_mapping is not None and not getattr(
        dealias.fold_symbol_mapping, "__orchestra_stand_in__", False)  # restored
    assert False in answers  # integrations in simplify, which skipped DaCe's walk


def _unfolded() -> dace.SDFG:
    """A parent with ``A[M]`` passed to a nested SDFG written in ``N``, mapped ``{'N': 'M'}``, not yet integrated."""
    inner = dace.SDFG("inner")
    inner.add_symbol("N", dace.int64)
    inner.add_array("a", [N], dace.float64)
    state = inner.add_state()
    state.add_mapped_tasklet("double", {"i": "0:N"}, {"x": dace.Memlet("a[i]")}, "y = 2 * x",
                             {"y": dace.Memlet("a[i]")}, external_edges=True)
    outer = dace.SDFG("outer")
    outer.add_symbol("M", dace.int64)
    outer.add_array("A", [M], dace.float64)
    top = outer.add_state()
    node = top.add_nested_sdfg(inner, {"a"}, {"a"}, symbol_mapping={"N": "M"})
    top.add_edge(top.add_read("A"), None, node, "a", dace.Memlet("A[0:M]"))
    top.add_edge(node, "a", top.add_write("A"), None, dace.Memlet("A[0:M]"))
    return outer


def test_an_integration_that_folds_is_dace_s():
    folded_by_dace = _unfolded()
    dealias.integrate_nested_sdfg(next(s for s in folded_by_dace.all_sdfgs_recursive() if s.name == "inner"))
    folded_here = _unfolded()
    with folding_only_where_possible():
        inner = next(s for s in folded_here.all_sdfgs_recursive() if s.name == "inner")
        assert may_fold(inner)
        dealias.integrate_nested_sdfg(inner)
    assert "M" in next(s for s in folded_here.all_sdfgs_recursive() if s.name == "inner").symbols  # N became M
    assert program_text(folded_here, numbering=False) == program_text(folded_by_dace, numbering=False)


def _nested(mapping: dict) -> dace.SDFG:
    """The inner SDFG of a parent whose nested SDFG node maps ``mapping``; the parent holds a container ``P``."""
    inner = dace.SDFG("inner")
    inner.add_symbol("N", dace.int64)
    inner.add_state()
    outer = dace.SDFG("outer")
    outer.add_symbol("M", dace.int64)
    outer.add_array("P", [4], dace.float64)
    outer.add_state().add_nested_sdfg(inner, {}, {}, symbol_mapping=mapping)
    return inner


@pytest.mark.parametrize("mapping, folds", [
    ({"N": "M"}, True),           # another plain name of the parent: DaCe may fold it
    ({"N": "N"}, False),          # the same name: nothing to fold
    ({"N": "M + 1"}, False),      # an expression: kept on the node
    ({"N": "P"}, False),          # a container of the parent: kept
    ({"N": 20}, False),           # a constant: kept
])
def test_may_fold_reads_the_mapping_as_dace_does(mapping, folds):
    assert may_fold(_nested(mapping)) is folds


def test_a_top_level_sdfg_folds_nothing():
    assert may_fold(dace.SDFG("alone")) is False
