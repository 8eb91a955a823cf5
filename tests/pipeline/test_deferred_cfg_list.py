"""DaCe's region numbering rebuilt when read (orchestra.passes.deferred_cfg_list): same program, fewer rebuilds."""

from __future__ import annotations

import contextlib

import dace
import numpy as np
import pytest
from dace.sdfg.state import AbstractControlFlowRegion as Region
from dace.transformation.interstate import InlineMultistateSDFG
from dace.transformation.transformation import PatternNode

from orchestra.observe.program_text import program_text
from orchestra.passes import deferred_cfg_list
from orchestra.passes.deferred_cfg_list import deferred_cfg_lists
from orchestra.passes.simplify import simplify


@dace.program
def _leaf(a: dace.float64[8], b: dace.float64[8]):
    for i in range(8):
        b[i] = a[i] * 2.0 + 1.0


@dace.program
def _middle(a: dace.float64[8], b: dace.float64[8], c: dace.float64[8]):
    _leaf(a, b)
    if a[0] > 0:
        _leaf(b, c)
    else:
        c[:] = b


@dace.program
def _program(a: dace.float64[8], b: dace.float64[8], c: dace.float64[8], d: dace.float64[8]):
    for _ in range(3):
        _middle(a, b, c)
        _middle(c, d, a)


def _parsed() -> dace.SDFG:
    return _program.to_sdfg(simplify=False)


@pytest.fixture
def rebuilds(monkeypatch):
    """How often DaCe's own renumbering ran (counted beneath the deferral)."""
    count = {"n": 0}
    original = Region.reset_cfg_list

    def counted(self):
        count["n"] += 1
        return original(self)

    monkeypatch.setattr(Region, "reset_cfg_list", counted)
    return count


def test_simplify_gives_the_same_program_with_fewer_rebuilds(monkeypatch, rebuilds):
    deferred = _parsed()
    simplify(deferred)
    with_deferral = rebuilds["n"]
    monkeypatch.setattr(deferred_cfg_list, "deferred_cfg_lists", lambda sdfg: contextlib.nullcontext())
    eager = _parsed()
    rebuilds["n"] = 0
    simplify(eager)
    assert program_text(deferred) == program_text(eager)
    assert with_deferral < rebuilds["n"]
    deferred.validate()
    a, b, c, d = (np.arange(8.0) - k for k in range(4))
    want = [x.copy() for x in (a, b, c, d)]
    eager(*want)
    deferred(a, b, c, d)
    assert all(np.array_equal(x, y) for x, y in zip((a, b, c, d), want))


def test_readers_see_a_rebuilt_numbering_and_the_methods_come_back(rebuilds):
    sdfg = _parsed()
    other = _parsed()
    methods = (Region.reset_cfg_list, Region.update_cfg_list, Region.cfg_list, Region.cfg_id, PatternNode.__get__)
    with deferred_cfg_lists(sdfg):
        before = rebuilds["n"]
        state = sdfg.add_state("added")
        loop = dace.sdfg.state.LoopRegion("added_loop", "k < 2", "k", "k = 0", "k = k + 1")
        sdfg.add_node(loop)
        assert rebuilds["n"] == before  # deferred
        assert loop.cfg_id == sdfg.cfg_list.index(loop) and loop in sdfg.cfg_list
        assert rebuilds["n"] == before + 1  # rebuilt once, when read
        assert state.parent_graph is sdfg
        other.reset_cfg_list()  # another program: at once
        assert rebuilds["n"] == before + 2
        with deferred_cfg_lists(other):  # nested: the outer one stays in charge
            other.add_node(dace.sdfg.state.LoopRegion("l2", "k < 2", "k", "k = 0", "k = k + 1"))
        assert other.cfg_list[-1].label == "l2"
        sdfg.add_node(dace.sdfg.state.LoopRegion("last", "k < 2", "k", "k = 0", "k = k + 1"))
    assert (Region.reset_cfg_list, Region.update_cfg_list, Region.cfg_list, Region.cfg_id, PatternNode.__get__) == methods
    assert sdfg.cfg_list[-1].label == "last"  # rebuilt on leaving


def test_dace_inlining_loop_renumbers_once_and_matches_by_id_still_work(monkeypatch, rebuilds):
    """DaCe's inline_sdfgs reads no numbering it does not use; a transformation matched by node ids reads a fresh one."""
    eager, deferred = _parsed(), _parsed()
    rebuilds["n"] = 0
    dace.sdfg.utils.inline_sdfgs(eager)
    eager_rebuilds, rebuilds["n"] = rebuilds["n"], 0
    with deferred_cfg_lists(deferred):
        inlined = dace.sdfg.utils.inline_sdfgs(deferred)
        assert rebuilds["n"] == 0  # every inlining's renumbering deferred, none read
        assert deferred.cfg_list[deferred.cfg_id] is deferred and rebuilds["n"] == 1
    assert inlined > 1 and eager_rebuilds >= inlined
    assert program_text(deferred) == program_text(eager)

    # matched by node id (apply_transformations): the pattern node looks its region up, in a fresh numbering
    nested = _program.to_sdfg(simplify=False)
    with deferred_cfg_lists(nested):
        applied = nested.apply_transformations_repeated(InlineMultistateSDFG)
        assert applied > 0 and all(region.cfg_id == index for index, region in enumerate(nested.cfg_list))
