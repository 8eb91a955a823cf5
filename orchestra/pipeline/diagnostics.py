"""Messages for programs DaCe cannot read: where in the model, what, and how to fix it.

DaCe reports an unsupported construct with its own vocabulary ("Unsupported
AST node", "disallowed keyword: Try") and the model's file and line buried in
its text. :func:`explain_unreadable` states the location first, DaCe's reason
in one line, and the usual fixes.
"""

from __future__ import annotations

import inspect
import re
from typing import Any, Callable, Optional

_LOCATION = re.compile(r'(?:File "([^"]+)", line (\d+))|(?:\(([^():]+\.py):(\d+)\))')

HINT = (
    "Code DaCe cannot compile (try/except, with, I/O, f-strings, calls into arbitrary Python objects) "
    "belongs in a function decorated with orchestra.dace_inhibitor, which stays in Python as a callback "
    "(a scalar result needs a return annotation, and the receiving variable one too); values known only "
    "in Python can be compile-time arguments (dace_compiletime_args). See docs/orchestration.md"
)


def location_of(error: BaseException, function: Optional[Callable]) -> str:
    """``file:line`` of the construct DaCe refused (its own text first), else of ``function``."""
    for text in (str(error), str(getattr(error, "__cause__", "") or "")):
        match = _LOCATION.search(text)
        if match:
            path, line = (match.group(1), match.group(2)) if match.group(1) else (match.group(3), match.group(4))
            return f"{path}:{line}"
    if function is not None:
        try:
            function = inspect.unwrap(function)
            return f"{inspect.getsourcefile(function)}:{function.__code__.co_firstlineno}"
        except (TypeError, AttributeError):
            pass
    return "<unknown location>"


def explain_unreadable(error: BaseException, label: str, function: Optional[Callable], step: str) -> str:
    """One message: where, what DaCe said (first line), how to fix it."""
    reason = next((line.strip() for line in str(error).splitlines() if line.strip()), type(error).__name__)
    return f"{step} {label} failed at {location_of(error, function)}: {type(error).__name__}: {reason}. {HINT}"


def function_of(program: Any) -> Optional[Callable]:
    """The Python function of a DaceProgram (None for anything else)."""
    function = getattr(program, "f", None)
    return function if callable(function) else None
