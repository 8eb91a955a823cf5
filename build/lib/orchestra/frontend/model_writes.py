"""Assignments that rebind what the model holds (``self.a = ...``) are refused, naming the fix.

In ``Python`` mode ``self.a, self.b = self.b, self.a`` swaps the model's
arrays for the rest of the call and for every later call, and ``self.dt =
dt`` keeps the value. A compiled program cannot change what a Python object
holds: DaCe refuses the assignment to a scalar ("assign to a compile-time
constant", without saying what to do), and takes the array swap as a
rebinding of names inside one call, so the next call computed with the
unswapped arrays, silently different from ``Python`` mode.

Here every plain assignment (``=``, also annotated and tuple targets) to an
attribute of a value fixed for the call (``self``, a module global, a
compile-time argument, at any depth: ``self.grid.dx = ...``) is refused at
parse time with the file, the line and the rewrites that keep the meaning:
write into the array (``self.a[:] = ...``, or let a stencil do it), keep a
scalar local to the call, or move the assignment into a ``dace_inhibitor``
callback. Augmented assignments (``self.q += x``) update an array in place,
as in Python, and are left to DaCe.
"""

from __future__ import annotations

import ast

from orchestra.errors import BuildError
from orchestra.frontend.scope import ParseScope, root_name


def refuse_model_rebinding(function: ast.FunctionDef, scope: ParseScope, filename: str) -> None:
    """Raise :class:`~orchestra.errors.BuildError` at the first assignment to an attribute of a fixed value."""
    for node in ast.walk(function):
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign):
            targets = [node.target]
        else:
            continue
        for target in targets:
            for element in ast.walk(target):
                if isinstance(element, ast.Attribute) and isinstance(element.ctx, ast.Store) \
                        and root_name(element) in scope.fixed:
                    _refuse(node, element, filename)


def _refuse(statement: ast.stmt, target: ast.Attribute, filename: str) -> None:
    written = ast.unparse(target)
    raise BuildError(
        f"{filename}:{statement.lineno}: orchestrated code assigns {written} (`{ast.unparse(statement)}`), "
        "rebinding what the model holds; a compiled program cannot change a Python object's attributes (Python "
        f"mode keeps the new value for later calls, the program would not). For an array, write into it "
        f"({written}[:] = ..., or a stencil writing it); for a value, keep it in a local variable for the call "
        "(or pass it as an argument); or move the assignment into a function decorated with "
        "orchestra.dace_inhibitor"
    )
