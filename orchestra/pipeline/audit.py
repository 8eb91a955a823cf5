"""Defence in depth for the cache key: what a parse used, checked against the key.

The key (:mod:`orchestra.key.inputs`, :mod:`orchestra.key.call_tree`) is found
*before* parsing, from the closures DaCe resolves without parsing. If a new
call pattern, a future DaCe or a bug made the parse depend on something that
walk did not see, the cache would hand out a stale build without a word. The
audit closes that door at build time, before anything is published:

* :class:`ParseRecorder` watches one parse and records every function DaCe
  preprocesses (the orchestrated method, each nested component, each method
  or function parsed implicitly, at every depth, each time it is parsed) with
  the closure the parse gave it: the constants it folded in, the
  SDFG-convertibles (stencils, components, functions) it calls, its
  callbacks. DaCe preprocesses every Python function it turns into an SDFG,
  so nothing parsed escapes the record; gt4py stencils enter the SDFG only
  through a caller's closure, so each is seen as a callee.
* :func:`audit_parse` then requires of the key, for every record:

  - the function's source, with the same digest (``source``);
  - each folded constant, with the same value, in a node of that function
    (``call_tree`` nodes; ``scalars`` and ``compiletime_args`` at the top);
  - each stencil it calls, with the same identity (gt4py id, origin,
    domain), among that node's callees; a called function's source;
  - each of its callbacks the SDFG really calls, in that node's callbacks;

  and of the parsed SDFG: each array it takes is a keyed argument or a keyed
  closure array with the same description. A miss is a
  :class:`~orchestra.errors.BuildError` naming the unkeyed input. So is a
  parse in which the orchestrated function itself was not seen: a DaCe that
  stopped calling the wrapped function would otherwise pass every audit.

A function may be parsed several times (once per call site, and DaCe parses
nested closures twice: resolving, then parsing); each parse must match one
node of its function. The recorder wraps DaCe's
``preprocessing.preprocess_dace_program`` for the duration of the ``with``
block only and calls it unchanged.

>>> with ParseRecorder() as recorder:
...     pass  # parse here
>>> recorder.records
[]
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Iterator, NoReturn, Optional

from orchestra.key.inputs import describe_closure_arrays, describe_value
from orchestra.cache.fingerprint import canonical_json
from orchestra.key.call_tree import call_name, callee_identity, function_name, source_digest
from orchestra.errors import BuildError


@dataclasses.dataclass(frozen=True)
class ParsedFunction:
    """One function DaCe preprocessed during a parse, and what its closure used."""

    function: str  #: module.Qualname
    source: str  #: :func:`orchestra.key.call_tree.source_digest`
    constants: dict[str, str]  #: name -> canonical JSON of the described value
    callees: dict[str, dict[str, Any]]  #: call name -> identity of what it calls (a function's without source)
    callbacks: dict[str, str]  #: closure name -> the expression called back
    parameters: frozenset[str] = frozenset()  #: the function's parameter names


class ParseRecorder:
    """Records every function DaCe preprocesses inside the ``with`` block (one parse)."""

    def __init__(self) -> None:
        self.records: list[ParsedFunction] = []
        self._original: Any = None
        self._sources: dict[int, str] = {}

    def __enter__(self) -> ParseRecorder:
        from dace.frontend.python import preprocessing

        self._original = original = preprocessing.preprocess_dace_program

        def recording(function: Callable, *args: Any, **kwargs: Any) -> Any:
            result = original(function, *args, **kwargs)
            self.records.append(self._record(function, result[1]))
            return result

        preprocessing.preprocess_dace_program = recording
        return self

    def __exit__(self, *exc: Any) -> None:
        from dace.frontend.python import preprocessing

        preprocessing.preprocess_dace_program = self._original

    def _record(self, function: Callable, closure: Any) -> ParsedFunction:
        called = {qualname for qualname, _ in closure.nested_closures}  # what dead code named is not called
        callees = {}
        for call, obj in closure.closure_sdfgs.values():
            if call in called:
                identity = dict(callee_identity(obj))
                identity.pop("source", None)  # a function's source is checked as a record of its own
                callees[call_name(call)] = identity
        if id(function.__code__) not in self._sources:
            self._sources[id(function.__code__)] = source_digest(function)
        return ParsedFunction(
            function=function_name(function),
            source=self._sources[id(function.__code__)],
            constants={name: canonical_json(describe_value(v)) for name, v in closure.closure_constants.items()},
            parameters=_parameters(function),
            callees=callees,
            callbacks={name: expression for name, (expression, *_) in closure.callbacks.items()},
        )


def _parameters(function: Callable) -> frozenset[str]:
    """Parameter names of a parsed function.

    A constant DaCe folds in under a parameter's name is a value its caller
    passed (``self.inner(x, mass=None)``, ``self.inner(x, n=self.n)``): it
    comes from the caller's call expression, keyed with the caller's source,
    and from what the caller folded in, checked by the caller's own record
    (at the top, the program's keyed arguments). It is not the callee's to key.
    """
    code = getattr(function, "__code__", None)
    if code is None:
        return frozenset()
    return frozenset(code.co_varnames[: code.co_argcount + code.co_kwonlyargcount])


@dataclasses.dataclass(frozen=True)
class _KeyedNode:
    """What the key holds for one parse of a function: folded values, callees, callbacks."""

    where: str  #: how a message names it, e.g. ``call_tree['A.__call__/B.__call__']``
    scalars: dict[str, str]  #: name -> canonical JSON
    callees: list[str]  #: canonical JSON of each identity (a function's without source)
    callbacks: set[str]


def audit_parse(
    records: list[ParsedFunction], sdfg: Any, closure: Any, inputs: dict[str, Any], function: str, label: str
) -> None:
    """Raise BuildError if the parse of ``label`` used anything ``inputs`` (its key) does not hold.

    ``records``: what :class:`ParseRecorder` saw; ``sdfg``: the parsed SDFG;
    ``closure``: the program's closure as the parse resolved it (its
    ``resolver``); ``function``: the orchestrated function's module.Qualname.
    """
    if not any(record.function == function for record in records):
        raise BuildError(
            f"{label}: the parse audit saw DaCe preprocess no function {function}, so it cannot check the "
            "cache key: this DaCe no longer parses through dace.frontend.python.preprocessing."
            "preprocess_dace_program; adapt orchestra/pipeline/audit.py to it"
        )
    nodes = _keyed_nodes(inputs, function)
    real_callbacks = _callback_symbols(sdfg)
    for record in records:
        keyed_source = inputs["source"].get(record.function)
        if keyed_source is None:
            _fail(label, f"the parse used the function {record.function}, whose source the key does not hold")
        if keyed_source != record.source:
            _fail(label, f"the parse used another source of {record.function} than the keyed one")
        used = {name: expression for name, expression in record.callbacks.items() if name in real_callbacks}
        candidates: list[Optional[_KeyedNode]] = nodes.get(record.function) or [None]
        passed = record.parameters if record.function != function else frozenset()  # see _parameters
        misses = [list(_unkeyed(record, used, node, inputs["source"], passed)) for node in candidates]
        if all(misses):  # no node of this function holds everything this parse of it used
            best = min(range(len(misses)), key=lambda index: len(misses[index]))
            where = candidates[best].where if candidates[best] else "no node of the key"
            _fail(label, f"the parse of {record.function} ({where}) used {'; '.join(misses[best][:5])}")
    _audit_arrays(sdfg, closure, inputs, label)


def _keyed_nodes(inputs: dict[str, Any], function: str) -> dict[str, list[_KeyedNode]]:
    """The key's nodes by function: the orchestrated ``function`` and every ``call_tree`` node."""
    nodes: dict[str, list[_KeyedNode]] = {}

    def add(owner: str, where: str, scalars: dict, callees: dict, callbacks: list) -> None:
        nodes.setdefault(owner, []).append(_KeyedNode(
            where,
            {name: canonical_json(value) for name, value in scalars.items()},
            [canonical_json(identity) for identity in callees.values()],
            set(callbacks),
        ))

    # DaCe folds in an argument passed as None; its keyed type (NoneType) says its value
    none_arguments = {name: None for name, described in inputs["arguments"].items() if described == _NONE}
    top_scalars = {**inputs["scalars"], **inputs["compiletime_args"], **none_arguments}
    add(function, "top level", top_scalars, inputs["nested"], inputs["callbacks"])
    for path, node in inputs["call_tree"].items():
        add(node["function"], f"call_tree[{path!r}]", node["scalars"], node["callees"], node["callbacks"])
    return nodes


#: How :mod:`orchestra.key.inputs` describes an argument passed as None.
_NONE = {"scalar": "NoneType"}


def _unkeyed(
    record: ParsedFunction, callbacks: dict[str, str], node: Optional[_KeyedNode], sources: dict[str, str],
    passed: frozenset[str] = frozenset(),
) -> Iterator[str]:
    """Each input one parse (``record``) used that ``node`` (None: the key has no node) does not hold.

    ``passed``: parameters whose folded values the caller gave (checked in the caller's record).
    """
    for name, value in sorted(record.constants.items()):
        if name in passed:
            continue
        keyed = node.scalars.get(name) if node else None
        if keyed != value:
            yield f"the folded constant {name} = {value} (keyed: {keyed or 'nothing'})"
    for call, identity in sorted(record.callees.items()):
        if "function" in identity:  # keyed by its source; what its own parse used, by its own record
            if identity["function"] not in sources:
                yield f"the function {identity['function']} (called as {call}), whose source is not keyed"
        elif node is None or canonical_json(identity) not in node.callees:
            yield f"the callee {call} = {canonical_json(identity)}"
    for name, expression in sorted(callbacks.items()):
        if node is None or expression not in node.callbacks:
            yield f"the callback {expression} (as {name})"


def _callback_symbols(sdfg: Any) -> set[str]:
    """Names of the Python callbacks the SDFG (at any depth) really calls."""
    from dace import dtypes

    return {
        name
        for nested in sdfg.all_sdfgs_recursive()
        for name, kind in nested.symbols.items()
        if isinstance(kind, dtypes.callback)
    } | {original for nested in sdfg.all_sdfgs_recursive() for original in nested.callback_mapping.values()}


def _audit_arrays(sdfg: Any, closure: Any, inputs: dict[str, Any], label: str) -> None:
    """Each array the SDFG takes is a keyed argument or a keyed closure array, described alike."""
    parsed = describe_closure_arrays(closure)
    for expression, description in parsed.items():
        keyed = inputs["closure_arrays"].get(expression)
        if keyed is None or canonical_json(keyed) != canonical_json(description):
            _fail(label, f"the parse read the array {expression} = {canonical_json(description)} "
                         f"(keyed: {canonical_json(keyed) if keyed is not None else 'nothing'})")
    closure_names = set(closure.closure_arrays)
    for name, desc in sdfg.arrays.items():
        if desc.transient or name in closure_names or name in inputs["arguments"]:
            continue
        if name == "__return" or name.startswith("__return_"):
            continue  # what the program returns: decided by its keyed source and argument types
        _fail(label, f"the parsed program takes the array {name}, which is neither a keyed argument nor "
                     "a keyed closure array")


def _fail(label: str, what: str) -> NoReturn:
    raise BuildError(
        f"{label}: {what}, but the cache key does not cover it: a build could be reused after it changes. "
        "This is a hole in orchestra's cache key (orchestra/key/inputs.py, orchestra/key/call_tree.py); "
        "please report it with this message. Nothing was published"
    )
