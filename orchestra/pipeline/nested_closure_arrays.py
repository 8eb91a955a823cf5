"""A nested component's array reaches its caller as that array, not as a caller's array of the same name.

DaCe's frontend passes the arrays a nested program reads through ``self``
(its closure arrays) in from the caller. When the nested program is called
a second time, DaCe finds the array already passed (by identity) under the
caller's name ``k``, but then connects it under the *nested* program's name
(``__g_self_b3``), which in the caller may be a different array of the
caller's own ``self.b3``. The two become one container: a stencil's output
in the caller and a callback's array in the component write the same memory
(found by the random callback programs, issue 54; any model whose component,
called twice, reads ``self.x`` while its caller has a ``self.x`` of its own).

:func:`nested_arrays_by_identity` (active during a parse) runs DaCe's
``ProgramVisitor._parse_sdfg_call`` with that one step corrected: an array
found already passed is connected under the caller's name it was found
under. The correction is applied to the pinned DaCe's own source of the
method; a DaCe whose source differs is refused, naming this module, rather
than parsed with the defect.
"""

from __future__ import annotations

import contextlib
import inspect
import textwrap
from typing import Any, Callable, Iterator, Optional

from orchestra.errors import BuildError

#: The lines of DaCe 2.0.0b1's ``_parse_sdfg_call`` that find an array already passed, and the corrected ones.
_FOUND = """                for k, v in self.nested_closure_arrays.items():
                    if arr is v[0]:
                        is_new_arr = False
                        break
"""
_CORRECTED = """                for k, v in self.nested_closure_arrays.items():
                    if arr is v[0]:
                        is_new_arr = False
                        known_outer = k  # orchestra: the caller's name of this very array
                        break
"""

_corrected: Optional[Callable] = None


def _corrected_method() -> Callable:
    global _corrected
    if _corrected is None:
        from dace.frontend.python import newast

        original = newast.ProgramVisitor._parse_sdfg_call
        source = textwrap.dedent(inspect.getsource(original))
        if source.count(_dedent_block(_FOUND)) != 1:
            raise BuildError(
                "this DaCe's ProgramVisitor._parse_sdfg_call is not the one orchestra corrects (DaCe 2.0.0b1): "
                "adapt orchestra/pipeline/nested_closure_arrays.py to it"
            )
        patched = source.replace(_dedent_block(_FOUND), _dedent_block(_CORRECTED))
        namespace: dict[str, Any] = {}
        exec(compile(patched, inspect.getsourcefile(original) or "<dace>", "exec"), vars(newast), namespace)
        _corrected = namespace[original.__name__]
    return _corrected


def _dedent_block(block: str) -> str:
    """``block`` as it reads in the method's dedented source (the method body is indented by 4 less)."""
    return "\n".join(line[4:] if line.startswith("    ") else line for line in block.split("\n"))


@contextlib.contextmanager
def nested_arrays_by_identity() -> Iterator[None]:
    """Within the block, DaCe connects a nested program's closure array under its caller's name for it."""
    from dace.frontend.python.newast import ProgramVisitor

    original = ProgramVisitor._parse_sdfg_call
    ProgramVisitor._parse_sdfg_call = _corrected_method()
    try:
        yield
    finally:
        ProgramVisitor._parse_sdfg_call = original
