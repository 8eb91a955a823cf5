"""Messages for programs DaCe cannot read: where in the model, what, and how to fix it.

DaCe reports an unsupported construct with its own vocabulary ("Unsupported
AST node", "disallowed keyword: Try") and the model's file and line buried in
its text. :func:`explain_unreadable` states the location first, DaCe's reason
in one line, and the usual fixes.
"""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path
from typing import Any, Callable, Optional

from orchestra.errors import OrchestraError
from orchestra.frontend.early_returns import RESULT

_LOCATION = re.compile(r'(?:File "([^"]+)", line (\d+))|(?:\(([^():]+\.py):(\d+)\))')

HINT = (
    "Code DaCe cannot compile (try/except, with, I/O, f-strings, calls into arbitrary Python objects) "
    "belongs in a function decorated with orchestra.dace_inhibitor, which stays in Python as a callback "
    "(a scalar result needs a return annotation, and the receiving variable one too); values known only "
    "in Python can be compile-time arguments (dace_compiletime_args). See docs/orchestration.md"
)


def location_of(error: BaseException, function: Optional[Callable]) -> str:
    """``file:line`` of the construct DaCe refused (its own text first), else of ``function``.

    An error raised by code DaCe called while parsing (a stencil's argument
    check) carries no location in its text; the statement DaCe was reading
    then is in the parser's frame on the traceback.
    """
    statement = _statement_being_parsed(error)
    if statement and isinstance(error, OrchestraError):
        return statement
    for text in (str(error), str(getattr(error, "__cause__", "") or "")):
        match = _LOCATION.search(text)
        if match:
            path, line = (match.group(1), match.group(2)) if match.group(1) else (match.group(3), match.group(4))
            return f"{path}:{line}"
    if statement:
        return statement
    if function is not None:
        try:
            function = inspect.unwrap(function)
            return f"{inspect.getsourcefile(function)}:{function.__code__.co_firstlineno}"
        except (TypeError, AttributeError):
            pass
    return "<unknown location>"


def _statement_being_parsed(error: BaseException) -> Optional[str]:
    """``file:line`` of the innermost statement a DaCe parser was visiting when ``error`` was raised."""
    found, frame = None, error.__traceback__
    while frame is not None:
        info = getattr(frame.tb_frame.f_locals.get("visitor"), "current_lineinfo", None)
        if getattr(info, "filename", None) and getattr(info, "start_line", None):
            found = f"{info.filename}:{info.start_line}"
        frame = frame.tb_next
    return found


def explain_unreadable(error: BaseException, label: str, function: Optional[Callable], step: str) -> str:
    """One message: where, what DaCe said (first line), how to fix it.

    An error orchestra raised on purpose while DaCe parsed (a stencil call's
    arguments, :mod:`orchestra.stencils.arguments`) already says how to fix
    it: its whole message follows the location, without the generic hint.
    A call of one of the function's own parameters gets its own fix.
    """
    location = location_of(error, function)
    if isinstance(error, OrchestraError):
        return f"{step} {label} failed at {location}: {error}"
    reason = next((line.strip() for line in str(error).splitlines() if line.strip()), type(error).__name__)
    hint = _called_parameter_hint(reason, location) or _returned_arrays_hint(reason) or HINT
    return f"{step} {label} failed at {location}: {type(error).__name__}: {reason}. {hint}"


_UNREGISTERED = re.compile(r'Function "(\w+)" is not registered')


def _called_parameter_hint(reason: str, location: str) -> Optional[str]:
    """The fix for calling an object a function received as an argument (``def apply(self, stencil, q)``)."""
    match = _UNREGISTERED.search(reason)
    path, _, line = location.rpartition(":")
    if match is None or not line.isdigit():
        return None
    try:
        tree = ast.parse(Path(path).read_text())
    except (OSError, SyntaxError, ValueError):
        return None
    name, line_number = match.group(1), int(line)
    for node in ast.walk(tree):
        if (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                and node.lineno <= line_number <= (node.end_lineno or node.lineno)
                and name in {arg.arg for arg in node.args.posonlyargs + node.args.args + node.args.kwonlyargs}):
            return (f"{name} is a parameter of {node.name}: compiled code calls only objects it reaches when "
                    "parsing (through self, a module, or a compile-time argument), not one passed in as an "
                    "argument. Call it where it is reached (self.stencil(...); several: for stencil in "
                    "self.stencils: stencil(...)), or decorate the helper with orchestra.dace_inhibitor to "
                    "keep it in Python. See docs/orchestration.md")
    return None


_REASSIGNED_VIEW = re.compile(r'Cannot reassign View "(\w+)"')


def _returned_arrays_hint(reason: str) -> Optional[str]:
    """The fix for one name bound to one array or another, chosen at run time (a local, or a helper's result)."""
    match = _REASSIGNED_VIEW.search(reason)
    if match is None:
        return None
    if match.group(1).startswith(RESULT):
        return ("The function called here returns different arrays on different paths, chosen by a run-time "
                "condition (orchestra gives a called function one exit: orchestra/frontend/early_returns.py); a "
                "compiled program cannot make one name refer to either array. Return the same array on every "
                "path, make the condition a compile-time value (a flag on self, or dace_compiletime_args), or let "
                "the caller choose (if flip: use(self.b) else: use(self.a)). See docs/orchestration.md")
    return (f"`{match.group(1)}` is bound to different arrays on different paths, chosen by a run-time condition; "
            "a compiled program cannot make one name refer to either array. Use each array where it is chosen "
            f"(if flip: self.stencil(x, ...) else: self.stencil(y, ...)) instead of through `{match.group(1)}`, "
            "or make the condition a compile-time value (a flag on self, or dace_compiletime_args). "
            "See docs/orchestration.md")


def function_of(program: Any) -> Optional[Callable]:
    """The Python function of a DaceProgram (None for anything else)."""
    function = getattr(program, "f", None)
    return function if callable(function) else None
