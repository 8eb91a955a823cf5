"""Branches a compile-time flag rules out are emptied before DaCe reads them; their conditions stay.

The rewrite itself (no build), then one orchestrated model whose dead branch
calls ``None`` (FV3's ``if self.call_checkpointer: self.checkpointer(...)``
without a checkpointer): it builds, and giving a checkpointer (another flag
value) builds another program that calls it.
"""

from __future__ import annotations

import ast
import textwrap
from types import SimpleNamespace

import numpy as np
import pytest

from orchestra import DaceConfig, dace_inhibitor, orchestrate
from orchestra.frontend.dead_branches import empty_dead_branches
from orchestra.frontend.scope import ParseScope

SOURCE = """
def f(self, q):
    if self.flag:
        self.call_a(q)
    else:
        self.call_b(q)
    if not self.flag and self.other is None:
        self.call_c(q)
    if self.mode == "fast":
        self.call_d(q)
    elif self.mode == "slow":
        self.call_e(q)
    for i in range(3):
        if self.flag:
            self.call_f(q)
    if q:
        self.call_g(q)
    if self.array:
        self.call_h(q)
"""


def _calls(tree: ast.AST) -> list[str]:
    return sorted(n.func.attr for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute))


@pytest.mark.parametrize(
    "flag,other,mode,kept",
    [
        (True, None, "fast", ["call_a", "call_d", "call_f", "call_g", "call_h"]),
        (False, None, "slow", ["call_b", "call_c", "call_e", "call_g", "call_h"]),
        (False, 1, "other", ["call_b", "call_g", "call_h"]),
    ],
)
def test_only_the_branches_a_known_flag_rules_out_are_emptied(flag, other, mode, kept):
    definition = ast.parse(textwrap.dedent(SOURCE)).body[0]
    model = SimpleNamespace(flag=flag, other=other, mode=mode, array=np.zeros(3))
    empty_dead_branches(definition, ParseScope(definition, {"self": model}, runtime={"q"}))
    assert [name for name in _calls(definition) if name != "range"] == kept
    # the conditions stay: DaCe still folds them, and the key still holds their values
    tests = [ast.unparse(n.test) for n in ast.walk(definition) if isinstance(n, ast.If)]
    assert "self.flag" in tests and "q" in tests and "self.array" in tests


class Checkpointer:
    def __init__(self):
        self.tags = []

    @dace_inhibitor
    def __call__(self, tag: str, q):
        self.tags.append((tag, float(q.sum())))


class Model:
    def __init__(self, config, checkpointer=None):
        self.checkpointer = checkpointer
        self.call_checkpointer = checkpointer is not None
        orchestrate(obj=self, config=config)
        orchestrate(obj=self, config=config, method_to_orchestrate="_checkpoint", dace_compiletime_args=["tag"])

    def _checkpoint(self, q, tag: str):
        if self.call_checkpointer:
            self.checkpointer(f"C_SW-{tag}", q)

    def __call__(self, q):
        self._checkpoint(q, tag="In")
        q[1] = q[1] + 2.0
        self._checkpoint(q, tag="Out")


def test_a_dead_branch_calling_none_builds_and_a_checkpointer_builds_another_program(tmp_path):
    config = DaceConfig(None, backend="dace:cpu", orchestration="BuildAndRun", cache_root=tmp_path)
    q = np.zeros(3)
    Model(config)(q)  # parsed the dead `self.checkpointer(...)` on None before: 'NoneType' object is not callable
    assert q[1] == 2.0
    checkpointer = Checkpointer()
    Model(config, checkpointer)(q)
    assert checkpointer.tags == [("C_SW-In", 2.0), ("C_SW-Out", 4.0)]
    assert len(list(tmp_path.glob("Model.__call__/*/COMPLETE"))) == 2  # the flag is in the key
