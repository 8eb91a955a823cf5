"""orchestra's stand-in for DaCe's trivial-condition test gives DaCe's answers, with one evaluation per condition.

DaCe's ``LiftTrivialIf`` asks of each branch condition whether it is
provably true and whether it is provably false, evaluating it in full for
each question (``orchestra.toolchain.trivial_conditions``). Inside
:func:`one_evaluation_per_condition` every answer must be DaCe's, a
condition must be evaluated once for both questions, ``simplify`` must make
the same SDFG, and DaCe's own function must be back after the block.
"""

from __future__ import annotations

import dace
import pytest
from dace.transformation.passes import lift_trivial_if

from orchestra.observe.program_text import program_text
from orchestra.toolchain import trivial_conditions
from orchestra.toolchain.shortcuts import exact_shortcuts
from orchestra.toolchain.trivial_conditions import constant_truth, one_evaluation_per_condition, replaceable

#: Constant and not: literals, comparisons, boolean words, symbols, subscripts, DaCe's integer functions,
#: nested comparisons only the arithmetic rewrite reduces, and text that does not parse at all.
CONDITIONS = [
    "1 < 2", "2 < 1", "True", "False", "not (1 == 1)", "(1 == 1) and (2 > 1)", "(1 == 0) or False",
    "__i < 3", "(__i >= 0) and (__i < 3)", "__k == __K - 1", "A[0]", "A[0] > 1", "(a == 1) == 0",
    "(1 == 1) == 0", "(1 == 1) == 1", "int_floor(3, 2) == 1", "int_ceil(N, 2) > 0", "1 +", "x if y else z",
]


def test_dace_function_is_the_one_replaced():
    assert replaceable(lift_trivial_if._trivial_cond_check_cached), (
        "DaCe's _trivial_cond_check_cached changed: check orchestra.toolchain.trivial_conditions against the new "
        "DaCe before replacing it"
    )
    assert not replaceable(lambda code, val: False)


@pytest.mark.parametrize("condition", CONDITIONS)
def test_every_answer_is_dace_s(condition):
    original = lift_trivial_if._trivial_cond_check_cached
    expected = (original(condition, True), original(condition, False))
    with one_evaluation_per_condition():
        replaced = lift_trivial_if._trivial_cond_check_cached
        assert replaced is not original
        assert (replaced(condition, True), replaced(condition, False)) == expected
    assert lift_trivial_if._trivial_cond_check_cached is original


def test_a_condition_is_evaluated_once_for_both_questions(monkeypatch):
    evaluated = []
    real = trivial_conditions._evaluated
    monkeypatch.setattr(trivial_conditions, "_evaluated", lambda code: evaluated.append(code) or real(code))
    constant_truth.cache_clear()
    condition = "(__j >= 0) and (__j < 7)"
    with one_evaluation_per_condition():
        check = lift_trivial_if._trivial_cond_check_cached
        assert check(condition, True) is False and check(condition, False) is False
    assert evaluated == [condition]


def _branchy_sdfg() -> dace.SDFG:
    @dace.program
    def branchy(a: dace.float64[8], n: dace.int64):
        if 1 < 2:
            a[0] = 1.0
        if n > 3:
            a[1] = 2.0
        else:
            a[1] = 3.0
        if (1 == 1) == 0:
            a[2] = 4.0

    return branchy.to_sdfg(simplify=False)


def test_simplify_makes_the_same_sdfg_and_dace_is_restored():
    original = lift_trivial_if._trivial_cond_check_cached
    alone = _branchy_sdfg()
    alone.simplify()
    shortcut = _branchy_sdfg()
    with exact_shortcuts():
        with exact_shortcuts():  # nested: nothing more installed, nothing undone on its exit
            pass
        assert lift_trivial_if._trivial_cond_check_cached is not original
        shortcut.simplify()
    assert lift_trivial_if._trivial_cond_check_cached is original
    assert program_text(shortcut) == program_text(alone)
    assert len(list(alone.all_control_flow_blocks())) < len(list(_branchy_sdfg().all_control_flow_blocks()))
