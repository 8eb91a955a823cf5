"""The innermost loop of every map of two or more dimensions is vectorized (``#pragma omp simd``).

Reads and changes: the C++ that DaCe generates for the program's CPU maps
(after code generation; the SDFG is not changed). DaCe writes a map of
several dimensions as one ``for`` header per dimension, nothing between them
(after ``#pragma omp parallel for`` when the map is the parallel one; the
horizontal maps inside a parallel vertical map are sequential). Inside
OpenMP's outlined function the arrays are reached through the shared-data
struct, so gcc no longer sees them as ``__restrict__`` and leaves most loops
scalar (on the dycore: a copy of three fields, ``h0[...] = h[...]``,
"complicated access pattern"). A map's iterations are independent by
definition (that is what makes it a map; a loop-carried order is a loop
region or a sweep, never a map), so the innermost dimension is declared
``omp simd``, which says exactly that and nothing more. Which loops are a
map's is read from the SDFG, not guessed from the text: a chain of loop
headers is marked only where its first loops' variables are exactly one
map's parameters, and only one map's (a loop inside the map's body, a sweep
with an order of its own, is never marked).

Results stay bitwise equal: ``omp simd`` allows no reassociation (no
``reduction`` clause is given) and the toolchain's rules are unchanged
(``-ffp-contract=off``, no fast-math: glibc declares vector variants of
``exp``/``log`` only under ``__FAST_MATH__``, so math functions stay the
scalar ones). Skipped: a map whose body writes through atomics or
write-conflict resolution (``wcr``), and a ``collapse`` clause (the
innermost loop belongs to the collapsed nest).

>>> code = '''#pragma omp parallel for
... for (int __i = 0; __i < 24; __i += 1) {
...     for (int __j = 0; __j < 24; __j += 1) {
...         b[24 * __i + __j] = a[24 * __i + __j];
...     }
... }'''
>>> marked, count = vectorize_innermost_loops(code, {("__i", "__j")})
>>> count, marked.splitlines()[2].strip()
(1, '#pragma omp simd')
"""

from __future__ import annotations

import re
from typing import Any

_FOR = re.compile(r"^(?P<indent>\s*)for \((?:int|long|int64_t|auto|long long) (?P<var>\w+) = [^;]+; (?P=var) < [^;]+; (?P=var) \+= [^)]+\) \{\s*$")
#: DaCe's source-map markers at the end of a generated line (``////__DACE:0:1:2``)
_MARKER = re.compile(r"[ \t]*////__(DACE:|CODEGEN;)[^\n]*")
#: what in a map's body writes shared memory in an order of its own
_ORDERED_WRITES = ("atomic", "wcr", "critical", "reduce(")


#: the schedules whose maps DaCe's CPU code generator writes as plain nested loops
_CPU_SCHEDULES = ("CPU_Multicore", "Sequential", "Default")


def map_parameters(sdfg: Any) -> set[tuple[str, ...]]:
    """The parameters of every CPU map of two or more dimensions in ``sdfg``, at any depth."""
    from dace.sdfg import nodes

    return {
        tuple(node.map.params)
        for node, _ in sdfg.all_nodes_recursive()
        if isinstance(node, nodes.MapEntry) and node.map.schedule.name in _CPU_SCHEDULES and len(node.map.params) >= 2
    }


def vectorize_innermost_loops(code: str, maps: set[tuple[str, ...]]) -> tuple[str, int]:
    """``code`` with ``#pragma omp simd`` before the innermost loop of each map of ``maps``.

    ``maps``: the parameters of the program's maps (:func:`map_parameters`).
    Returns the new code and how many loops were marked.
    """
    original = code.split("\n")
    lines = [_MARKER.sub("", line) for line in original]  # matched without DaCe's markers, written with them
    functions = _function_bodies(lines)
    out: list[str] = []
    marked = 0
    index = 0
    while index < len(lines):
        out.append(original[index])
        index += 1
        previous = lines[index - 1]
        if _FOR.match(previous) or "collapse" in previous or index >= len(lines) or not _FOR.match(lines[index]):
            continue  # a chain starts at a loop header that follows no other (nor a collapsed pragma)
        names = []
        while index + len(names) < len(lines) and (header := _FOR.match(lines[index + len(names)])):
            names.append(header.group("var"))
        dimensions = [n for n in range(2, len(names) + 1) if tuple(names[:n]) in maps]
        if len(dimensions) != 1:
            continue  # not one map's loops, or more than one map could be meant: left alone
        innermost = index + dimensions[0] - 1
        if _writes_in_order(_block(lines, innermost), functions, set()):
            continue
        out.extend(original[index:innermost])
        out.append(_FOR.match(lines[innermost]).group("indent") + "#pragma omp simd")
        index = innermost
        marked += 1
    return "\n".join(out), marked


_FUNCTION = re.compile(r"^(?:inline |static |DACE_EXPORTED )*void (?P<name>\w+)\(.*\{\s*$")
_CALL = re.compile(r"\b(\w+)\(__state\b")


def _block(lines: list[str], start: int) -> list[str]:
    """The lines from ``lines[start]`` (which opens a brace) to the line closing it (None if unbalanced)."""
    depth = 0
    for end in range(start, len(lines)):
        depth += lines[end].count("{") - lines[end].count("}")
        if depth <= 0:
            return lines[start : end + 1]
    return None


def _function_bodies(lines: list[str]) -> dict[str, list[str]]:
    """Name -> body of every top-level function DaCe generated (nested SDFGs become such functions)."""
    bodies = {}
    for index, line in enumerate(lines):
        match = _FUNCTION.match(line)
        if match:
            bodies[match.group("name")] = _block(lines, index)
    return bodies


def _writes_in_order(body, functions: dict, seen: set) -> bool:
    """Whether ``body``, or a function it calls, writes through atomics or conflict resolution."""
    if body is None:
        return True  # unbalanced: leave it alone
    for line in body:
        if any(word in line for word in _ORDERED_WRITES):
            return True
        for called in _CALL.findall(line):
            if called in functions and called not in seen:
                seen.add(called)
                if _writes_in_order(functions[called], functions, seen):
                    return True
    return False
