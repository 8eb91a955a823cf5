"""Syntax trees deep-copied by :func:`direct_ast_copies` equal those of ``copy``'s generic path.

Field for field and attribute for attribute (line numbers too), shared
subtrees still shared, nothing of the original reused where ``deepcopy``
would copy it; the copier registered only inside the block; a whole SDFG
copied inside it has the same program text.
"""

from __future__ import annotations

import ast
import copy

import dace

from orchestra.observe.program_text import program_text
from orchestra.toolchain.ast_copies import copy_node, direct_ast_copies, node_classes

SOURCE = '''
a = b * (c + d[i, j]) - math.exp(e * 2.0)
f: dace.float64 = a + 1 if g > 0 else -1
x, y = (1, 2.5, "s", b"b", None, 1j)
'''


def _walk_ids(tree: list) -> set:
    return {id(node) for top in tree for node in ast.walk(top)}


def test_copies_equal_the_generic_copies():
    tree = ast.parse(SOURCE).body
    generic = copy.deepcopy(tree)
    with direct_ast_copies():
        direct = copy.deepcopy(tree)
    for a, b in zip(generic, direct):
        assert ast.dump(a, include_attributes=True) == ast.dump(b, include_attributes=True)
    assert not _walk_ids(direct) & _walk_ids(tree)  # every node new


def test_shared_subtrees_stay_shared_and_extra_attributes_are_copied():
    shared = ast.Name(id="s", ctx=ast.Load())
    tree = [ast.BinOp(left=shared, op=ast.Add(), right=shared)]
    tree[0].annotation = {"dtype": ["float64"]}  # an attribute another tool put on a node
    with direct_ast_copies():
        copied = copy.deepcopy(tree)
    assert copied[0].left is copied[0].right and copied[0].left is not shared
    assert copied[0].annotation == tree[0].annotation and copied[0].annotation is not tree[0].annotation


def test_registered_only_inside_the_block():
    table = copy._deepcopy_dispatch
    assert table.get(ast.Name) is not copy_node
    with direct_ast_copies():
        assert all(table.get(cls) is copy_node for cls in node_classes())
        with direct_ast_copies():
            pass
        assert table.get(ast.Name) is copy_node  # the inner block leaves the outer one's copier
    assert table.get(ast.Name) is not copy_node and ast.Name not in table


@dace.program
def _program(a: dace.float64[20], b: dace.float64[20]):
    for i in range(1, 19):
        if a[i] > 0.5:
            b[i] = a[i - 1] * 2.0 + a[i + 1]
        else:
            b[i] = -a[i]


def test_a_copied_program_is_the_same():
    sdfg = _program.to_sdfg(simplify=False)
    generic = copy.deepcopy(sdfg)
    with direct_ast_copies():
        direct = copy.deepcopy(sdfg)
    assert program_text(direct, numbering=False) == program_text(generic, numbering=False)
