"""The C++ the debug checks add to a program: one runtime block and one tasklet per kernel.

The runtime (``runtime.h`` beside this module) goes once into the program's global code; each
check state holds a C++ tasklet whose code (:func:`kernel_code`) calls it with
constants baked in: program, kernel, field names, the written box, strides.

Output goes to stderr (unbuffered, flushed after every line, so it survives a
crash), each line prefixed with the MPI rank when one is found in the
environment. A failing check prints one report, then ends the job:

1. it flushes C stdio, then, if the process runs Python (it does when the
   program is called from orchestra), takes the GIL and flushes Python's
   ``sys.stdout``/``sys.stderr``; if ``mpi4py.MPI`` is initialized with more
   than one rank it calls ``COMM_WORLD.Abort(86)``, which ends every rank;
2. otherwise (or if that returns) it calls ``std::_Exit(86)``: no Python
   exception, no unwinding through the library; ``mpirun`` ends the whole job
   when one rank exits with a non-zero status.

NaN/Inf are detected on the bit pattern, so fast-math flags cannot remove the
check.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional, Sequence

from orchestra.passes.debug.selection import DEBUG_EXIT_CODE

MAX_DIMS = 8

#: The C++ runtime the check tasklets call, with @EXIT_CODE@ and @MAX_DIMS@ to fill in.
RUNTIME_FILE = Path(__file__).with_name("runtime.h")


def runtime_code() -> str:
    """The runtime block for the program's global code."""
    return RUNTIME_FILE.read_text().replace("@EXIT_CODE@", str(DEBUG_EXIT_CODE)).replace("@MAX_DIMS@", str(MAX_DIMS))


def c_string(text: str) -> str:
    """A C++ string literal for ``text``.

    >>> c_string('a"b\\\\c')
    '"a\\\\"b\\\\\\\\c"'
    """
    out = []
    for char in text:
        if char in '"\\':
            out.append("\\" + char)
        elif 32 <= ord(char) < 127:
            out.append(char)
        else:
            out.append("?")
    return '"' + "".join(out) + '"'


def _cpp(expression: Any) -> str:
    from dace.codegen.common import sym2cpp

    return f"(long long)({sym2cpp(expression)})"


def loop_order(strides: Sequence[Any]) -> list[int]:
    """Dimensions outermost first, innermost the smallest stride (natural order if symbolic).

    >>> loop_order([8, 1, 64])
    [2, 0, 1]
    """
    try:
        values = [int(stride) for stride in strides]
    except (TypeError, ValueError):
        return list(range(len(strides)))
    return sorted(range(len(values)), key=lambda d: (-values[d], d))


def box_code(subset: Any, desc: Any) -> str:
    """A ``Box`` initializer for the written ``subset`` of the array ``desc``."""
    ndim = len(desc.shape)
    if ndim > MAX_DIMS:
        raise ValueError(f"debug checks support arrays of up to {MAX_DIMS} dimensions, got {ndim}")
    begins, ends, steps = [], [], []
    for d, (begin, end, step) in enumerate(subset.ranges):
        offset = desc.offset[d] if desc.offset else 0
        begins.append(_cpp(begin))
        ends.append(_cpp(end))
        steps.append(_cpp(step))
        if offset != 0:  # DaCe indexes element (index + offset) * stride
            raise ValueError(f"debug checks do not support array offsets ({desc.offset})")
    strides = [_cpp(stride) for stride in desc.strides]
    order = [str(d) for d in loop_order(desc.strides)]
    join = ", ".join
    return (
        f"orchestra_debug::Box{{{ndim}, {{{join(begins)}}}, {{{join(ends)}}}, {{{join(steps)}}}, "
        f"{{{join(strides)}}}, {{{join(order)}}}}}"
    )


def trace_point(point: Optional[Sequence[int]], desc: Any) -> Optional[str]:
    """The traced index as a C++ initializer for a field of ``desc``'s rank, or None to skip it."""
    ndim = len(desc.shape)
    if ndim not in (2, 3):
        return None
    if point is None:
        values = [f"{_cpp(size)} / 2" for size in desc.shape]
    else:
        values = [str(int(v)) for v in point[:ndim]]
    return "{" + ", ".join(values) + "}"


def _kernel_constant(program: str, kernel: Any, count: int) -> str:
    return (
        f"    static const orchestra_debug::Kernel kernel = {{{c_string(program)}, {c_string(kernel.label)}, "
        f"{c_string(kernel.stencil)}, {c_string(kernel.state_label)}, {kernel.index}, {count}}};"
    )


def sync_code(program: str, kernel: Any, count: int) -> str:
    """The C++ that waits for the GPU after a kernel and reports a GPU error naming it."""
    return "\n".join(
        [
            f"// orchestra debug: GPU synchronization after {kernel.describe()}",
            "{",
            _kernel_constant(program, kernel, count),
            "    orchestra_debug::gpu_sync(kernel, orchestra_debug::sequence_counter + 1);",
            "}",
        ]
    )


def kernel_code(
    program: str,
    kernel: Any,
    count: int,
    field_checks: Sequence[tuple[str, str, Any, Any, dict]],
    progress: bool,
) -> str:
    """The C++ run after one kernel.

    ``field_checks`` holds, per field, ``(connector, shown name, subset, descriptor, what)``
    with ``what`` a dict that may name ``finite`` (True), ``below`` (a threshold) and
    ``trace`` (the point initializer).
    """
    lines = [
        f"// orchestra debug checks after {kernel.describe()}",
        "{",
        _kernel_constant(program, kernel, count),
        "    const long long seq = orchestra_debug::next_sequence();",
    ]
    if progress:
        lines.append("    orchestra_debug::progress(kernel, seq);")
    for connector, name, subset, desc, what in field_checks:
        lines.append("    {")
        lines.append(f"        const orchestra_debug::Box box = {box_code(subset, desc)};")
        if "trace" in what:
            lines.append(f"        const long long point[] = {what['trace']};")
            lines.append(f"        orchestra_debug::trace(kernel, seq, {c_string(name)}, {connector}, box, point);")
        if what.get("finite"):
            lines.append(f"        orchestra_debug::check_finite(kernel, seq, {c_string(name)}, {connector}, box);")
        if "below" in what:
            lines.append(
                f"        orchestra_debug::check_below(kernel, seq, {c_string(name)}, {connector}, box, "
                f"{float(what['below'])!r});"
            )
        lines.append("    }")
    lines.append("}")
    return "\n".join(lines)
