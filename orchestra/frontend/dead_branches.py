"""Branches that a compile-time flag rules out are emptied before DaCe reads them.

FV3 code guards optional work with flags fixed when the model is built::

    def _checkpoint_csw(self, state, tag):
        if self.call_checkpointer:                     # False unless a checkpointer was given
            self.checkpointer(f"C_SW-{tag}", delpd=state.delp, ...)

DaCe folds the flag, but only after its closure resolution has visited the
whole body: a call in the dead branch is resolved anyway, and with
``self.checkpointer = None`` the parse failed (``'NoneType' object is not
callable``) where ``Python`` mode never reaches the line. Here a branch whose
condition is known when the function is parsed (access paths rooted at fixed
names: ``self``, compile-time arguments, module globals; ``not``, ``and``,
``or``, ``is (not) None`` and comparisons with constants; values that are
``None``, booleans, numbers or strings) and false has its body replaced by
``pass`` (an ``else`` that cannot run is dropped). The condition itself stays,
so DaCe still folds it into the program and the build key still holds its
value: a model whose flag changes is built again.
"""

from __future__ import annotations

import ast
import numbers
from typing import Any, Optional

from orchestra.frontend.scope import MISSING, ParseScope, is_access_path, replace_statements

_PLAIN = (bool, numbers.Number, str, type(None))
_COMPARISONS = (ast.Is, ast.IsNot, ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE)


def _known(node: ast.expr, scope: ParseScope) -> Any:
    """The value of a condition made of fixed access paths and constants, or MISSING."""
    if isinstance(node, ast.Constant):
        return node.value
    if is_access_path(node):
        value = scope.value_of(node)
        return value if isinstance(value, _PLAIN) else MISSING
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        value = _known(node.operand, scope)
        return MISSING if value is MISSING else not value
    if isinstance(node, ast.BoolOp):
        values = [_known(operand, scope) for operand in node.values]
        if any(value is MISSING for value in values):
            return MISSING
        return all(values) if isinstance(node.op, ast.And) else any(values)
    if isinstance(node, ast.Compare) and all(isinstance(op, _COMPARISONS) for op in node.ops):
        operands = [_known(operand, scope) for operand in (node.left, *node.comparators)]
        if any(value is MISSING for value in operands):
            return MISSING
        names = {f"_{n}": value for n, value in enumerate(operands)}
        renamed = ast.Compare(
            left=ast.Name(id="_0", ctx=ast.Load()),
            ops=node.ops,
            comparators=[ast.Name(id=f"_{n + 1}", ctx=ast.Load()) for n in range(len(node.comparators))],
        )
        code = compile(ast.fix_missing_locations(ast.Expression(body=renamed)), "<orchestra condition>", "eval")
        try:
            return bool(eval(code, {"__builtins__": {}}, names))  # noqa: S307 (plain values only)
        except Exception:
            return MISSING
    return MISSING


def empty_dead_branches(definition: ast.FunctionDef, scope: ParseScope) -> int:
    """Empty, in place, every branch of ``definition`` ruled out by a condition known now; returns how many."""
    emptied = 0

    def empty(statement: ast.stmt) -> Optional[list[ast.stmt]]:
        nonlocal emptied
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return [statement]  # a nested definition's names are its own: left as it is
        if not isinstance(statement, ast.If):
            return None
        value = _known(statement.test, scope)
        if value is MISSING:
            return None
        if not value and not _is_pass(statement.body):
            statement.body = [ast.copy_location(ast.Pass(), statement.body[0])]
            emptied += 1
        elif value and statement.orelse:
            statement.orelse = []
            emptied += 1
        return None  # the branch kept is visited in turn

    replace_statements(definition.body, empty)
    return emptied


def _is_pass(body: list[ast.stmt]) -> bool:
    return len(body) == 1 and isinstance(body[0], ast.Pass)
