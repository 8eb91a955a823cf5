"""DaCe's control-flow raising is skipped only where it can raise nothing (orchestra.toolchain.control_flow_raising).

A program the Python frontend wrote (loops as loop regions, branches as
conditional blocks) has nothing to raise: inside
:func:`raising_only_where_possible` DaCe's pass is not run on it, and its
code is the code DaCe generates alone. A state machine (a loop written as
guard and back edge, a branch written as conditional edges, an early exit)
is raised by DaCe's own pass as before. DaCe's method is back after the
block.
"""

from __future__ import annotations

import dace
from dace.codegen import codegen
from dace.sdfg.state import LoopRegion
from dace.transformation.passes.simplification.control_flow_raising import ControlFlowRaising

from orchestra.toolchain.control_flow_raising import nothing_to_raise, raising_only_where_possible, recognizes


@dace.program
def structured(a: dace.float64[10], n: dace.int64):
    for i in range(1, 9):
        if a[i] > 0.5:
            a[i] = a[i - 1] + 1.0
        else:
            a[i] = 2.0 * a[i + 1]
    if n > 3:
        a[0] = 0.0


def _state_machine(early_exit: bool = False) -> dace.SDFG:
    """``for i in range(10): a[i] = i`` written as states and conditional edges (no loop region)."""
    sdfg = dace.SDFG("state_machine")
    sdfg.add_array("a", [10], dace.float64)
    sdfg.add_symbol("i", dace.int64)
    init, guard, body, end = (sdfg.add_state(name) for name in ("init", "guard", "body", "end"))
    task = body.add_tasklet("set", {}, {"out"}, "out = i")
    body.add_edge(task, "out", body.add_write("a"), None, dace.Memlet("a[i]"))
    sdfg.add_edge(init, guard, dace.InterstateEdge(assignments={"i": "0"}))
    sdfg.add_edge(guard, body, dace.InterstateEdge("i < 10"))
    sdfg.add_edge(body, guard, dace.InterstateEdge(assignments={"i": "i + 1"}))
    sdfg.add_edge(guard, end, dace.InterstateEdge("i >= 10" if not early_exit else "i >= 12"))
    return sdfg


def _early_exit() -> dace.SDFG:
    sdfg = dace.SDFG("early_exit")
    sdfg.add_symbol("n", dace.int64)
    first, second = sdfg.add_state("first"), sdfg.add_state("second")
    sdfg.add_edge(first, second, dace.InterstateEdge("n > 0"))  # otherwise the program ends here
    return sdfg


def test_dace_pass_is_the_one_written_for():
    assert recognizes(ControlFlowRaising.apply_pass), (
        "DaCe's ControlFlowRaising.apply_pass changed: check orchestra.toolchain.control_flow_raising against the "
        "new DaCe"
    )
    assert not recognizes(lambda self, sdfg, results: None)


def test_what_can_be_raised_is_told_apart():
    assert nothing_to_raise(structured.to_sdfg(simplify=True))
    assert nothing_to_raise(structured.to_sdfg(simplify=False))
    assert not nothing_to_raise(_state_machine())
    assert not nothing_to_raise(_early_exit())


def test_a_structured_program_is_not_raised_and_its_code_is_dace_s(monkeypatch):
    alone = codegen.generate_code(structured.to_sdfg(simplify=True), validate=False)
    ran = []
    step = ControlFlowRaising._lift_conditionals  # one of the steps DaCe's pass runs on every SDFG
    monkeypatch.setattr(ControlFlowRaising, "_lift_conditionals", lambda self, sdfg: ran.append(1) or step(self, sdfg))
    codegen.generate_code(structured.to_sdfg(simplify=True), validate=False)
    assert ran  # the spy sees DaCe's pass when it runs
    ran.clear()
    with raising_only_where_possible():
        skipped = codegen.generate_code(structured.to_sdfg(simplify=True), validate=False)
    assert not ran
    assert [obj.clean_code for obj in skipped] == [obj.clean_code for obj in alone]


def test_a_state_machine_is_raised_by_dace_s_pass_and_dace_is_restored():
    original = ControlFlowRaising.apply_pass
    for make, lifted in ((_state_machine, 1), (_early_exit, 0)):
        sdfg = make()
        with raising_only_where_possible():
            assert ControlFlowRaising.apply_pass is not original
            with raising_only_where_possible():  # nested: nothing more installed, nothing undone on its exit
                pass
            assert ControlFlowRaising.apply_pass is not original
            result = ControlFlowRaising().apply_pass(sdfg, {})
        assert result is not None, make.__name__  # DaCe's pass ran and raised something
        assert sum(isinstance(block, LoopRegion) for block in sdfg.all_control_flow_blocks()) == lifted
    assert ControlFlowRaising.apply_pass is original
