"""The values a build folded in, read again on every call.

DaCe folds the scalars a program reads through ``self`` or module globals
into the generated code (``for _ in range(self.n_substeps)``, ``if
self.diffuse_wind:``, ``self.stencil(q, self.factor)``), at every depth of
the call tree. The cache key holds their values at the first call; nothing
looked at them again, so a model that changed ``self.factor`` or toggled a
flag between calls kept running the old program while ``Python`` mode
computed with the new value.

:class:`FoldedValues` lists every folded value of one obtained program with
where it came from (the program or nested component whose closure read it,
and DaCe's expression for it, e.g. ``self.coeffs[1]``) and compares each
with its current value on every call. A call that finds one changed gets
another program, obtained like any program (found in the cache, built, or
refused in ``Run`` mode with the difference named), exactly as a new value
of a compile-time argument does. Values are compared by type and value
(NaN equals NaN); an object DaCe folded as a whole is compared by type, as
the key does. The stencils and components ``self`` holds and the build
called are compared by identity: a model that assigns another stencil to
``self.step`` runs the new one. Cost: the dycore has 7 values and 24
callees held by components, checked in about 3 us per call
(``scripts/time_folded_values.py``), against 0.5 to 40 ms per step.
"""

from __future__ import annotations

import ast
import enum
import functools
import inspect
import operator
from typing import Any, Callable, Optional

from orchestra.key.call_tree import orchestrated_call
from orchestra.key.expression_reader import ATTRIBUTE_CHAIN, expression_reader, subscript_of


class FoldedValue:
    """One folded value: where it is read from, the code that reads it, the value built in."""

    __slots__ = ("where", "expression", "built", "current", "same", "place", "in_tuple")

    def __init__(
        self, where: str, expression: str, namespace: tuple[dict, dict], built: Any,
        same: Optional[Callable[[Any, Any], bool]] = None,
    ) -> None:
        self.where, self.expression, self.built = where, expression, built
        #: (the owner's ``__dict__``, the attribute) when the expression is ``self.attribute``
        self.place: Optional[tuple[dict, str]] = _attribute_place(expression, namespace[1])
        self.current = (
            functools.partial(self.place[0].get, self.place[1]) if self.place
            else expression_reader(expression, *namespace)
        )
        self.same = same or _same
        #: (key, reader of the tuple, the tuple, the namespace) when the expression is an item of a tuple of plain values
        self.in_tuple: Optional[tuple[tuple, Callable[[], Any], tuple, tuple]] = _tuple_item(
            expression, namespace, built, self.same)

    @property
    def name(self) -> str:
        """The expression, under the call path of the component that reads it (``Inner.__call__: self.n``)."""
        return f"{self.where}: {self.expression}" if self.where else self.expression


def _attribute_place(expression: str, locals_: dict) -> Optional[tuple[dict, str]]:
    """``(vars(self), "attribute")`` for ``self.attribute`` held in the instance dict, else None."""
    root, _, rest = expression.partition(".")
    if not ATTRIBUTE_CHAIN.fullmatch(expression) or root not in locals_ or not rest or "." in rest:
        return None
    owner = getattr(locals_[root], "__dict__", None)
    return (owner, rest) if isinstance(owner, dict) and rest in owner else None


#: values a tuple may hold for its items to be fixed while the tuple is the same object
_PLAIN = (bool, int, float, complex, str, bytes, type(None), enum.Enum)


def _tuple_item(expression: str, namespace: tuple[dict, dict], built: Any, same: Callable) -> Optional[tuple]:
    """``(key, read the tuple, the tuple, the namespace)`` for ``NAMES[2]`` with ``NAMES`` a tuple of plain values, else None.

    A model looping over a constant tuple (``for name in TRACERS``) folds one
    value per item; while the tuple is the same object, none of its items
    can have changed, so the call checks the tuple once (its identity), not
    each item.
    """
    subscript = subscript_of(expression)
    if subscript is None:
        return None
    base, index = subscript
    try:
        read = expression_reader(base, *namespace)
        whole = read()
        item = whole[index]
    except Exception:  # noqa: BLE001 (read item by item, as any other value)
        return None
    if type(whole) is not tuple or not all(isinstance(value, _PLAIN) for value in whole) or not same(item, built):
        return None
    # keyed by the namespace's identity, and the namespace kept with it: no other program's namespace (a new
    # dict at a freed one's address) can share the key and have its items checked through this tuple
    return (base, id(namespace[0]), id(namespace[1])), read, whole, namespace


class FoldedValues:
    """Every value one program's build folded in; :meth:`changed` says whether any differs now."""

    __slots__ = ("values", "_owners", "_names", "_held", "_tuples", "_others")

    def __init__(self, values: list[FoldedValue]) -> None:
        self.values = tuple(values)
        # the per-call check, flattened: callees held as ``self.attribute`` (most entries) read
        # and compared by identity in two C-level passes, then every other value
        held, others, tuples = [], [], {}
        for value in self.values:
            if value.same is _identical and value.place is not None:
                held.append((*value.place, value.built))
            elif value.in_tuple is not None:  # one identity test per tuple; its items if it was replaced
                key, read, whole, _ = value.in_tuple
                tuples.setdefault(key, (read, whole, []))[2].append((value.current, value.same, value.built))
            else:
                others.append((value.current, value.same, value.built))
        self._tuples = tuple((read, whole, tuple(items)) for read, whole, items in tuples.values())
        self._owners = tuple(owner for owner, _, _ in held)
        self._names = tuple(name for _, name, _ in held)
        self._held = tuple(built for _, _, built in held)
        self._others = tuple(others)

    @classmethod
    def of(cls, program: Any, compiletime: Optional[dict[str, Any]] = None) -> "FoldedValues":
        """The folded values of ``program`` (a DaceProgram whose closure was resolved for this build).

        ``compiletime``: the call's compile-time arguments by name; a value
        folded through one (``state.dt``) is read from the object passed.
        """
        values: list[FoldedValue] = []
        seen: set[tuple[int, str]] = set()
        _collect(program.resolver, program, "", values, seen, depth=0, extra=compiletime or {})
        return cls(values)

    def changed(self) -> Optional[str]:
        """``None`` if every value is still the one built in, else what changed (for the log)."""
        try:
            if (
                all(map(operator.is_, map(dict.get, self._owners, self._names), self._held))
                and all(read() is whole or _all_same(items) for read, whole, items in self._tuples)
                and _all_same(self._others)
            ):
                return None
        except Exception:  # noqa: BLE001 (explained below, value by value)
            pass
        for value in self.values:
            try:
                now = value.current()
            except Exception as error:  # noqa: BLE001 (an attribute removed: the build no longer applies)
                return f"{value.name} can no longer be read ({type(error).__name__}: {error})"
            if not value.same(now, value.built):
                return f"{value.name} was {value.built!r} when built, is {now!r} now"
        return None

    def __len__(self) -> int:
        return len(self.values)


def _collect(
    closure: Any, program: Optional[Any], where: str, values: list, seen: set, depth: int, extra: Optional[dict] = None
) -> None:
    """Add the folded values of ``closure`` (read by ``program``) and of every nested closure."""
    if depth > 64:
        raise RecursionError(f"call tree deeper than 64 levels at {where}")
    if program is not None:
        namespace = _namespace(program)
        namespace[1].update(extra or {})
        owner = id(program.methodobj) if getattr(program, "methodobj", None) is not None else id(program.f)
        for expression, built in sorted(closure.closure_constants.items()):
            if (owner, expression) in seen:
                continue
            seen.add((owner, expression))
            if _is_literal(expression):
                continue  # DaCe lists some literals it folded by their text: they cannot change
            try:
                value = FoldedValue(where, expression, namespace, built)
                value.current()
            except Exception:  # noqa: BLE001 (not an expression DaCe could read again either)
                continue
            values.append(value)
    objects = {call: obj for call, obj in closure.closure_sdfgs.values()}
    if program is not None:
        _collect_callees(program, set(map(id, objects.values())), namespace, where, values, seen)
    for call, child in closure.nested_closures:
        callee = _program_of(objects.get(call))
        label = "/".join(filter(None, (where, _name(callee)))) if callee is not None else where
        _collect(child, callee, label, values, seen, depth + 1)


def _collect_callees(program: Any, callees: set[int], namespace: tuple, where: str, values: list, seen: set) -> None:
    """The stencils and components the build called, where the code names them: replaced, they are other code.

    DaCe inlines ``self.step(q)`` by the object ``self.step`` held when it
    parsed; a model that then assigns another stencil or component to
    ``self.step`` runs the new one in ``Python`` mode. Each such attribute of
    ``self`` (or list/tuple attribute holding callees), or for a function each
    module global or closure cell holding one, is compared by identity.
    """
    owner = getattr(program, "methodobj", None)
    if owner is not None:
        candidates = {f"{program.objname}.{name}": held for name, held in vars(owner).items()}
    else:  # a function: the callees it names through module globals or closure cells
        function = inspect.unwrap(program.f)
        names = set(function.__code__.co_names) | set(function.__code__.co_freevars)
        candidates = {name: held for name, held in {**namespace[0], **namespace[1]}.items() if name in names}
    for expression, held in candidates.items():
        if id(held) in callees:
            same = _identical
        elif isinstance(held, (list, tuple)) and any(id(item) in callees for item in held):
            held, same = tuple(held), _identical_items
        else:
            continue
        key = (id(owner) if owner is not None else id(program.f), expression)
        if key not in seen and ATTRIBUTE_CHAIN.fullmatch(expression):
            seen.add(key)
            values.append(FoldedValue(where, expression, namespace, held, same))


def _all_same(values: tuple) -> bool:
    return all(same(read(), built) for read, same, built in values)


def _identical(now: Any, built: Any) -> bool:
    return now is built


def _identical_items(now: Any, built: tuple) -> bool:
    return isinstance(now, (list, tuple)) and len(now) == len(built) and all(a is b for a, b in zip(now, built))


def _is_literal(expression: str) -> bool:
    try:
        ast.literal_eval(expression)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False
    return True


def _program_of(obj: Any) -> Optional[Any]:
    """The DaceProgram behind a callee of the call tree (an orchestrated component, a parsed method)."""
    if obj is None:
        return None
    program = orchestrated_call(obj)
    if program is not None:
        obj = program
    if hasattr(obj, "dace_program"):
        return obj.dace_program()
    if hasattr(obj, "f") and hasattr(obj, "global_vars"):
        return obj
    return None


def _namespace(program: Any) -> tuple[dict, dict]:
    """Where a program's folded expressions are read: its function's live globals, ``self``, closure cells."""
    function = inspect.unwrap(program.f)
    local: dict[str, Any] = {}
    try:
        local.update(inspect.getclosurevars(function).nonlocals)
    except (TypeError, ValueError):
        pass
    if getattr(program, "methodobj", None) is not None:
        local[program.objname] = program.methodobj
    return function.__globals__, local


def _name(program: Any) -> str:
    function = inspect.unwrap(program.f)
    owner = getattr(program, "methodobj", None)
    return f"{type(owner).__name__}.{function.__name__}" if owner is not None else function.__qualname__


def _same(now: Any, built: Any) -> bool:
    """Equal for the generated code: same type and value (NaN equals NaN); objects by type."""
    if now is built:
        return True
    if type(now) is not type(built):
        return False
    if isinstance(built, (bool, int, float, complex, str, bytes, enum.Enum)) or hasattr(built, "dtype"):
        try:
            return bool(now == built) or (now != now and built != built)
        except (TypeError, ValueError):
            return False
    return True  # an object folded as a whole: its type is what the code depends on
