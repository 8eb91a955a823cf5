"""orchestra's own errors raised while DaCe parses said once, not again at every level of the program.

DaCe's ``parse_dace_program`` (``dace/frontend/python/newast.py``) catches
any exception raised while it parses a function, prints ``Exception <message>
raised while parsing DaCe program:`` with the file, line and statement it was
at, and raises it again. A program calls components, and each is parsed
inside its caller's parse, so an error raised two components deep was
printed at each level, then raised: the same message three times. An
:class:`~orchestra.errors.OrchestraError` raised while parsing (a stencil
call's arguments, :mod:`orchestra.stencils.arguments`) already says what is
wrong and how to fix it, and the build stage names the statement it was
raised at (:func:`orchestra.pipeline.diagnostics.location_of`, from the
traceback): DaCe's print adds nothing.

:data:`errors_said_once` gives DaCe's frontend module, for the duration of a
``with`` block, a ``print`` that leaves out what ``parse_dace_program``
prints while it handles an ``OrchestraError``; every other print (DaCe's own
errors, its progress messages) goes to :func:`builtins.print` as before. The
exception, its message and its traceback are not touched.
"""

from __future__ import annotations

import builtins
import sys
from typing import Any, Callable

from orchestra.errors import OrchestraError
from orchestra.toolchain.stand_in import WhileAnyInside

#: The DaCe function whose prints are filtered (the only one that prints an error it re-raises).
_PRINTING = "parse_dace_program"


def frontend_print(*args: Any, **kwargs: Any) -> None:
    """``print``, except what ``parse_dace_program`` prints about an orchestra error it re-raises."""
    handling = sys.exc_info()[1]
    if isinstance(handling, OrchestraError) and sys._getframe(1).f_code.co_name == _PRINTING:
        return
    builtins.print(*args, **kwargs)


def _installed() -> Callable[[], None]:
    from dace.frontend.python import newast

    if "print" in vars(newast):  # a print of its own (another DaCe, or another tool's): left alone
        return lambda: None
    newast.print = frontend_print  # type: ignore[attr-defined]

    def undo() -> None:
        if vars(newast).get("print") is frontend_print:
            del newast.print

    return undo


#: Within the block (and any block of another thread overlapping it), the prints of the module
#: docstring are left out.
errors_said_once = WhileAnyInside(_installed)
