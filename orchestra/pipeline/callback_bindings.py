"""Every callback call site runs with the objects Python mode would pass there, proved by identity.

DaCe keeps a decorated call (``self.halo.fill(self.b)``) in Python as a C
callback. Arguments it can evaluate while parsing (``self.b``) are captured
in the callback, which then takes none; the callback's name comes from the
call's text (``self_halo_fill``), unique only inside the closure of the
function being parsed. When a nested component's callback reaches its
caller, DaCe's frontend names it in the caller by the first free symbol
name, and a later call in the caller with the same text and type *reuses*
that symbol: the caller's callback runs twice and the nested one never.
DaCe's closure resolver meanwhile names nested callbacks in another order
(``self_halo_fill_0``), and which Python object a symbol receives at run
time is decided by those names matching. Nothing in DaCe checks that
they do (issue 54: a fill of ``state.temp`` ran where ``state.eta`` was
written).

Here the names are not trusted:

* :class:`CallbackSites` records, while a program is parsed, each callback
  the frontend creates: the SDFG it is created in, the symbol it gets
  there, the callable it calls and the line of the call site.
* :func:`bind_callbacks` then walks the parsed SDFG from the top. Each
  nested SDFG's callback symbols are followed through its symbol mapping to
  the caller; where one symbol of the caller would carry two different
  callables (compared by identity: the same function on the same object
  with the same captured argument objects), the nested one gets a symbol of
  its own. Each top-level callback symbol is then bound, through the
  program's ``callback_mapping``, to the resolver's callable that is that
  same binding. Two calls of one SDFG that DaCe gave one symbol (its
  ``create_callback`` reuses a symbol of the same text and type) are split
  the same way. A site whose binding cannot be proved (a tasklet calling a
  callback the record does not know, a binding no resolver callable
  matches) is a :class:`~orchestra.errors.BuildError` naming the site.

What a symbol receives at run time (:class:`orchestra.calls.fast_path.FastCaller`)
is ``resolver.callbacks[callback_mapping.get(symbol, symbol)]``; the resolver
names callbacks deterministically from the source, so a build loaded in
``Run`` mode binds alike.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Callable, Iterator

from orchestra.errors import BuildError
from orchestra.frontend.callback_arguments import flattened

#: The attribute of a parsed SDFG that holds its callback sites, tasklet -> Site (copied with the SDFG).
_SITES = "_orchestra_callback_sites"


@dataclasses.dataclass(frozen=True)
class Binding:
    """What a callback calls: a function, the object it is bound to, and the arguments captured at parse time."""

    function: Any
    owner: Any  #: ``__self__`` of a bound method; None for a function
    keywords: tuple
    constants: tuple  #: per argument: the captured object, or ``_RUNTIME`` for one given at run time

    def same_as(self, other: Binding) -> bool:
        """True if calling either runs the same Python code on the same objects."""
        return (
            self.function is other.function
            and self.owner is other.owner
            and self.keywords == other.keywords
            and len(self.constants) == len(other.constants)
            and all(_same_object(a, b) for a, b in zip(self.constants, other.constants))
        )


class _Runtime:
    def __repr__(self) -> str:
        return "<run-time argument>"


_RUNTIME = _Runtime()


def _same_object(a: Any, b: Any) -> bool:
    if a is b:
        return True
    plain = (bool, int, float, complex, str, bytes, type(None))
    return type(a) is type(b) and isinstance(a, plain) and a == b


def binding_of(callback: Callable) -> Binding:
    """The binding of a callable DaCe keeps as a callback (its flattened wrapper unwrapped)."""
    cells = flattened(callback)  # flatten_callback's wrapper: keyword names and captured constants
    target = cells.get("func", callback)
    keywords = tuple(cells.get("keywords", ()))
    constants = tuple(
        unflatten() if constant else _RUNTIME for _position, unflatten, _count, constant in cells.get("instructions", ())
    )
    return Binding(getattr(target, "__func__", target), getattr(target, "__self__", None), keywords, constants)


@dataclasses.dataclass(frozen=True)
class Site:
    """One callback call the frontend created: the call as written, where, calling what."""

    expression: str  #: the call as written, ``self.halo.fill``
    where: str  #: ``file:line``
    binding: Binding
    callback: Callable

    def describe(self) -> str:
        constants = [c for c in self.binding.constants if c is not _RUNTIME]
        captured = f" with {len(constants)} argument(s) fixed at build time" if constants else ""
        return f"{self.expression}(...) at {self.where}{captured}"

    def __deepcopy__(self, memo: dict) -> Site:
        return self  # what it calls is the model's object, never copied


class CallbackSites:
    """Records, inside the ``with`` block (one parse), every callback call DaCe's frontend creates.

    Each site is kept on the SDFG it is created in, keyed by the tasklet that
    calls it: DaCe renames symbols (a nested SDFG's, to avoid its caller's
    names) but keeps the tasklet, and a deepcopy of the SDFG (a reused parse)
    copies the table with its tasklets.
    """

    def __enter__(self) -> CallbackSites:
        from dace.frontend.python.newast import ProgramVisitor

        self._original = original = ProgramVisitor.create_callback

        def recording(visitor: Any, node: Any, create_graph: bool = True) -> Any:
            from dace.frontend.python import astutils
            from dace.sdfg import nodes

            result = original(visitor, node, create_graph)
            entry = visitor.closure.callbacks.get(astutils.rname(node)) if visitor.closure is not None else None
            if entry is not None and create_graph:
                expression, callback, _nested = entry
                site = Site(str(expression), f"{visitor.filename}:{getattr(node, 'lineno', '?')}",
                            binding_of(callback), callback)
                table = visitor.sdfg.__dict__.setdefault(_SITES, {})
                for tasklet in visitor.last_block.nodes():
                    if isinstance(tasklet, nodes.Tasklet):
                        table[tasklet] = site
            return result

        ProgramVisitor.create_callback = recording
        return self

    def __exit__(self, *exc: Any) -> None:
        from dace.frontend.python.newast import ProgramVisitor

        ProgramVisitor.create_callback = self._original


def bind_callbacks(sdfg: Any, resolver: Any, label: str) -> dict[str, str]:
    """Bind every callback symbol of the parsed ``sdfg`` to the callable Python mode would call (see the module).

    ``resolver``: the program's resolved closure (what the fast path passes
    callbacks from). Returns top-level symbol -> resolver name, also written
    into ``sdfg.callback_mapping``.
    """
    needed = _needs(sdfg, label)
    if not needed:
        return {}
    available = [(name, binding_of(entry[1])) for name, entry in sorted((resolver.callbacks if resolver else {}).items())]
    chosen = {}
    for symbol, site in sorted(needed.items()):
        matches = [name for name, binding in available if binding.same_as(site.binding)]
        if not matches:
            raise BuildError(
                f"{label}: the callback {site.describe()} has no callable in the program's closure that calls the "
                "same function on the same objects, so orchestra cannot prove what it would run; call it with the "
                "arrays as arguments of the orchestrated method, or report this with the model's call"
            )
        chosen[symbol] = symbol if symbol in matches else matches[0]
    for nested in sdfg.all_sdfgs_recursive():
        nested.callback_mapping.clear()  # DaCe's by-name mappings: inlining would merge them into the program's
    apply_bindings(sdfg, chosen, label)
    return chosen


def apply_bindings(sdfg: Any, chosen: dict[str, str], label: str) -> None:
    """Write ``chosen`` (symbol -> resolver name) as the program's ``callback_mapping``, for its callback symbols.

    Run again after the optimize stage: DaCe's symbol renames also rewrite
    the mapping's values, and inlining merges nested mappings into it. A
    callback symbol the binding does not know is refused.
    """
    from dace import dtypes

    mapping = {}
    for symbol, kind in sdfg.symbols.items():
        if not isinstance(kind, dtypes.callback):
            continue
        if symbol not in chosen:
            raise BuildError(
                f"{label}: after optimization the program calls a callback as {symbol}, which the binding of its "
                "call sites does not know (a pass renamed it?), so orchestra cannot prove what it runs; "
                "please report this"
            )
        if chosen[symbol] != symbol:
            mapping[symbol] = chosen[symbol]
    sdfg.callback_mapping = mapping


def _needs(sdfg: Any, label: str) -> dict[str, Site]:
    """Callback symbol of ``sdfg`` -> the one site it must run, splitting symbols nested SDFGs share wrongly."""
    from dace.sdfg import nodes

    needed = _own_sites(sdfg, label)
    for state in sdfg.states():
        for node in state.nodes():
            if not isinstance(node, nodes.NestedSDFG) or node.sdfg is None:
                continue
            for inner, site in _needs(node.sdfg, label).items():
                # a symbol split below (see next) is not passed in yet: it is passed under its own name
                outer = str(node.symbol_mapping.get(inner, inner))
                if not re.fullmatch(r"[A-Za-z_]\w*", outer):
                    raise BuildError(
                        f"{label}: the callback {site.describe()} is passed to {node.label} as {inner} = {outer}, "
                        "not as a symbol, so orchestra cannot prove what it runs; please report this"
                    )
                clash = outer in needed and not needed[outer].binding.same_as(site.binding)
                if clash or (outer in sdfg.symbols and sdfg.symbols[outer] != node.sdfg.symbols[inner]):
                    # the caller's symbol already carries another callable (DaCe reused it by name), or has
                    # another C type (random program 293: a call without arguments bound to one with): a new symbol
                    outer = sdfg.find_new_symbol(outer)
                if outer not in sdfg.symbols:
                    sdfg.add_symbol(outer, node.sdfg.symbols[inner])
                node.symbol_mapping[inner] = outer
                needed[outer] = site
    return needed


def _own_sites(sdfg: Any, label: str) -> dict[str, Site]:
    """Callback symbol -> site of each callback a tasklet of ``sdfg`` itself calls; unrecorded calls refused."""
    from dace import dtypes
    from dace.sdfg import nodes

    callbacks = [name for name, kind in sdfg.symbols.items() if isinstance(kind, dtypes.callback)]
    if not callbacks:
        return {}
    calls = re.compile(r"\b(" + "|".join(re.escape(name) for name in callbacks) + r")\s*\(")
    table: dict = sdfg.__dict__.get(_SITES, {})
    own: dict[str, Site] = {}
    for state in sdfg.states():
        for node in state.nodes():
            if not isinstance(node, nodes.Tasklet):
                continue
            for symbol in calls.findall(node.code.as_string):
                site = table.get(node)
                if site is None:
                    raise BuildError(
                        f"{label}: {sdfg.name} calls the callback {symbol} in {node.label}, but orchestra did not "
                        "see the frontend create that call, so it cannot prove which Python object it runs; "
                        "please report this with the model's call"
                    )
                if symbol in own and not own[symbol].binding.same_as(site.binding):
                    # DaCe reused a symbol it had just made for another call of the same text (a type clash
                    # with a nested callback's symbol renamed the first): this tasklet gets a symbol of its own
                    symbol = _own_symbol(sdfg, node, symbol, site, own)
                own[symbol] = site
    return own


def _own_symbol(sdfg: Any, tasklet: Any, symbol: str, site: Site, own: dict[str, Site]) -> str:
    """Make ``tasklet`` call a symbol bound to ``site`` alone (one already split off for the same binding, or new)."""
    from dace.properties import CodeBlock

    split = next((name for name, other in own.items()
                  if other.binding.same_as(site.binding) and sdfg.symbols.get(name) == sdfg.symbols[symbol]), None)
    if split is None:
        split = sdfg.find_new_symbol(symbol)
        sdfg.add_symbol(split, sdfg.symbols[symbol])
    code = re.sub(rf"\b{re.escape(symbol)}(\s*\()", rf"{split}\1", tasklet.code.as_string)
    tasklet.code = CodeBlock(code, tasklet.code.language)
    return split


class _PassedForBinding:
    """Stands for a callback DaCe's closure does not name the way the nested SDFG does (bound by identity later)."""

    def __repr__(self) -> str:
        return "<callback bound after the parse>"


def pass_every_callback(closure: dict[str, Any], sdfg: Any) -> dict[str, Any]:
    """``closure`` (a nested program's ``__sdfg_closure__``) with every callback symbol of its ``sdfg`` in it.

    A nested SDFG may call a callback under a symbol its program's closure
    does not have (its own nested components' callbacks, named in another
    order: see the module); DaCe then does not pass the symbol in and the
    caller's parse fails with an argument count mismatch. Each missing one
    is passed as a stand-in: :func:`bind_callbacks` binds every symbol by
    its recorded call site, never by this value.
    """
    from dace import dtypes

    missing = [name for name, kind in sdfg.symbols.items()
               if isinstance(kind, dtypes.callback) and name not in closure]
    return {**closure, **{name: _PassedForBinding() for name in missing}} if missing else closure


def sites_of(sdfg: Any) -> Iterator[Site]:
    """Every recorded callback site of ``sdfg`` and the SDFGs nested in it (for messages and tests)."""
    for nested in sdfg.all_sdfgs_recursive():
        yield from nested.__dict__.get(_SITES, {}).values()
