"""Every nested SDFG of a parsed program follows DaCe 2's nested-SDFG contract, or the build is refused.

DaCe 2.0.0b1 reads a nested SDFG's connector as the caller's container
itself, indexed as the caller indexes it. SDFGs made for DaCe 1.x describe a
connector as the *window* the outer memlet selects, with the memlets inside
relative to it. Read DaCe 2's way such a nested SDFG loses its window: wrong
values and writes past the array (a plain ``gtscript.stencil`` with a
``horizontal(region[...])`` called with ``origin=``/``domain=``: issue 54).
gt4py 1.1.12's stencil objects still nest their computation that way, and so
may any SDFG-convertible a model calls.

:func:`restate_nested_sdfgs` runs on the whole parsed program, at every depth
and inside loops and branches (``states()`` recurses into control-flow regions), before anything simplifies or inlines it:
whatever entered the program (``FrozenStencil``, a gt4py stencil object
called directly, a DaCe program, an SDFG) is restated with DaCe's
``widen_windowed_connectors`` and ``integrate_nested_sdfg``. A nested SDFG
DaCe cannot restate, or one still windowed afterwards, is a
:class:`~orchestra.errors.BuildError` naming it: never run.
"""

from __future__ import annotations

from typing import Any

from orchestra.errors import BuildError


def restate_nested_sdfgs(sdfg: Any, label: str) -> list[str]:
    """Restate every nested SDFG below ``sdfg`` in place; returns ``"name.connector"`` of each window restated."""
    from dace.sdfg.dealias import SymbolResolver

    restated: list[str] = []
    _restate_below(sdfg, SymbolResolver(), label, restated)
    return restated


def _restate_below(sdfg: Any, symbols: Any, label: str, restated: list[str]) -> None:
    from dace.sdfg import nodes
    from dace.sdfg.dealias import integrate_nested_sdfg, widen_windowed_connectors, windowed_connectors

    for state in sdfg.states():
        for node in state.nodes():
            if not isinstance(node, nodes.NestedSDFG) or node.sdfg is None:
                continue
            inner = node.sdfg
            try:
                windows = windowed_connectors(inner, symbols)
                widen_windowed_connectors(inner, symbols)
                integrate_nested_sdfg(inner, symbols)
                left = windowed_connectors(inner, symbols)
            except Exception as error:
                raise BuildError(
                    f"{label}: the nested program {inner.name} (called in {sdfg.name}) does not follow DaCe 2's "
                    f"nested-SDFG contract and cannot be restated ({type(error).__name__}: {error}); orchestra "
                    "refuses to build it rather than compute with shifted indices. If it is a gt4py stencil, "
                    "call it through orchestra.FrozenStencil"
                ) from error
            if left:
                raise BuildError(
                    f"{label}: the nested program {inner.name} (called in {sdfg.name}) still reads its "
                    f"argument(s) {sorted(left)} through windows after restating them for DaCe 2's nested-SDFG "
                    "contract; orchestra refuses to build it rather than compute with shifted indices. If it is "
                    "a gt4py stencil, call it through orchestra.FrozenStencil"
                )
            restated.extend(f"{inner.name}.{connector}" for connector in windows)
            _restate_below(inner, symbols, label, restated)
