"""What a build refuses about scratch arrays (:mod:`orchestra.stencils.scratch`).

A scratch array is a transient of the compiled program: the program never
writes the array Python holds. A Python callback given one
(``self.report(self.tmp)`` with ``report`` a ``dace_inhibitor`` method, or
any call DaCe leaves to Python) receives the object Python holds, as DaCe
passes an argument it can evaluate while parsing, so it would see stale
values where ``Python`` mode sees the ones just computed. Refused at parse
time, naming the call's line.

A call that reads a scratch array before writing any of it reads nothing the
call computed (``Python`` mode reads the previous call's values, the compiled
program its own transient's): refused at parse time when the first stencil
that touches the array reads it, naming that call's line. Only the certain
case is refused (the first state touching the array runs on every call, not
inside a loop or a branch, no write precedes the read in it, and the reading
stencil does not write the array itself); a read of
points an earlier write did not cover is the model's responsibility
(docs/orchestration.md#scratch-arrays).
"""

from __future__ import annotations

from typing import Any, Iterator, Optional

from orchestra.errors import BuildError
from orchestra.frontend.callback_arguments import flattened
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


def check_scratch_written_before_read(sdfg: Any, closure: Any, program_name: str) -> None:
    """Raise :class:`BuildError` if the program certainly reads a scratch array before writing it."""
    from orchestra.passes.debug.kernels import ordered_states

    scratch = {name: str(entry[0]) for name, entry in getattr(closure, "closure_arrays", {}).items()
               if getattr(entry[1], "transient", False)}
    if not scratch:
        return
    seen: set[str] = set()
    for state in ordered_states(sdfg):
        touched = {node.data for node in state.data_nodes() if node.data in scratch} - seen
        for name in touched:
            reader = _read_before_written(state, name) if _runs_every_call(state, sdfg) else None
            if reader is not None:
                info = reader.debuginfo
                where = f"{info.filename}:{info.start_line}: " if info is not None and info.filename else ""
                raise BuildError(
                    f"{where}{program_name}: {scratch[name]} is a scratch array, and the call reads it here before "
                    "writing any of it: a scratch array holds nothing between calls (the compiled program keeps its "
                    "own copy). Write it earlier in the call, or hold a plain array if its values must last from "
                    "one call to the next"
                )
        seen |= touched


def _runs_every_call(state: Any, sdfg: Any) -> bool:
    """True if ``state`` is not inside a loop or a branch of the program (it runs once per call)."""
    from dace.sdfg.state import ConditionalBlock, LoopRegion

    graph = state.parent_graph
    while graph is not None and graph is not sdfg:
        if isinstance(graph, (LoopRegion, ConditionalBlock)):
            return False
        graph = getattr(graph, "parent_graph", None)
    return True


def _read_before_written(state: Any, name: str) -> Optional[Any]:
    """A node reading ``name`` in ``state`` that no write of ``name`` in the state precedes; None if none."""
    from orchestra.passes.fusion.vertical import _reaches

    nodes_of = [node for node in state.data_nodes() if node.data == name]
    writers = [node for node in nodes_of if any(not e.data.is_empty() for e in state.in_edges(node))]
    for node in nodes_of:
        for edge in state.out_edges(node):
            if edge.data.is_empty() or _writes(state, edge.dst, name):
                continue  # (a stencil that also writes it, e.g. a sweep reading level k - 1: its own order)
            if not any(writer is node or _reaches(state, writer, node) for writer in writers):
                return edge.dst
    return None


def _writes(state: Any, node: Any, name: str) -> bool:
    return any(getattr(edge.dst, "data", None) == name and not edge.data.is_empty() for edge in state.out_edges(node))


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
    instructions = flattened(function).get("instructions") or ()
    for position, instruction in enumerate(instructions):
        if len(instruction) == 4 and instruction[3]:  # (first argument, rebuild, count, constant)
            try:  # the object now (orchestra.frontend.callback_arguments re-reads it at each call)
                value = instruction[1]()
            except Exception:  # noqa: BLE001 (an expression that does not evaluate now names no array)
                continue
            yield position, value


def _call_site(sdfg: Any, name: str) -> str:
    """``file:line: `` of the tasklet calling callback ``name``, if the SDFG records it."""
    from dace.sdfg import nodes

    for node, _parent in sdfg.all_nodes_recursive():
        if isinstance(node, nodes.Tasklet) and f"{name}(" in node.code.as_string:
            info: Optional[Any] = node.debuginfo
            if info is not None and info.filename:
                return f"{info.filename}:{info.start_line}: "
    return ""
