"""What a build refuses about scratch arrays (:mod:`orchestra.stencils.scratch`).

A scratch array is a transient of the compiled program: the program never
writes the array Python holds. A Python callback given one
(``self.report(self.tmp)`` with ``report`` a ``dace_inhibitor`` method, or
any call DaCe leaves to Python) receives the object Python holds, as DaCe
passes an argument it can evaluate while parsing, so it would see stale
values where ``Python`` mode sees the ones just computed. Refused at parse
time, naming the call's line.
"""

from __future__ import annotations

import inspect
from typing import Any, Iterator, Optional

from orchestra.errors import BuildError
from orchestra.key.array_like import is_scratch


def check_scratch_not_given_to_callbacks(sdfg: Any, closure: Any, program_name: str) -> None:
    """Raise :class:`BuildError` if a Python callback of the program is given a scratch array."""
    for name, expression, function in _callbacks(closure):
        for position, value in _fixed_arguments(function):
            if is_scratch(value):
                where = _call_site(sdfg, name)
                raise BuildError(
                    f"{where}{program_name}: {expression}(...) is given a scratch array as argument {position + 1} "
                    f"({value!r}); a Python callback sees the array Python holds, which the compiled program never "
                    "writes (a scratch array is the program's own transient), so it would read stale values. Pass "
                    "an array that is not scratch (copy into one inside the program), or do the work in a stencil"
                )


def _callbacks(closure: Any, depth: int = 0) -> Iterator[tuple[str, str, Any]]:
    """(data name, expression, function) of every callback of ``closure`` and of its nested closures."""
    if closure is None or depth > 64:
        return
    for name, entry in getattr(closure, "callbacks", {}).items():
        yield name, str(entry[0]), entry[1]
    for _call, child in getattr(closure, "nested_closures", ()):
        yield from _callbacks(child, depth + 1)


def _fixed_arguments(function: Any) -> Iterator[tuple[int, Any]]:
    """(position, value) of each argument DaCe fixed while parsing (``flatten_callback``'s constants)."""
    try:
        instructions = inspect.getclosurevars(function).nonlocals.get("instructions") or ()
    except (TypeError, ValueError):
        return
    for position, instruction in enumerate(instructions):
        if len(instruction) == 4 and instruction[3]:  # (first argument, rebuild, count, constant)
            try:
                captured = inspect.getclosurevars(instruction[1]).nonlocals
            except (TypeError, ValueError):
                continue
            if "val" in captured:
                yield position, captured["val"]


def _call_site(sdfg: Any, name: str) -> str:
    """``file:line: `` of the tasklet calling callback ``name``, if the SDFG records it."""
    from dace.sdfg import nodes

    for node, _parent in sdfg.all_nodes_recursive():
        if isinstance(node, nodes.Tasklet) and f"{name}(" in node.code.as_string:
            info: Optional[Any] = node.debuginfo
            if info is not None and info.filename:
                return f"{info.filename}:{info.start_line}: "
    return ""
