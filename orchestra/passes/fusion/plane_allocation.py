"""Thread-private buffers exist in every thread that runs the loop using them.

Reads and changes: the C++ that DaCe generates (after code generation; the
SDFG is not changed), like :mod:`orchestra.passes.cpu.simd`.

A scratch plane (:mod:`.scratch_planes`) is one buffer per OpenMP thread:
DaCe's ``CPU_ThreadLocal`` storage, a ``threadprivate`` pointer that the
library's init function allocates inside one ``#pragma omp parallel``
region. Only the threads of *that* team get a buffer. A call from another
Python thread runs its parallel loops on another team (libgomp keeps a
thread pool per calling thread), whose pointers are null: the program
crashed (a segmentation fault, found by calling a model from a
``threading.Thread``). A larger team than at init (``omp_set_num_threads``,
threadpoolctl) would crash the same way.

So each parallel loop that uses such a buffer first makes sure the thread
running it has one: ``if (buffer == nullptr) buffer = <the init's
allocation>;`` at the top of the loop body, one test per iteration of the
outer loop (a level). Buffers allocated this way by threads of another team
are freed when those threads end, never (the finalizer frees its own team's):
one plane per such thread, the size of one level. Values are unaffected:
every iteration writes the plane before reading it (the pass's condition).

>>> code = '''double *__0_tmp_plane;
... #pragma omp threadprivate(__0_tmp_plane)
... void run(double * y) {
...     #pragma omp parallel for
...     for (int k = 0; k < 6; k += 1) {
...         __0_tmp_plane[0] = 1.0;
...         y[k] = __0_tmp_plane[0];
...     }
... }
... void init() {
...     #pragma omp parallel
...     {
...         __0_tmp_plane = dace::aligned_new_array<double>(256, 64);
...     }
... }'''
>>> fixed, count = allocate_on_first_use(code)
>>> count, fixed.splitlines()[5].strip()
(1, 'if (__0_tmp_plane == nullptr) __0_tmp_plane = dace::aligned_new_array<double>(256, 64);')
"""

from __future__ import annotations

import logging
import re
from typing import Any

log = logging.getLogger("orchestra")

_THREADPRIVATE = re.compile(r"^\s*#pragma omp threadprivate\((?P<name>\w+)\)", re.MULTILINE)
_PARALLEL_FOR = re.compile(r"^\s*#pragma omp parallel for\b(?P<clauses>.*)$")
_LOOP_HEADER = re.compile(r"^\s*for \(.*\)\s*\{\s*(////.*)?$")


def allocate_on_first_use(code: str) -> tuple[str, int]:
    """``code`` with each thread-private buffer allocated, if null, at the top of the parallel loops using it.

    Returns the new code and how many checks were inserted. A buffer whose
    allocation in the init function is not found, and a loop whose nest is
    collapsed (nothing may stand between its headers), are left as they are.
    """
    allocations = {}
    for name in dict.fromkeys(_THREADPRIVATE.findall(code)):
        found = re.search(rf"^\s*{re.escape(name)} = (?P<allocation>[^;]+);", code, re.MULTILINE)
        if found:
            allocations[name] = found.group("allocation")
    if not allocations:
        return code, 0
    lines = code.split("\n")
    out: list[str] = []
    inserted = 0
    index = 0
    while index < len(lines):
        line = lines[index]
        out.append(line)
        index += 1
        pragma = _PARALLEL_FOR.match(line)
        if not pragma or "collapse" in pragma.group("clauses") or index >= len(lines):
            continue
        if not _LOOP_HEADER.match(lines[index]):
            continue
        body = _block(lines, index)
        used = [name for name in allocations if re.search(rf"\b{re.escape(name)}\b", body)]
        out.append(lines[index])
        index += 1
        indent = re.match(r"\s*", lines[index] if index < len(lines) else "").group(0)
        for name in used:
            out.append(f"{indent}if ({name} == nullptr) {name} = {allocations[name]};")
            inserted += 1
    return "\n".join(out), inserted


def _block(lines: list[str], header: int) -> str:
    """The text of the braced block opened on line ``header``."""
    depth = 0
    for index in range(header, len(lines)):
        depth += lines[index].count("{") - lines[index].count("}")
        if depth <= 0 and index > header:
            return "\n".join(lines[header : index + 1])
    return "\n".join(lines[header:])


def allocate_in_code_objects(code_objects: list[Any]) -> None:
    """:func:`allocate_on_first_use` on each CPU C++ code object DaCe generated (in place)."""
    for code_object in code_objects:
        if code_object.language == "cpp" and code_object.target.target_name == "cpu":
            code_object.code, inserted = allocate_on_first_use(code_object.code)
            if inserted:
                log.debug("%s: %d thread buffers allocated on first use", code_object.name, inserted)
