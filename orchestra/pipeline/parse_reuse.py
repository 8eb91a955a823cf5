"""One parse per component and argument description, within one build.

DaCe's frontend parses a nested SDFG-convertible at every call site: a
component called from three places (the dycore's one ``Tendencies``, called by
each of its three Runge-Kutta stages) is preprocessed, parsed and has every
stencil below it lowered three times, and its own subcomponents with it.
DaCe has a parsed-SDFG cache for this, but in the pinned version nothing
adds to it when parsing nested programs.

Inside :class:`ParseReuse` (one per top-level parse, see
:func:`orchestra.pipeline.stages.parse`), an orchestrated component's
``__sdfg__`` goes through :meth:`ParseReuse.sdfg_of`. The first call of a
component object with a given description of its arguments parses it and
keeps a pristine copy; a later call with the same description gets a copy of
that, and the last call the call tree foresees for that function gets the
pristine copy itself (a call after that parses again). Same object, same
argument descriptors (dtype, shape, strides, storage, symbols) and the same
folded argument values within one parse is the same input to DaCe's
frontend: the object's closure (what it reads through ``self``, its callees,
module globals) cannot change while a parse runs. An argument this module
cannot describe exactly (an object passed at compile time, a name) is parsed
every time, as before.

After a reused parse, the component's DaCe program is put back in the state
its own parse left it in (its resolved closure and closure-array mapping),
since the caller reads those right after ``__sdfg__``
(``__sdfg_closure__``).
"""

from __future__ import annotations

import contextvars
import copy
import dataclasses
from collections import Counter
from typing import Any, Callable, Mapping, Optional

from orchestra.key.argument_descriptions import Undescribable, describe_argument
from orchestra.key.call_tree import orchestrated_call, orchestrated_methods

#: The reuse table of the parse running in this context (None outside a build's parse).
_ACTIVE: contextvars.ContextVar[Optional[ParseReuse]] = contextvars.ContextVar("orchestra_parse_reuse", default=None)

#: DaceProgram attributes its ``_generate_pdp`` sets and its ``__sdfg_closure__`` reads.
_PROGRAM_STATE = ("closure_arg_mapping", "closure_array_keys", "closure_constant_keys", "resolver")


@dataclasses.dataclass
class _Parsed:
    owner: Any  #: the component object (kept alive: its id is part of the key)
    sdfg: Any  #: a pristine copy of the parse
    program_state: dict[str, Any]


class ParseReuse:
    """The table of component parses of one top-level parse (a context manager).

    ``repeated`` gives, for each component object the call tree calls at
    more than one site, the number of sites (:func:`repeated_components`,
    by ``id`` of its orchestrated program); only their parses are copied for
    reuse, since copying costs a good part of what parsing does (counted per
    function instead, every object of a class called once each had its parse
    copied for nothing but the last: 12 copies never used at the benchmark's
    120 stencils). Once a component has been asked for as many times as it
    has sites, no later call can need its pristine parse: that last call gets
    it without a copy, and it leaves the table (so a call the call tree did
    not foresee parses again instead of getting a changed SDFG).

    ``parsed`` and ``reused`` count, per component label, the parses DaCe ran
    and the ones served from the table; ``handed_over`` the reuses served
    without a copy.
    """

    def __init__(self, repeated: Optional[Mapping[int, int]] = None) -> None:
        #: sites per component (``id`` of its program) called at more than one site; None: any may be, count unknown
        self._repeated = None if repeated is None else dict(repeated)
        self._table: dict[tuple, _Parsed] = {}
        self._asked: Counter[int] = Counter()  # calls per component so far
        self.parsed: Counter[str] = Counter()
        self.reused: Counter[str] = Counter()
        self.handed_over = 0
        self._token: Optional[contextvars.Token] = None

    def __enter__(self) -> ParseReuse:
        self._token = _ACTIVE.set(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        _ACTIVE.reset(self._token)
        self._table.clear()

    def sdfg_of(self, owner: Any, parse: Callable[[], Any], args: tuple, kwargs: dict) -> Any:
        """The SDFG of ``owner`` (an OrchestratedProgram) called with ``args``/``kwargs``:
        parsed by ``parse()``, a copy of an earlier parse, or at the last site that parse itself."""
        label, program, component = owner.label, owner.dace_program(), id(owner)
        self._asked[component] += 1
        try:
            key = (
                component,
                tuple(describe_argument(a) for a in args),
                tuple(sorted((name, describe_argument(v)) for name, v in kwargs.items())),
            )
        except Undescribable:
            self.parsed[label] += 1
            return parse()
        known = self._table.get(key)
        if known is not None:  # the owner is kept alive by the table: its id is not reused
            for name, value in known.program_state.items():
                setattr(program, name, value)
            self.reused[label] += 1
            if self._repeated is not None and self._asked[component] >= self._repeated.get(component, 0):
                del self._table[key]  # the component's last site: nothing will copy from it again
                self.handed_over += 1
                return known.sdfg
            return _copied(known.sdfg)
        sdfg = parse()
        self.parsed[label] += 1
        if self._repeated is not None and self._repeated.get(component, 0) <= self._asked[component]:
            return sdfg  # no later site: a pristine copy would never be used
        state = {name: getattr(program, name) for name in _PROGRAM_STATE if hasattr(program, name)}
        self._table[key] = _Parsed(owner, _copied(sdfg), state)
        return sdfg

    def summary(self) -> str:
        """E.g. ``7 component parse(s), 2 reused (Tendencies.__call__ x2)``."""
        parsed, reused = sum(self.parsed.values()), sum(self.reused.values())
        text = f"{parsed} component parse(s), {reused} reused"
        if reused:
            text += " (" + ", ".join(f"{label} x{n}" for label, n in sorted(self.reused.items())) + ")"
        return text


def _copied(sdfg: Any) -> Any:
    """A deep copy of a parsed SDFG (one function: tests count the copies)."""
    return copy.deepcopy(sdfg)


def repeated_components(closure: Any) -> Optional[dict[int, int]]:
    """Orchestrated components the closure tree calls at more than one site, with how many.

    Keyed by ``id`` of the component's orchestrated program (what
    :meth:`ParseReuse.sdfg_of` is given). ``closure`` is the top-level
    program's resolved closure: each of its ``nested_closures`` is one call
    site DaCe will parse; a model object stands for its orchestrated
    ``__call__``, an orchestrated method for itself. A component's own call
    sites are counted once, below its first site: its later sites reuse that
    parse and parse nothing below them (where one is parsed again, with other
    arguments, the sites below it were not foreseen and parse again). None
    when there is no closure to read (then any component may be called again).
    """
    if closure is None:
        return None
    seen: Counter[int] = Counter()
    pending = [closure]
    while pending:
        current = pending.pop()
        objects = {call: obj for call, obj in current.closure_sdfgs.values()}
        for call, child in current.nested_closures:
            program = _orchestrated_program(objects.get(call))
            if program is not None:
                seen[id(program)] += 1
                if seen[id(program)] > 1:
                    continue  # below a reused parse nothing is parsed
            pending.append(child)
    return {component: count for component, count in seen.items() if count > 1}


def _orchestrated_program(obj: Any) -> Any:
    """The OrchestratedProgram a callee in the closure tree runs, or None when it is no orchestrated component."""
    if orchestrated_methods(obj):
        return orchestrated_call(obj)
    if callable(getattr(obj, "dace_program", None)) and hasattr(obj, "label"):
        return obj
    return None


def component_sdfg(owner: Any, args: tuple, kwargs: dict) -> Any:
    """``owner.dace_program().__sdfg__(*args, **kwargs)``, reused within the running build's parse if one is active."""
    reuse = _ACTIVE.get()
    parse = lambda: owner.dace_program().__sdfg__(*args, **kwargs)  # noqa: E731
    if reuse is None:
        return parse()
    return reuse.sdfg_of(owner, parse, args, kwargs)
