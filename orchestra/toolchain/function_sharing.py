"""DaCe's search for equal nested SDFGs in code generation, hashing only those that may have an equal.

DaCe's code generation writes one C++ function per nested SDFG and shares
it among equal nested SDFGs (``compiler.unique_functions = hash``): for
every nested SDFG node it serializes the nested SDFG to JSON, drops names
and ids, and hashes the text (``SDFG.hash_sdfg``); a hash seen before reuses
the function generated for it. That is one JSON serialization of the whole
program, 15% of code generation on the FV3-size benchmark at 40 stencils,
where 573 of the 588 nested SDFGs are unequal to every other (228 of 276 in
the dycore).

Inside :func:`hashing_only_where_shared`, the first hash asked for (code
generation has then fixed the program: DaCe's frame generator "assumes the
SDFG is frozen") gives every nested SDFG of the program a signature: the
types and labels of its nodes and blocks, its container and symbol names,
each sorted. All of it is in the JSON that DaCe hashes, so nested SDFGs with
equal hashes have equal signatures. A nested SDFG whose signature no other
has can have no equal: it is given a token of its own (never a sha256 digest,
never another SDFG's token) instead of its hash, and DaCe generates its
function as it would have; the others are hashed as DaCe does. The same
functions are shared, and the generated code is the same (compared on the
benchmark and the dycore). The stand-in answers only calls from the process
that installed it, without a JSON dictionary given, and is installed only
over the ``hash_sdfg`` it was written for (recognised by a hash of its
source); restored on leaving.
"""

from __future__ import annotations

import collections
import os
import threading
from typing import Any, ContextManager, Optional

from orchestra.toolchain.stand_in import source_digest, standing_in_once

#: sha256 of the source of DaCe 2.0.0b1's ``SDFG.hash_sdfg``.
_WRITTEN_FOR = "10e66734fb1341973968f555544fc609fbfd0cf81599991946e864c89b695a35"

#: The JSON keys DaCe's ``hash_sdfg`` drops (besides ``_meta_*``): a name spelled so is not hashed.
_DROPPED = frozenset({"name", "hash", "orig_sdfg", "transformation_hist", "instrument", "guid", "cfg_list_id"})

_lock = threading.RLock()


def _hashed(names: Any) -> tuple[str, ...]:
    return tuple(sorted(name for name in map(str, names) if name not in _DROPPED and not name.startswith("_meta_")))


def signature(sdfg: Any) -> tuple:
    """A summary of ``sdfg`` read from what DaCe's ``hash_sdfg`` hashes: equal hashes, equal signatures.

    The types and labels of its nodes (at any depth; a library node's label is its name, which the
    hash drops) and of its blocks, and the names of its containers and symbols.
    """
    from dace.sdfg import nodes

    labelled = sorted((type(node).__name__, "" if isinstance(node, nodes.LibraryNode) else str(node.label))
                      for node, _ in sdfg.all_nodes_recursive())
    blocks = sorted((type(block).__name__, str(block.label)) for block in sdfg.all_control_flow_blocks())
    return tuple(labelled), tuple(blocks), _hashed(sdfg.arrays), _hashed(sdfg.symbols)


def unshared(top: Any) -> set[int]:
    """The ids of the nested SDFGs of ``top`` (at any depth) whose signature no other nested SDFG of it has."""
    from dace.sdfg import nodes

    nested = [node.sdfg for node, _ in top.all_nodes_recursive() if isinstance(node, nodes.NestedSDFG)]
    signatures = [signature(sdfg) for sdfg in nested]
    counts = collections.Counter(signatures)
    return {id(sdfg) for sdfg, sig in zip(nested, signatures) if counts[sig] == 1}


def recognizes(hash_sdfg: Any) -> bool:
    """Whether ``hash_sdfg`` is the ``SDFG.hash_sdfg`` the stand-in was written for."""
    return source_digest(hash_sdfg) == _WRITTEN_FOR


def _top(sdfg: Any) -> Any:
    while sdfg.parent_sdfg is not None:
        sdfg = sdfg.parent_sdfg
    return sdfg


def hashing_only_where_shared() -> ContextManager[None]:
    """Within the block, DaCe hashes only nested SDFGs that may equal another one (module docstring)."""
    from dace.sdfg import SDFG

    def make(original: Any) -> Any:
        pid = os.getpid()
        found: dict[int, tuple[Any, set[int]]] = {}  # id(top SDFG) -> (the SDFG, kept alive; its unshared ids)

        def hash_sdfg(self: Any, jsondict: Optional[dict] = None) -> str:
            if jsondict is None and os.getpid() == pid and self.parent_sdfg is not None:
                top = _top(self)
                if id(top) not in found:
                    found[id(top)] = (top, unshared(top))
                if id(self) in found[id(top)][1]:
                    return f"unshared nested SDFG {id(self)}"
            return original(self, jsondict)

        return hash_sdfg

    # one code generation at a time replaces DaCe's method; a nested use leaves it be
    return standing_in_once(_lock, SDFG, "hash_sdfg", recognizes, make)
