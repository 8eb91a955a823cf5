"""DaCe's ``ProgramVisitor._parse_sdfg_call`` as orchestra runs it during a parse: two corrections.

``_parse_sdfg_call`` nests the SDFG of a called program (a nested
orchestrated component, a stencil) in its caller's. orchestra runs the
pinned DaCe's own source of that method with these lines changed:

**A nested component's array reaches its caller as that array, not as a
caller's array of the same name** (soundness). DaCe passes the arrays a
nested program reads through ``self`` (its closure arrays) in from the
caller. When the nested program is called a second time, DaCe finds the
array already passed (by identity) under the caller's name ``k``, but then
connects it under the *nested* program's name (``__g_self_b3``), which in
the caller may be a different array of the caller's own ``self.b3``. The two
became one container: a stencil's output in the caller and a callback's
array in the component wrote the same memory (found by the random callback
programs, issue 54; any model whose component, called twice, reads
``self.x`` while its caller has a ``self.x`` of its own). Corrected: an
array found already passed is connected under the caller's name it was
found under.

**The nested SDFG's free symbols walked once, not twice** (speed). DaCe asks
``sdfg.arglist()``, which walks the whole nested SDFG and every SDFG below it
for the symbols it uses, and a few lines later ``sdfg.used_symbols(False)``,
the same walk again; nothing between the two changes the nested SDFG (the
lines between read its symbols, arrays and callback mapping and add to the
*caller's* SDFG). Each walk was about 9% of the parse of the FV3-size
benchmark. Corrected: the walk's answer is kept and given to ``arglist``
and to the later line (a copy: that line's set is changed afterwards).

A DaCe whose source differs is refused, naming this module, rather than
parsed with the defect.
"""

from __future__ import annotations

import contextlib
import inspect
import textwrap
from typing import Any, Callable, Iterator, Optional

from orchestra.errors import BuildError

#: (lines of DaCe 2.0.0b1's ``_parse_sdfg_call`` as they read, the corrected lines), each found exactly once.
_CORRECTIONS = (
    # the array found already passed is connected under the caller's name for it
    ("""                for k, v in self.nested_closure_arrays.items():
                    if arr is v[0]:
                        is_new_arr = False
                        break
""", """                for k, v in self.nested_closure_arrays.items():
                    if arr is v[0]:
                        is_new_arr = False
                        known_outer = k  # orchestra: the caller's name of this very array
                        break
"""),
    # the free symbols of an SDFG given as such, walked once
    ("""            required_args = [a for a in sdfg.arglist().keys() if a not in sdfg.symbols and not a.startswith("__return")]
""", """            walked_symbols = sdfg.used_symbols(all_symbols=False)  # orchestra: walked once
            required_args = [a for a in sdfg.arglist(free_symbols=walked_symbols).keys() if a not in sdfg.symbols and not a.startswith("__return")]
"""),
    # the free symbols of a converted program's SDFG, walked once
    ("""            req = sdfg.arglist().keys()
""", """            walked_symbols = sdfg.used_symbols(all_symbols=False)  # orchestra: walked once
            req = sdfg.arglist(free_symbols=walked_symbols).keys()
"""),
    # ... and given to the later line, which changes its set
    ("""        symbols = sdfg.used_symbols(all_symbols=False)
""", """        symbols = set(walked_symbols)  # orchestra: the walk above; the nested SDFG is unchanged since
"""),
)

_corrected: Optional[Callable] = None


def _corrected_method() -> Callable:
    global _corrected
    if _corrected is None:
        from dace.frontend.python import newast

        original = newast.ProgramVisitor._parse_sdfg_call
        source = textwrap.dedent(inspect.getsource(original))
        for found, corrected in _CORRECTIONS:
            if source.count(_dedent_block(found)) != 1:
                raise BuildError(
                    "this DaCe's ProgramVisitor._parse_sdfg_call is not the one orchestra corrects (DaCe 2.0.0b1): "
                    "adapt orchestra/pipeline/corrected_sdfg_call.py to it"
                )
            source = source.replace(_dedent_block(found), _dedent_block(corrected))
        namespace: dict[str, Any] = {}
        exec(compile(source, inspect.getsourcefile(original) or "<dace>", "exec"), vars(newast), namespace)
        _corrected = namespace[original.__name__]
    return _corrected


def _dedent_block(block: str) -> str:
    """``block`` as it reads in the method's dedented source (the method body is indented by 4 less)."""
    return "\n".join(line[4:] if line.startswith("    ") else line for line in block.split("\n"))


@contextlib.contextmanager
def corrected_sdfg_calls() -> Iterator[None]:
    """Within the block, DaCe nests called programs' SDFGs with this module's corrections."""
    from dace.frontend.python.newast import ProgramVisitor

    original = ProgramVisitor._parse_sdfg_call
    ProgramVisitor._parse_sdfg_call = _corrected_method()
    try:
        yield
    finally:
        ProgramVisitor._parse_sdfg_call = original
