"""DaCe's simplification, with the passes orchestra skips on whole-model graphs.

Reads and changes: the whole SDFG (DaCe's simplify pipeline, minus
:data:`SIMPLIFY_SKIP`, with state fusion kept from reordering a write after a
read: :mod:`orchestra.passes.fusion_hazards`). Used by the optimize stage and
by the GPU pass.
"""

from __future__ import annotations

from typing import Any, Iterable, Optional

#: Simplify passes skipped on whole-model graphs, and why.
SIMPLIFY_SKIP = frozenset(
    {
        # Known to mis-promote scalars written in nested SDFGs (wrong numbers)
        # and to fail parsing on gt4py stencil graphs.
        "ScalarToSymbolPromotion",
        # Quadratic on large graphs with this DaCe: minutes become hours.
        "LiftTrivialIf",
    }
)


def simplify(sdfg: Any, skip: Optional[Iterable[str]] = None) -> None:
    """Run DaCe's simplify pipeline on ``sdfg`` in place, without the passes in ``skip``.

    ``skip`` defaults to :data:`SIMPLIFY_SKIP`.
    """
    from dace.transformation.passes.simplify import SimplifyPass

    from orchestra.passes.deferred_cfg_list import deferred_cfg_lists
    from orchestra.passes.fusion_hazards import ordered_state_fusion
    from orchestra.toolchain.symbol_folding import folding_only_where_possible

    skip = SIMPLIFY_SKIP if skip is None else skip
    # ordered: DaCe's FuseStates could leave a write-after-read unordered; deferred: each inlined
    # nested SDFG renumbered the whole program's regions (quadratic, see deferred_cfg_list); folding:
    # each inlined SDFG's nested SDFGs are integrated again, and walked only where a symbol may fold
    with ordered_state_fusion(), deferred_cfg_lists(sdfg), folding_only_where_possible():
        SimplifyPass(validate=False, validate_all=False, skip=set(skip), verbose=False).apply_pass(sdfg, {})


def expand_library_nodes(sdfg: Any) -> bool:
    """Expand ``sdfg``'s library nodes in place; False, and nothing done, if it has none.

    The optimize stage simplifies again only after an expansion: DaCe's simplify runs to a
    fixed point, so that second run changed nothing in a program without library nodes, and
    it was a tenth of the optimize stage on an FV3-size program (docs/performance.md).
    """
    from dace.sdfg import nodes

    if not any(isinstance(node, nodes.LibraryNode) for node, _ in sdfg.all_nodes_recursive()):
        return False
    sdfg.expand_library_nodes()
    return True
