"""The program's call tree as DaCe resolves it, described for the cache key.

DaCe resolves each parsed callee's closure separately: the orchestrated
method's closure lists what *it* reads through ``self`` and calls, and each
callee DaCe will parse (a nested orchestrated component, a method or function
parsed implicitly, a stencil) gets its own closure in ``nested_closures``,
recursively. A key built from the top-level closure alone misses everything
one call level down: the stencils of a nested component, the scalars it folds
in, the functions its functions call. :func:`describe_call_tree` walks the
whole tree (no parsing: closure resolution only) and describes every node
under its call path, so that a changed input anywhere changes the key and a
miss names the node, e.g. ``call_tree['Tendencies.__call__/Diffusion.__call__']
.callees['FrozenStencil(hyperdiffusion, ...)'].gt_id: changed``.

A node's description: its function (``module.Qualname``; the source is
keyed once, under ``source``), the scalars it folds in, the identities of the
callees it calls (stencils with gt4py's content id, origin and domain; functions with
their source, normalised so that comments and formatting do not count), and
its callbacks.
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import re
import sys
import sysconfig
import textwrap
import types
from pathlib import Path
from typing import Any, Callable, Optional

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")

#: Values DaCe folds in; see :func:`orchestra.key.inputs.describe_value`.
Describe = Callable[[Any], Any]


def source_digest(function: Any) -> str:
    """sha256 of a function's source with comments, docstrings and formatting normalised away.

    Falls back to the raw source when it does not parse alone, and to the code
    object's bytes when the source is gone.
    """
    function = inspect.unwrap(function)
    try:
        text = textwrap.dedent(inspect.getsource(function))
    except (OSError, TypeError):
        code = getattr(function, "__code__", None)
        return _sha(repr(code.co_code) + repr(code.co_consts)) if code else "unknown"
    try:
        text = ast.unparse(_without_docstrings(ast.parse(text)))
    except SyntaxError:  # a lambda inside an expression, say: keep the text as it is
        pass
    return _sha(text)


def _without_docstrings(tree: ast.Module) -> ast.Module:
    """``tree`` without its string statements (docstrings, strings as comments): they compute nothing."""
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            body = getattr(node, field, None)
            if not isinstance(body, list) or not body or not isinstance(body[0], ast.stmt):
                continue
            kept = [statement for statement in body
                    if not (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)
                            and isinstance(statement.value.value, str))]
            if len(kept) != len(body):
                setattr(node, field, kept or [ast.Pass()])
    return tree


def function_name(function: Any) -> str:
    """``module.Qualname`` of a function: how the key names it (under ``source``, in identities)."""
    return f"{function.__module__}.{function.__qualname__}"


def callee_identity(obj: Any) -> dict[str, Any]:
    """Identity of an SDFG-convertible called from the program (stencil or component)."""
    if hasattr(obj, "build_identity"):
        return obj.build_identity()
    gt_id = getattr(obj, "_gt_id_", None)
    if gt_id is not None:  # a plain gt4py stencil object
        return {"stencil": type(obj).__name__, "gt_id": str(gt_id), "backend": getattr(obj, "backend", "")}
    function = getattr(obj, "f", None)
    if function is not None:  # a DaceProgram (also one DaCe made for an implicitly parsed function)
        return {"function": function_name(function), "source": source_digest(function)}
    return {"object": f"{type(obj).__module__}.{type(obj).__qualname__}"}


def callees_in_tree(closure: Any) -> list[Any]:
    """Every SDFG-convertible the program calls, at any depth, once each, in the order DaCe resolved them."""
    found: dict[int, Any] = {}
    pending = [closure]
    while pending:
        current = pending.pop(0)
        for _call, obj in current.closure_sdfgs.values():
            found.setdefault(id(obj), obj)
        pending[:0] = [child for _call, child in current.nested_closures]
    return list(found.values())


def call_name(call: str) -> str:
    """The callee of a call expression DaCe recorded, without its arguments or addresses.

    ``"FrozenStencil(update, ...)(q, 2.0)"`` becomes ``"FrozenStencil(update, ...)"``:
    folded argument values are listed under ``scalars``.
    """
    call = _ADDRESS.sub("", call)
    if not call.endswith(")"):
        return call
    depth = 0
    for index in range(len(call) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(call[index], 0)
        if depth == 0:
            return call[:index] or call
    return call


def describe_callees(closure: Any) -> dict[str, Any]:
    """The identities of the SDFG-convertibles a closure calls, by call name."""
    callees: dict[str, Any] = {}
    for call, obj in closure.closure_sdfgs.values():
        name, identity = call_name(call), callee_identity(obj)
        suffix = 1
        while name in callees and callees[name] != identity:  # same text, other code: keep both
            suffix += 1
            name = f"{call_name(call)}#{suffix}"
        callees.setdefault(name, identity)
    return {name: callees[name] for name in sorted(callees)}


def describe_call_tree(closure: Any, describe: Describe) -> dict[str, Any]:
    """Every node below the top-level ``closure`` that reads or calls anything, by call path."""
    nodes: dict[str, Any] = {}
    _walk(closure, "", describe, nodes, depth=0)
    return nodes


def _walk(closure: Any, path: str, describe: Describe, nodes: dict[str, Any], depth: int) -> None:
    if depth > 64:
        raise RecursionError(f"call tree deeper than 64 levels at {path}")
    objects = {call: obj for call, obj in closure.closure_sdfgs.values()}
    taken: dict[str, int] = {}
    for call, child in closure.nested_closures:
        obj = objects.get(call)
        identity = callee_identity(obj) if obj is not None else {}
        segment = _segment(call, identity)
        taken[segment] = taken.get(segment, 0) + 1
        if taken[segment] > 1:
            segment = f"{segment}#{taken[segment]}"
        child_path = f"{path}/{segment}" if path else segment
        node = {
            "function": identity.get("function") or identity.get("stencil") or call_name(call),
            "scalars": {name: describe(value) for name, value in sorted(child.closure_constants.items())},
            "callees": describe_callees(child),
            "callbacks": sorted(expression for expression, *_ in child.callbacks.values()),
        }
        function = callee_function(obj) if obj is not None else None
        reaches = sorted(referenced_functions([function])) if function is not None else []
        if reaches:  # model functions its body reaches through global names (their sources are keyed)
            node["reaches"] = reaches
        if any(node[part] for part in _CONTENTS) or child.nested_closures or "source" in identity or reaches:
            nodes[child_path] = node
        _walk(child, child_path, describe, nodes, depth + 1)


#: What a node holds besides its function's name (its source is keyed under ``source``).
_CONTENTS = ("scalars", "callees", "callbacks")


def _segment(call: str, identity: dict[str, Any]) -> str:
    """A readable name of one call-tree level: ``Diffusion.__call__``, ``FrozenStencil(laplacian, ...)``."""
    function = identity.get("function")
    if function:
        module_and_name = function.split(".")
        return ".".join(module_and_name[-2:]) if len(module_and_name) > 1 else function
    return call_name(call) if call else "<unnamed>"


#: Packages whose functions are versioned elsewhere in the key (or are not model code).
LIBRARIES = frozenset({"builtins", "dace", "gt4py", "numpy", "cupy", "mpi4py", "orchestra", "typing", "math"})


def referenced_functions(functions: list[Callable]) -> dict[str, str]:
    """Source digests of the model functions that ``functions`` reach through global names, transitively.

    DaCe resolves a function's own callees only when it parses it, and may
    evaluate a call on constants (``twice(self.a)``) without parsing at all:
    the closure tree then ends one level early. A function's globals that are
    plain functions of the model (not of a library, not of the standard
    library) are keyed by source, and so are theirs.
    """
    found: dict[str, str] = {}
    pending = list(functions)
    seen: set[int] = set()
    while pending:
        function = inspect.unwrap(pending.pop())
        if id(function) in seen or not isinstance(function, types.FunctionType):
            continue
        seen.add(id(function))
        for name in _global_names(function.__code__):
            value = function.__globals__.get(name)
            if isinstance(value, types.FunctionType) and _is_model_code(value):
                found[function_name(value)] = source_digest(value)
                pending.append(value)
    return {name: found[name] for name in sorted(found)}


def _global_names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):  # nested functions, comprehensions
            names |= _global_names(constant)
    return names


def _is_model_code(function: types.FunctionType) -> bool:
    if (function.__module__ or "").split(".")[0] in LIBRARIES:
        return False
    path = getattr(function.__code__, "co_filename", "")
    return not any(path.startswith(prefix) for prefix in _LIBRARY_PATHS)


_LIBRARY_PATHS = tuple(
    {str(Path(p).resolve()) for p in (sys.prefix, sys.base_prefix, sysconfig.get_paths()["stdlib"])}
)


#: The attribute of a model object where :func:`orchestra.orchestrate` keeps its programs, by method name.
PROGRAMS_ATTRIBUTE = "__orchestra_programs__"


def orchestrated_methods(obj: Any) -> dict[str, Any]:
    """Method name -> OrchestratedProgram of ``obj``'s orchestrated methods (empty: none)."""
    return getattr(obj, "__dict__", {}).get(PROGRAMS_ATTRIBUTE) or {}


def orchestrated_call(obj: Any) -> Optional[Any]:
    """The OrchestratedProgram that runs ``obj(...)`` when ``obj.__call__`` is orchestrated, else None."""
    return orchestrated_methods(obj).get("__call__")


def callee_function(obj: Any) -> Optional[Callable]:
    """The Python function behind an SDFG-convertible callee, if it has one."""
    program = orchestrated_call(obj)
    if program is not None:
        return program.function
    function = getattr(obj, "function", None) or getattr(obj, "f", None)
    return function if callable(function) else None


def functions_in_tree(closure: Any) -> list[Callable]:
    """The Python functions of every callee in the closure tree."""
    functions = [f for _, obj in closure.closure_sdfgs.values() if (f := callee_function(obj)) is not None]
    for _, child in closure.nested_closures:
        functions.extend(functions_in_tree(child))
    return functions


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()
