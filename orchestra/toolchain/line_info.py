"""DaCe's source line of a graph node made without one, found without walking the whole call stack.

Every node DaCe adds to a state without an explicit ``debuginfo`` (every
access node and tasklet gt4py's schedule tree becomes, every node a
transformation adds) gets the file and line of the code that added it, when
``compiler.lineinfo`` is ``"inspect"`` (DaCe's default). DaCe finds that
line with ``inspect.stack()``, which builds a record, with source context,
for *every* frame of the stack, then keeps the third one. Lowering one of the
dycore's flux stencils adds 438 such nodes at 6 ms each: 2.6 of its 13.8 s
(measured with DaCe's own function timed inside the lowering). The line
recorded is always DaCe's or gt4py's own code (a model's source is parsed,
never run, and the frontend passes its lines explicitly), and code generation
never reads it; but it is stored in the SDFG, so it must stay the same.

:func:`cheap_line_info` installs, for the duration of a ``with`` block, a
function that returns exactly what DaCe's returns (the same
:class:`dace.dtypes.DebugInfo`, from the same frame) but reads that one frame
(``sys._getframe``) instead of building the whole stack. It is installed only
over the DaCe function it was written for (one that calls
``inspect.stack``); another DaCe's function is left alone.
"""

from __future__ import annotations

import contextlib
import inspect
import sys
from typing import Any, Iterator, Optional

from orchestra.toolchain.stand_in import standing_in

#: What DaCe's function calls, checked before it is replaced: the version it was written for.
_REPLACES_NAMES = frozenset({"stack", "getframeinfo", "DebugInfo"})


def _line_of_caller(explicit_lineinfo: Optional[Any]) -> Optional[Any]:
    """DaCe's ``dace.sdfg.state._get_debug_info``, reading only the frame it keeps."""
    import dace
    from dace import dtypes

    mode = dace.Config.get("compiler", "lineinfo")
    if mode == "none":
        return None
    if explicit_lineinfo is not None:
        return explicit_lineinfo
    if mode == "inspect":
        # DaCe keeps inspect.stack()[2] of its own function: the caller of the
        # state method that called it. Here frame 0 is this function, as there.
        caller = inspect.getframeinfo(sys._getframe(2), context=0)
        return dtypes.DebugInfo(caller.lineno, 0, caller.lineno, 0, caller.filename)
    return None


def replaceable(function: Any) -> bool:
    """Whether ``function`` is the DaCe function :func:`_line_of_caller` stands for."""
    code = getattr(function, "__code__", None)
    return code is not None and code.co_argcount == 1 and _REPLACES_NAMES <= set(code.co_names)


@contextlib.contextmanager
def cheap_line_info() -> Iterator[None]:
    """Inside the block, DaCe finds a new node's source line from one frame, not the whole stack."""
    from dace.sdfg import state

    found = getattr(state, "_get_debug_info", None)
    if found is _line_of_caller or not replaceable(found):
        yield
        return
    with standing_in(state, {"_get_debug_info": _line_of_caller}):
        yield
