"""DaCe's folding of a nested SDFG's symbol mapping, without its walk where nothing can be folded.

DaCe 2 integrates a nested SDFG into its parent (``integrate_nested_sdfg``)
at every nested call of its frontend and, in simplify, for every nested SDFG
below one it inlines. Each integration starts with ``fold_symbol_mapping``,
which collects the free symbols of the whole nested SDFG (a walk over every
state, node, memlet and descriptor in it and below it) and then keeps the
mapping's entries that map a symbol the SDFG uses to another plain name of
the parent: ``{'N': 'M'}`` folds, ``{'N': 'N'}`` or ``{'N': 'M + 1'}`` does not.
Once a nested SDFG has been integrated its mapping holds no such entry, so
the walk finds nothing to fold: on the FV3-size benchmark at 40 stencils all
539 folds in optimize folded nothing, and their walks were 14% of the stage.

:func:`folding_only_where_possible` installs, for the duration of a ``with``
block, a stand-in for ``fold_symbol_mapping`` that first looks at the
mapping alone: where no entry maps a name to another valid name that is not
one of the parent's containers, DaCe's function would fold nothing (its
entries are a subset of those), so the stand-in returns what it returns then
(an empty dict, nothing changed); anything else runs DaCe's function. The
stand-in is installed only over the function it was written for (recognised
by a hash of its source); another DaCe's is left alone.
"""

from __future__ import annotations

import threading
from typing import Any, ContextManager

from orchestra.toolchain.stand_in import source_digest, standing_in_once

#: sha256 of the source of DaCe 2.0.0b1's ``dace.sdfg.dealias.fold_symbol_mapping``.
_WRITTEN_FOR = "06c22eb5b3a1849832dc8c2943d87f4bac3595ce2f8dd24d2b7a5df567a896a1"

_lock = threading.RLock()


def may_fold(sdfg: Any) -> bool:
    """Whether DaCe's ``fold_symbol_mapping`` could fold an entry of ``sdfg``'s symbol mapping (module docstring)."""
    from dace import dtypes

    node = sdfg.parent_nsdfg_node
    if node is None:
        return False
    parent_arrays = sdfg.parent_sdfg.arrays if sdfg.parent_sdfg is not None else {}
    for inner, outer in node.symbol_mapping.items():
        name = str(outer)
        if str(inner) != name and dtypes.validate_name(name) and name not in parent_arrays:
            return True
    return False


def recognizes(fold: Any) -> bool:
    """Whether ``fold`` is the ``fold_symbol_mapping`` :func:`may_fold` was written for."""
    return source_digest(fold) == _WRITTEN_FOR


def folding_only_where_possible() -> ContextManager[None]:
    """Within the block, DaCe's ``fold_symbol_mapping`` walks a nested SDFG only where it may fold something."""
    from dace.sdfg import dealias

    def make(original: Any) -> Any:
        def fold_symbol_mapping(sdfg: Any, symbols: Any = None) -> dict[str, str]:
            if not may_fold(sdfg):
                return {}  # what DaCe's function returns when it folds nothing
            return original(sdfg, symbols)

        return fold_symbol_mapping

    # one build at a time replaces DaCe's function; a nested use leaves it be
    return standing_in_once(_lock, dealias, "fold_symbol_mapping", recognizes, make)
