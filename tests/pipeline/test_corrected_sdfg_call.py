"""DaCe's ``_parse_sdfg_call`` with orchestra's corrections walks a nested SDFG's symbols once, same program.

The closure-array correction has its own test (``test_callback_bindings``);
here programs where it changes nothing: a nested program given as a DaCe
program (converted) and as an SDFG, with symbols that only the nested
program uses (its sizes and a loop bound). The corrected method must parse
them to the program DaCe's own lines make, while walking each nested SDFG
for its free symbols once instead of twice.
"""

from __future__ import annotations

import sys

import dace
import numpy as np

from orchestra.observe.program_text import program_text
from orchestra.pipeline.corrected_sdfg_call import corrected_sdfg_calls

N = dace.symbol("N")
M = dace.symbol("M")


@dace.program
def inner(a: dace.float64[N, M], b: dace.float64[N, M], steps: dace.int64):
    for _ in range(steps):
        b[:] = b + 0.5 * a


def _as_sdfg() -> dace.SDFG:
    @dace.program
    def scaled(a: dace.float64[N], b: dace.float64[N]):
        b[:] = 2.0 * a

    return scaled.to_sdfg(simplify=False)


_SCALED = _as_sdfg()


@dace.program
def outer(x: dace.float64[N, M], y: dace.float64[N, M], v: dace.float64[N], w: dace.float64[N]):
    inner(x, y, 3)
    inner(y, x, 2)
    _SCALED(v, w)


def _parse() -> tuple[str, int]:
    """The parsed program's text and the number of symbol walks the nesting of SDFGs asked for."""
    walks = []
    original = dace.SDFG.used_symbols

    def counted(self, *args, **kwargs):
        caller = sys._getframe(1)
        if caller.f_code.co_name == "arglist":
            caller = caller.f_back
        if caller.f_code.co_name == "_parse_sdfg_call":
            walks.append(self.name)
        return original(self, *args, **kwargs)

    dace.SDFG.used_symbols = counted
    try:
        sdfg = outer.to_sdfg(simplify=False, save=False, validate=False)
    finally:
        dace.SDFG.used_symbols = original
    return program_text(sdfg), len(walks)


def test_the_corrected_call_parses_the_same_program_with_half_the_symbol_walks():
    own_text, own_walks = _parse()
    with corrected_sdfg_calls():
        corrected_text, corrected_walks = _parse()
    assert corrected_text == own_text
    assert own_walks == 6  # three nested calls, two walks each
    assert corrected_walks == 3


def test_the_corrected_program_computes_what_dace_computes():
    rng = np.random.default_rng(3)
    arrays = [rng.random((4, 3)), rng.random((4, 3)), rng.random(4), rng.random(4)]
    expected = [a.copy() for a in arrays]
    outer(*expected)
    with corrected_sdfg_calls():
        got = [a.copy() for a in arrays]
        outer.to_sdfg(simplify=False)(*got, N=4, M=3)
    for want, have in zip(expected, got):
        assert np.array_equal(want, have)
