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


def _sdfg() -> dace.SDFG:
    sdfg = _program.to_sdfg(simplify=False)
    sdfg.name = "inference_symbols_program"
    return sdfg


def test_the_same_code_with_fewer_descriptor_walks(monkeypatch):
    walks = {"n": 0}
    walk = SDFGState.sdfg_symbols

    def counted(self):
        walks["n"] += 1
        return walk(self)

    monkeypatch.setattr(SDFGState, "sdfg_symbols", counted)
    plain = [obj.clean_code for obj in codegen.generate_code(_sdfg(), validate=False)]
    by_dace, walks["n"] = walks["n"], 0
    with inference_with_symbols_once():
        once = [obj.clean_code for obj in codegen.generate_code(_sdfg(), validate=False)]
    assert once == plain
    assert 0 < walks["n"] < by_dace
    assert SDFGState.sdfg_symbols is counted and infer_types.infer_connector_types.__module__ == infer_types.__name__


def test_inside_an_inference_a_changed_sdfg_is_walked_again(monkeypatch):
    """Widening changes a nested SDFG's symbols mid-inference: its next walk must see the change."""
    seen = []
    widen = infer_types.widen_mapped_symbols

    def widening_that_adds_a_symbol(state, node):
        before = state.sdfg_symbols()
        state.sdfg.add_symbol(f"added_{len(seen)}", dace.int32)
        seen.append((f"added_{len(seen)}" in before, f"added_{len(seen)}" in state.sdfg_symbols()))
        widen(state, node)

    monkeypatch.setattr(infer_types, "widen_mapped_symbols", widening_that_adds_a_symbol)
    with inference_with_symbols_once():
        infer_types.infer_connector_types(_sdfg())
    assert seen and all(not before and after for before, after in seen)
