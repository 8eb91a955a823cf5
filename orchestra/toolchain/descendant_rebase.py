"""DaCe's restating of the connectors below a restated container, each SDFG walked once per integration.

DaCe 2's ``integrate_nested_sdfg`` adopts, for every connector of a nested
SDFG, the caller's container descriptor, and ``rebase_descendants`` then
restates the connectors below that stood for it, recursively. For each
connector it walks every state, node and edge of the SDFG (and of every
SDFG below it that the connector reaches) looking for the edges of that
one container, and for every connector it restates it resolves all the
symbols the parent defines at the node (a walk over the parent's data
descriptors), used only if the new descriptor names a symbol the nested
SDFG lacks. On the FV3-size benchmark at 40 stencils these integrations,
run by DaCe's frontend at every nested call and by orchestra's contract
pass over the whole parsed program, were about a third of the parse.

:func:`rebase_once_per_integration` installs, for the duration of a
``with`` block, a stand-in for ``rebase_descendants`` that:

* finds a container's edges to nested SDFGs in an index of the SDFG built
  once (per name, in DaCe's order: states, nodes, edges), kept while one
  ``integrate_nested_sdfg`` runs (its connector loop restates descriptors and
  symbols, never the graphs; outside an integration the index lives for one
  call);
* resolves the symbols defined at a node only when a restated descriptor
  names one the nested SDFG lacks (the parent's symbols and descriptors do
  not change while its connectors are restated, so the answer is the same);
* looks for views of the container (DaCe's ``_rebase_views``, unchanged)
  only in an SDFG that held a view when indexed (restating makes
  containers, never views);
* and, for DaCe's ``_same_container`` (is a connector already the caller's
  container?), prints the node's symbol mapping to find the renamed
  symbols once per integration, not once per edge (the loop never changes
  the mapping of the node being integrated); DaCe's ``_windowed_edges``
  (the connectors that are windows, asked before widening them) likewise
  prints it once per call (its two callers, also recognised, change nothing
  while they read its edges).

Everything else is DaCe's own statement by statement: the same connectors
restated to the same descriptors in the same order, the same symbols added.
The stand-ins are installed only over the DaCe functions they were written
for, recognised by a hash of their source; another DaCe's are left alone.
"""

from __future__ import annotations

import contextlib
import contextvars
import copy
import threading
from typing import Any, Iterator, Optional

from orchestra.toolchain.stand_in import source_digest, standing_in

#: sha256 of the source of each DaCe function the stand-ins rely on (DaCe 2.0.0b1).
_WRITTEN_FOR = {
    "rebase_descendants": "4405050ab798722fc6670a7e1c11ddb7573ed15b3bf17263a4aa3d02d41383f5",
    "integrate_nested_sdfg": "d8ce3a78d5197d71a5b8ccd63959b290ffa9458892631c2778e36d2de113fdac",
    "_rebase_views": "bc29321098f20f5fc2b0d9958acec5a63b98ef57f76873a58e503d7d6da23af1",
    "_same_container": "025c9fa209f8842d2e651f88af171980fae6171c78898b9faed10bdcdecd935c",
    "_windowed_edges": "b86079562394969faa0cf968e60217a3cb053c737d27936bad35df009b0ba0a6",
    "windowed_connectors": "3c40a7cdf46fffa59af0478235522e3133001c7822adf0624ac04a05d09f03a2",
    "widen_windowed_connectors": "37791af9eb21fe097f21e4a224164efc97d564baa1cf75ac08020b1004443d1c",
}

_lock = threading.RLock()


class _Integration:
    """What one ``integrate_nested_sdfg`` call has found so far: SDFG indices, renamed symbols per node."""

    def __init__(self) -> None:
        self.indices: dict[int, tuple[Any, _Index]] = {}  # id(SDFG) -> (the SDFG, kept alive; its index)
        self.renamed: dict[int, tuple[Any, set[str]]] = {}  # id(node) -> (the node; its renamed symbols)

    def index(self, sdfg: Any) -> "_Index":
        known = self.indices.get(id(sdfg))
        if known is None:
            known = self.indices[id(sdfg)] = (sdfg, _Index(sdfg))
        return known[1]

    def renamed_symbols(self, node: Any) -> set[str]:
        known = self.renamed.get(id(node))
        if known is None:
            known = self.renamed[id(node)] = (node, _renamed(node))
        return known[1]


#: The integration running in this context; None outside one.
_integration: contextvars.ContextVar[Optional[_Integration]] = contextvars.ContextVar(
    "orchestra_integration", default=None)


class _Index:
    """One SDFG's edges to nested SDFGs by the container they carry, and whether it held a view."""

    def __init__(self, sdfg: Any) -> None:
        from dace import data
        from dace.sdfg import nodes

        self.has_views = any(isinstance(desc, data.View) for desc in sdfg.arrays.values())
        self.edges: dict[str, list[tuple[Any, Any, Any]]] = {}
        for state in sdfg.states():
            for node in state.nodes():
                if not isinstance(node, nodes.NestedSDFG):
                    continue
                for edge in state.all_edges(node):
                    far = edge.src if edge.dst is node else edge.dst
                    names = {edge.data.data, far.data if isinstance(far, nodes.AccessNode) else None}
                    for name in names - {None}:
                        self.edges.setdefault(name, []).append((state, node, edge))


def _index(sdfg: Any) -> _Index:
    integration = _integration.get()
    return _Index(sdfg) if integration is None else integration.index(sdfg)


def _renamed(node: Any) -> set[str]:
    """The symbols a nested SDFG node maps to something other than themselves."""
    return {str(inner) for inner, outer in node.symbol_mapping.items() if str(inner) != str(outer)}


def same_container(parent_desc: Any, inner_desc: Any, available_symbols: set[str], parent_node: Any) -> bool:
    """DaCe's ``_same_container`` (same arguments, same answer), the node's renamed symbols found once per integration."""
    integration = _integration.get()
    renamed = _renamed(parent_node) if integration is None else integration.renamed_symbols(parent_node)
    return _same_container_renamed(parent_desc, inner_desc, available_symbols, parent_node, renamed)


def windowed_edges(sdfg: Any, symbol_types: dict) -> Iterator[tuple[str, Any, Any]]:
    """DaCe's ``_windowed_edges`` (the same edges, in order), the node's renamed symbols found once."""
    parent_sdfg, parent_state, parent_node = sdfg.parent_sdfg, sdfg.parent, sdfg.parent_nsdfg_node
    available_symbols = set(sdfg.symbols.keys()) | set(symbol_types.keys())
    renamed: Optional[set[str]] = None
    for edge in parent_state.all_edges(parent_node):
        if edge.data.data not in parent_sdfg.arrays:
            continue
        connector = edge.dst_conn if edge.dst is parent_node else edge.src_conn
        if not connector or "." in connector or connector not in sdfg.arrays:
            continue
        inner, outer = sdfg.arrays[connector], parent_sdfg.arrays[edge.data.data]
        if inner.transient:
            continue
        renamed = _renamed(parent_node) if renamed is None else renamed
        if not _same_container_renamed(outer, inner, available_symbols, parent_node, renamed):
            yield connector, edge, outer


def _same_container_renamed(parent_desc: Any, inner_desc: Any, available_symbols: set[str], parent_node: Any,
                            renamed: set[str]) -> bool:
    if not any(str(symbol) in renamed for symbol in inner_desc.free_symbols):
        return parent_desc.is_equivalent(inner_desc)  # every symbol means the same inside and outside
    if {str(symbol) for symbol in parent_desc.free_symbols} - available_symbols:
        return False  # written in symbols the nested SDFG will not have
    return inner_desc.is_equivalent(parent_desc, symbol_mapping=parent_node.symbol_mapping)


def rebase_descendants(sdfg: Any, name: str, old_desc: Any, new_desc: Any) -> None:
    """DaCe's ``rebase_descendants`` (same arguments, same effect), walking each SDFG once per integration."""
    from dace import data, dtypes, symbolic
    from dace.sdfg import dealias
    from dace.sdfg.state import SymbolResolver

    index = _index(sdfg)
    if index.has_views:
        for view_name, old_view, new_view in dealias._rebase_views(sdfg, name, old_desc, new_desc):
            rebase_descendants(sdfg, view_name, old_view, new_view)
    resolver: Optional[Any] = None
    for state, node, edge in index.edges.get(name, ()):
        connector = edge.dst_conn if edge.dst is node else edge.src_conn
        if connector is None or "." in connector or connector not in node.sdfg.arrays:
            continue
        inner_desc = node.sdfg.arrays[connector]
        if not inner_desc.is_equivalent(old_desc):
            continue
        replacement = copy.deepcopy(dealias._as_container(new_desc))
        replacement.transient = False
        if isinstance(inner_desc, data.Array) and isinstance(replacement, data.Array):
            replacement.offset = copy.deepcopy(inner_desc.offset)  # the memlets below are written in it
        node.sdfg.arrays[connector] = replacement
        defined_here: Optional[dict] = None
        for symbol in replacement.free_symbols:
            symbol_name = str(symbol)
            if symbol_name in node.sdfg.symbols:
                continue
            if defined_here is None:
                resolver = resolver or SymbolResolver()
                defined_here = resolver.defined_at(state, node)
            node.sdfg.add_symbol(symbol_name, defined_here.get(symbol_name) or dtypes.typeclass(int))
            if symbol_name not in node.symbol_mapping:
                node.symbol_mapping[symbol_name] = symbolic.pystr_to_symbolic(symbol_name)
        rebase_descendants(node.sdfg, connector, inner_desc, replacement)


def recognizes(dealias: Any) -> bool:
    """Whether ``dealias`` (DaCe's module) holds the functions the stand-ins were written for."""
    return all(source_digest(getattr(dealias, name, None)) == digest for name, digest in _WRITTEN_FOR.items())


@contextlib.contextmanager
def rebase_once_per_integration() -> Iterator[None]:
    """Within the block, DaCe's nested-SDFG integration restates connectors with :func:`rebase_descendants`."""
    from dace.sdfg import dealias

    with _lock:  # one parse at a time replaces DaCe's functions; a nested use leaves them be
        original_integrate = dealias.integrate_nested_sdfg
        if getattr(original_integrate, "__orchestra_stand_in__", False) or not recognizes(dealias):
            yield
            return
        def integrate_nested_sdfg(sdfg: Any, symbols: Any = None) -> Any:
            token = _integration.set(_Integration())
            try:
                return original_integrate(sdfg, symbols)
            finally:
                _integration.reset(token)

        integrate_nested_sdfg.__orchestra_stand_in__ = True  # type: ignore[attr-defined]
        stand_ins = {"integrate_nested_sdfg": integrate_nested_sdfg, "rebase_descendants": rebase_descendants,
                     "_same_container": same_container, "_windowed_edges": windowed_edges}
        with standing_in(dealias, stand_ins):
            yield
