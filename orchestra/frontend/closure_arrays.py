"""One program array per memory, one memory per program array: ``self.tmp`` and ``self.tmp.data`` are one array.

DaCe's closure resolution gives each Python *object* an orchestrated method
reads through ``self`` (or a module global) an array of the program, keyed
by the object's identity. A container and the array it wraps (an NDSL-style
``Quantity`` and its ``.data``), or two names bound to equal views of one
buffer, are different objects over the same memory: DaCe made two arrays of
them and took them as distinct, so a stencil writing ``self.tmp`` and an
assignment reading ``self.tmp.data`` could be reordered and read stale
values (silently different from ``Python`` mode, which runs in call order).

While orchestra parses (inside :func:`orchestra.frontend.hook.source_rewrites`),
:func:`one_array_per_memory` wraps the two places where DaCe names closure
arrays: ``GlobalResolver.global_value_to_node`` (an array read in a
function's body) and ``SDFGClosure.combine_nested_closures`` (the arrays of
the components it calls). An array whose memory and layout (address, dtype,
shape, strides, storage) equal those of an array the closure already holds
is mapped to that array's name, so every expression of it reads and writes
one program array, in every component. Each such pair is recorded
(:class:`SharedArray`, :func:`shared_arrays` of the program's closure) and
the fast call path re-reads both on every call: if they no longer share
memory (one of them was reallocated), the call is refused instead of running
on the wrong array. Views that overlap without being equal cannot be one
array; the fast call path refuses them too
(:func:`orchestra.calls.fast_path.check_no_aliasing`), as it refuses two
overlapping arguments.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import re
from typing import Any, Callable, Iterator, Optional

from orchestra.key.array_like import array_layout

#: Attribute of a DaCe ``SDFGClosure``: memory key -> (array name, expression, how to read it again).
_NAMES = "_orchestra_names_by_memory"
#: Attribute of a DaCe ``SDFGClosure``: the :class:`SharedArray` records of it and of the components it calls.
_SHARED = "_orchestra_shared_arrays"
#: Attribute of a DaCe ``SDFGClosure``: objects mapped to another's name, kept alive (DaCe maps by ``id``).
_KEPT = "_orchestra_kept_arrays"


@dataclasses.dataclass(frozen=True)
class SharedArray:
    """Two expressions made one program array because they were one memory when the program was parsed."""

    expression: str  #: the one that lost its own array (``self.inner.storage``)
    read: Callable[[], Any]  #: reads it again
    same_as: str  #: the one whose array it uses (``self._tmp``)
    read_same_as: Callable[[], Any]

    def diverged(self) -> Optional[str]:
        """Why the two no longer are one memory (None while they are, or when one cannot be read again)."""
        try:
            if memory_key(self.read()) == memory_key(self.read_same_as()):
                return None
        except Exception:  # DaCe keeps some objects it cannot name again; nothing to compare then
            return None
        return (f"{self.expression} and {self.same_as} were the same array when the program was built, and "
                "are one array of it, but no longer share memory: keep them one array (reallocate through "
                "one name), or give each its own array from the start")


def shared_arrays(closure: Any) -> list[SharedArray]:
    """The arrays of a resolved DaCe closure that stand for another expression's (empty for most programs)."""
    return list(getattr(closure, "__dict__", {}).get(_SHARED, ()))


def memory_key(value: Any) -> Optional[tuple]:
    """Where and how ``value``'s elements lie (equal keys: the same array); None when that is unknown."""
    layout = array_layout(value)
    if layout is None or not layout.pointer:
        return None
    return layout.pointer, layout.dtype.str, layout.shape, layout.strides, layout.storage


@contextlib.contextmanager
def one_array_per_memory() -> Iterator[None]:
    """Within the block, DaCe's closure resolution makes one program array of objects over the same memory."""
    from dace.frontend.python.common import SDFGClosure
    from dace.frontend.python.preprocessing import GlobalResolver

    resolve, combine = GlobalResolver.global_value_to_node, SDFGClosure.combine_nested_closures
    name = GlobalResolver._qualname_to_array_name
    GlobalResolver.global_value_to_node = _resolving(resolve)
    SDFGClosure.combine_nested_closures = _combining(combine)
    GlobalResolver._qualname_to_array_name = _distinct_name
    try:
        yield
    finally:
        GlobalResolver.global_value_to_node, SDFGClosure.combine_nested_closures = resolve, combine
        GlobalResolver._qualname_to_array_name = name


def _distinct_name(resolver: Any, qualname: str, prefix: str = "__g_") -> str:
    """A program name for the expression ``qualname``, never one another expression's array has.

    DaCe replaces ``.``, ``[``, ``]``, quotes and commas by ``_`` and takes
    the result as the array's name without looking at the closure: ``self.u_x``
    and ``self.u.x`` (or ``d["a.b"]`` and ``d["a_b"]``) became one array of
    the program, silently; an expression with other characters
    (``tracers[names[0]]`` once ``names`` is a literal list) was refused.
    Here every other character is replaced too, and a name an array of
    another expression holds gets a numbered suffix.
    """
    from dace.utils import find_new_name

    name = prefix + re.sub(r"[^0-9A-Za-z_]", "_", qualname)
    taken = resolver.closure.closure_arrays
    if prefix and name in taken and str(taken[name][0]) != qualname:
        name = find_new_name(name, taken.keys())
    return name


def _names(closure: Any) -> dict:
    return closure.__dict__.setdefault(_NAMES, {})


def _map_to_known(closure: Any, value: Any, expression: str, read: Callable[[], Any]) -> None:
    """If ``closure`` holds an array over ``value``'s memory under another object, map ``value`` to its name."""
    if id(value) in closure.array_mapping:
        return
    known = _names(closure).get(memory_key(value))
    if known is not None:
        name, same_as, read_same_as = known
        closure.array_mapping[id(value)] = name
        closure.__dict__.setdefault(_KEPT, []).append(value)
        closure.__dict__.setdefault(_SHARED, []).append(SharedArray(expression, read, same_as, read_same_as))


def _remember(closure: Any, value: Any) -> None:
    name = closure.array_mapping.get(id(value))
    key = memory_key(value)
    if name is not None and key is not None and name in closure.closure_arrays:
        expression, _, read, _ = closure.closure_arrays[name]
        _names(closure).setdefault(key, (name, str(expression), read))


def _resolving(original: Callable) -> Callable:
    def global_value_to_node(resolver: Any, value: Any, parent_node: Any, qualname: str, *args: Any,
                             **kwargs: Any) -> Any:
        from dace import dtypes

        qualname = element_expression(resolver, value, parent_node, qualname)
        if not dtypes.is_array(value):
            return original(resolver, value, parent_node, qualname, *args, **kwargs)
        _map_to_known(resolver.closure, value, qualname, lambda: eval(qualname, resolver.globals))  # as DaCe does
        node = original(resolver, value, parent_node, qualname, *args, **kwargs)
        _remember(resolver.closure, value)
        return node

    return global_value_to_node


#: DaCe's name of an element of a loop it unrolls: ``gen<line>_<position>`` (``_<part>`` for tuples)
_GENERATED = re.compile(r"gen\d+_(\d+)(?:_(\d+))?")
#: what an iterator marked for unrolling is wrapped in (:mod:`orchestra.frontend.loops`, DaCe's own)
_UNROLL_CALLS = frozenset({"__orchestra_unroll__", "dace.unroll", "unroll"})


def element_expression(resolver: Any, value: Any, parent_node: Any, qualname: str) -> str:
    """The access path of an element of a loop DaCe unrolls, in place of DaCe's name for it.

    DaCe names the objects of a loop it unrolls (``for q in state.tracers.values()``)
    ``gen<line>_<position>``: a comment added above the loop renamed the
    program's arrays and callees, so the key changed (a ``Run`` job refused its
    build) and debug patterns could not name them. Here the element is named by
    where it is: ``state.tracers['qc']`` for a dict's values or items,
    ``self.stencils[1]`` for a list or tuple, the iterator's text and the
    position (``zip(a, b)[1][0]``) for anything else. A name another object
    of the closure already holds gets ``#2``, ``#3``... (still no line in it).
    """
    match = _GENERATED.fullmatch(qualname)
    if match is None or not isinstance(parent_node, (ast.For, ast.AsyncFor)):
        return qualname
    position, part = int(match.group(1)), match.group(2)
    iterated = parent_node.iter
    while (isinstance(iterated, ast.Call) and len(iterated.args) == 1 and not iterated.keywords
           and ast.unparse(iterated.func) in _UNROLL_CALLS):
        iterated = iterated.args[0]
    expression = _element_path(iterated, position, part, resolver.globals)
    return _unique(resolver.closure, value, expression)


def _element_path(iterated: ast.expr, position: int, part: Optional[str], namespace: dict) -> str:
    """``X[key]`` for ``X.values()``/``X.items()`` of a dict, ``X[position]`` for a list or tuple; else text."""
    method = iterated.func.attr if (isinstance(iterated, ast.Call) and isinstance(iterated.func, ast.Attribute)
                                    and not iterated.args and not iterated.keywords) else None
    if method in ("values", "items") and (method == "values") == (part is None) and (part in (None, "1")):
        container = _evaluate(iterated.func.value, namespace)
        if isinstance(container, dict) and position < len(container):
            key = list(container)[position]
            if isinstance(key, (str, int)) and not isinstance(key, bool):
                return f"{ast.unparse(iterated.func.value)}[{key!r}]"
    path = f"{ast.unparse(iterated)}[{position}]"  # self.stencils[1], or zip(a, b)[1]
    return path if part is None else f"{path}[{part}]"


def _evaluate(node: ast.expr, namespace: dict) -> Any:
    """The value of an access path (``state.tracers``) in the parse's namespace; None if it is not one."""
    from orchestra.frontend.scope import is_access_path

    if not is_access_path(node):
        return None
    try:
        return eval(compile(ast.Expression(body=node), "<orchestra path>", "eval"),  # noqa: S307 (access path)
                    {"__builtins__": {}}, namespace)
    except Exception:
        return None


def _unique(closure: Any, value: Any, expression: str) -> str:
    """``expression``, or ``expression#n`` when other objects of ``closure`` are known by it."""
    known = [entry for entry in [*closure.closure_arrays.values(), *closure.closure_sdfgs.values()]
             if str(entry[0]).split("#")[0] == expression]
    for entry in known:
        if _held(entry) is value:
            return str(entry[0])
    return f"{expression}#{len(known) + 1}" if known else expression


def _held(entry: tuple) -> Any:
    """The object a closure entry (an array's or a callee's) stands for."""
    if len(entry) == 2:
        return entry[1]
    try:
        return entry[2]()
    except Exception:
        return None


def _combining(original: Callable) -> Callable:
    def combine_nested_closures(closure: Any) -> None:
        children = closure.nested_closures
        try:
            for entry in children:  # DaCe's own loop, one (name, closure) at a time, each array mapped first
                child = entry[1]
                arrays = [(expression, read, read()) for _, (expression, _, read, _)
                          in sorted(child.closure_arrays.items())]
                for expression, read, array in arrays:
                    _map_to_known(closure, array, str(expression), read)
                closure.nested_closures = [entry]
                original(closure)
                for _, _, array in arrays:
                    _remember(closure, array)
                closure.__dict__.setdefault(_SHARED, []).extend(shared_arrays(child))
        finally:
            closure.nested_closures = children

    return combine_nested_closures
