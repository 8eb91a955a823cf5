"""DaCe's descriptor walk once per SDFG during connector type inference (orchestra.toolchain.inference_symbols)."""

from __future__ import annotations

import dace
from dace.codegen import codegen
from dace.sdfg import infer_types
from dace.sdfg.state import SDFGState

from orchestra.toolchain.inference_symbols import inference_with_symbols_once

N = dace.symbol("N")


@dace.program
def _cell(a: dace.float64[N], b: dace.float64[N], i: dace.int64):
    if a[i] > 0:
        b[i] = a[i] * 2.0
    else:
        b[i] = -a[i]


@dace.program
def _program(a: dace.float64[N], b: dace.float64[N], c: dace.float64[N], d: dace.float64[N]):
    for i in dace.map[0:N]:
        _cell(a, b, i)
    for i in dace.map[0:N]:
        _cell(b, c, i)
    for i in dace.map[0:N]:
        _cell(c, d, i)


def _sdfg(simplify: bool = False) -> dace.SDFG:
    sdfg = _program.to_sdfg(simplify=simplify)  # simplified, one state holds several nested SDFGs
    sdfg.name = "inference_symbols_program"
    return sdfg


def test_the_same_code_with_fewer_descriptor_and_state_walks(monkeypatch):
    walks, at_states = {"n": 0}, {"n": 0}
    walk, at_state = SDFGState.sdfg_symbols, SDFGState.symbols_defined_at_state

    def counted(self):
        walks["n"] += 1
        return walk(self)

    def counted_at_state(self, **kwargs):
        at_states["n"] += 1
        return at_state(self, **kwargs)

    monkeypatch.setattr(SDFGState, "sdfg_symbols", counted)
    monkeypatch.setattr(SDFGState, "symbols_defined_at_state", counted_at_state)
    plain = [obj.clean_code for obj in codegen.generate_code(_sdfg(simplify=True), validate=False)]
    by_dace, walks["n"] = walks["n"], 0
    at_states_by_dace, at_states["n"] = at_states["n"], 0
    with inference_with_symbols_once():
        once = [obj.clean_code for obj in codegen.generate_code(_sdfg(simplify=True), validate=False)]
    assert once == plain
    assert 0 < walks["n"] < by_dace
    assert 0 < at_states["n"] < at_states_by_dace
    assert SDFGState.sdfg_symbols is counted and infer_types.infer_connector_types.__module__ == infer_types.__name__
    assert SDFGState.symbols_defined_at_state is counted_at_state


def test_inside_an_inference_a_changed_sdfg_is_walked_again(monkeypatch):
    """Widening changes a nested SDFG's symbols mid-inference: its next walk must see the change."""
    seen = []
    widen = infer_types.widen_mapped_symbols

    def widening_that_adds_a_symbol(state, node):
        name = f"added_{len(seen)}"
        before, at_state_before = state.sdfg_symbols(), state.symbols_defined_at_state()
        state.sdfg.add_symbol(name, dace.int32)
        seen.append((name in before or name in at_state_before,
                     name in state.sdfg_symbols() and name in state.symbols_defined_at_state()))
        widen(state, node)

    monkeypatch.setattr(infer_types, "widen_mapped_symbols", widening_that_adds_a_symbol)
    with inference_with_symbols_once():
        infer_types.infer_connector_types(_sdfg())
    assert seen and all(not before and after for before, after in seen)
