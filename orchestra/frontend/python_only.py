"""Python only the interpreter can run, refused at parse time with the line and the fix.

DaCe meets these constructs deep in its parser and answers in its own words
("Trying to assign to a compile-time constant ... Frequently Asked
Questions", "argument of type 'StringLiteral' is not iterable", "disallowed
keyword: Try"), or turns them into callbacks whose exceptions it swallows
(``open(...)`` became an implicit callback; a missing file printed "Exception
ignored" and the program went on). Here each is refused before DaCe parses,
naming what to do instead:

* ``self.nstep += 1`` on a number the model holds: a compiled program cannot
  change a Python object's attribute (an array's ``+=`` updates it in place
  and is left to DaCe);
* f-strings reading run-time values (``print(f"dt {dt}")``);
* ``try``/``except``/``finally``;
* file and console input (``open``, ``input``);
* a call of a model object that is not orchestrated, given an object DaCe
  cannot type (``self.advection(state, dt)`` where ``Advection.__init__``
  does not call ``orchestrate``): DaCe tried to parse its method as a plain
  function and could not pass ``state``.

Everything here belongs in a function decorated with
``orchestra.dace_inhibitor`` (it stays in Python as a callback), or, for a
component, in an ``orchestrate(obj=self, config=config)`` call at the end of
its ``__init__``.
"""

from __future__ import annotations

import ast
import numbers
import types
from typing import Any

from orchestra.calls.arguments import is_folded_object
from orchestra.errors import BuildError
from orchestra.key.call_tree import LIBRARIES, PROGRAMS_ATTRIBUTE
from orchestra.frontend.scope import MISSING, ParseScope, root_name

_CALLBACK_FIX = ("move it into a function decorated with orchestra.dace_inhibitor, which stays in Python "
                 "(a callback; a scalar result needs a return annotation, and the variable receiving it one too)")
#: builtins that read or write files or the console
_INPUT_OUTPUT = frozenset({"open", "input"})


def refuse_python_only(function: ast.FunctionDef, scope: ParseScope, filename: str) -> None:
    """Raise :class:`~orchestra.errors.BuildError` at the first construct only Python can run."""
    for node in ast.walk(function):
        reason = _reason(node, scope)
        if reason is not None:
            line = getattr(node, "lineno", function.lineno)
            raise BuildError(f"{filename}:{line}: orchestrated code {reason}")


def _reason(node: ast.AST, scope: ParseScope) -> Any:
    if isinstance(node, ast.AugAssign):
        return _model_number_update(node, scope)
    if isinstance(node, (ast.Try, getattr(ast, "TryStar", ast.Try))):
        return (f"has a try statement (line {node.lineno}); a compiled program cannot catch Python exceptions: "
                f"{_CALLBACK_FIX}")
    if isinstance(node, ast.JoinedStr) and any(
            isinstance(part, ast.FormattedValue) and scope.value_of(part.value) is MISSING for part in node.values):
        return (f"formats run-time values in an f-string (`{ast.unparse(node)}`), which a compiled program "
                f"cannot do; to print or log them, {_CALLBACK_FIX}")
    if isinstance(node, ast.Call):
        return _input_output(node, scope) or _unorchestrated_call(node, scope)
    return None


def _model_number_update(node: ast.AugAssign, scope: ParseScope) -> Any:
    target = node.target
    if not isinstance(target, ast.Attribute) or root_name(target) not in scope.fixed:
        return None
    value = scope.value_of(ast.parse(ast.unparse(target), mode="eval").body)  # read, not stored
    if value is MISSING or not isinstance(value, (numbers.Number, str)):
        return None  # an array updated in place: left to DaCe
    written = ast.unparse(target)
    return (f"updates {written} (`{ast.unparse(node)}`), a value the model holds ({type(value).__name__}); a compiled "
            f"program cannot change a Python object's attributes (Python mode keeps the new value for later "
            f"calls, the program would not). Count or update it in a function decorated with "
            f"orchestra.dace_inhibitor (a callback), or keep the value in a local variable for the call")


def _input_output(node: ast.Call, scope: ParseScope) -> Any:
    if isinstance(node.func, ast.Name) and node.func.id in _INPUT_OUTPUT and node.func.id not in scope.namespace:
        return (f"calls {node.func.id}() (`{ast.unparse(node)}`): file and console input and output run in "
                f"Python; {_CALLBACK_FIX}")
    return None


def _unorchestrated_call(node: ast.Call, scope: ParseScope) -> Any:
    callee = scope.value_of(node.func)
    if callee is MISSING or not _is_model_object(callee):
        return None
    arguments = [*node.args, *(keyword.value for keyword in node.keywords)]
    folded = [ast.unparse(argument) for argument in arguments
              if (value := scope.value_of(argument)) is not MISSING and is_folded_object(value)]
    if not folded:
        return None  # DaCe parses the method as a plain function, as it would any helper
    kind = type(callee)
    return (f"calls {ast.unparse(node.func)}, a {kind.__module__}.{kind.__qualname__} that is not orchestrated, "
            f"with {', '.join(folded)} (an object the program folds in). Orchestrate the component: call "
            f"orchestrate(obj=self, config=config) at the end of {kind.__qualname__}.__init__ (it is then "
            f"inlined into this program, {', '.join(folded)} folded in like here); or, to keep it in Python, "
            f"decorate {kind.__qualname__}.__call__ with orchestra.dace_inhibitor")


def _is_model_object(value: Any) -> bool:
    """An instance of a model class with a ``__call__`` of its own that DaCe would parse as a plain function."""
    if isinstance(value, (type, types.FunctionType, types.MethodType, types.BuiltinFunctionType)) or not callable(value):
        return False
    if hasattr(value, "__sdfg__") or PROGRAMS_ATTRIBUTE in getattr(value, "__dict__", {}):
        return False
    call = getattr(type(value), "__call__", None)
    if not isinstance(call, types.FunctionType) or getattr(call, "__orchestra_callback__", False):
        return False
    return (type(value).__module__ or "").split(".")[0] not in LIBRARIES  # not model code: no component
