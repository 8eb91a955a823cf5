"""Edits that change nothing a program computes: comments, blank lines, docstrings, unrelated functions."""

from __future__ import annotations

import ast
from collections import defaultdict


def with_layout_noise(text: str) -> str:
    """``text`` with comments, blank lines, docstrings and unrelated functions at every place they may go.

    Stencil definitions get comments but no docstring: gt4py's content id of a
    stencil counts its docstring (a comment it does not), so a new docstring
    there is another stencil to gt4py, and to the key.
    """
    tree = ast.parse(text)
    lines = text.splitlines(keepends=True)
    before: dict[int, list[str]] = defaultdict(list)  # 0-based line -> lines inserted above it
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt):
            start = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))]) - 1
            before[start] += [" " * node.col_offset + "# a comment a user added\n", "\n"]
        if (isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.body[0].lineno > node.lineno
                and not is_stencil_definition(node)):
            first = node.body[0]
            start = min([first.lineno, *(d.lineno for d in getattr(first, "decorator_list", []))]) - 1
            before[start].append(" " * first.col_offset + '"""A docstring a user added."""\n')
    for number, node in enumerate(tree.body):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
            before[start] = [f"def _unrelated_{number}():\n", f"    return {number}\n", "\n", "\n"] + before[start]
    return "".join(line for index, original in enumerate(lines) for line in [*before[index], original])



def is_stencil_definition(node: ast.AST) -> bool:
    """A gtscript stencil definition: a function with a ``with computation(...)`` block."""
    return isinstance(node, ast.FunctionDef) and any(
        isinstance(child, ast.With) and any(isinstance(item.context_expr, ast.Call)
                                            and ast.unparse(item.context_expr.func) == "computation"
                                            for item in child.items)
        for child in ast.walk(node))
