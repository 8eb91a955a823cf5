"""What the names in one function refer to while DaCe parses it, and the syntax the rewrites share.

A rewrite may only rely on values fixed for the whole call: the model object
(``self``), module globals, closure cells and compile-time arguments, none of
them rebound inside the function. :class:`ParseScope` evaluates an *access
path* (a name followed by attributes and constant subscripts:
``self.stencils``, ``self.config.n_split``, ``tracers["qvapor"]``) rooted at
such a name, exactly as DaCe's closure resolution will.
"""

from __future__ import annotations

import ast
import copy
import functools
import inspect
import textwrap
import types
from typing import Any, Callable, Iterable, Iterator, Optional

MISSING = object()


class NameSubstitution(ast.NodeTransformer):
    """Replaces each read of a name in ``replacements`` by a copy of its expression (at the name's location)."""

    def __init__(self, replacements: dict[str, ast.expr]) -> None:
        self.replacements = replacements

    def visit_Name(self, node: ast.Name) -> ast.AST:
        replacement = self.replacements.get(node.id)
        if replacement is None or not isinstance(node.ctx, ast.Load):
            return node
        return ast.copy_location(copy.deepcopy(replacement), node)


@functools.lru_cache(maxsize=None)
def definition_of(function: types.FunctionType) -> Optional[ast.FunctionDef]:
    """The syntax tree of a function's definition (decorators included), None without source."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    except (OSError, TypeError, SyntaxError):
        return None
    definition = tree.body[0] if tree.body else None
    return definition if isinstance(definition, (ast.FunctionDef, ast.AsyncFunctionDef)) else None


def parsed_despite_decorators(definition: ast.FunctionDef, namespace: dict[str, Any]) -> bool:
    """Whether every decorator of ``definition`` is ``staticmethod``: only changes how the function is reached.

    DaCe keeps every decorated function in Python as a callback (a decorator
    may do anything); a static method is a plain function reached through a
    class or an instance, so orchestra has it parsed like any helper.
    """
    return bool(definition.decorator_list) and all(
        isinstance(decorator, ast.Name) and decorator.id == "staticmethod"
        and namespace.get("staticmethod", staticmethod) is staticmethod
        for decorator in definition.decorator_list)


def inner_blocks(statement: ast.stmt) -> Iterator[list[ast.stmt]]:
    """The statement lists nested directly in ``statement`` (bodies, ``else``, ``finally``, handlers)."""
    for field in ("body", "orelse", "finalbody"):
        inner = getattr(statement, field, None)
        if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
            yield inner
    for handler in getattr(statement, "handlers", ()):
        yield handler.body


def replace_statements(body: list[ast.stmt], replace: Callable[[ast.stmt], Optional[list[ast.stmt]]]) -> int:
    """Put ``replace(statement)`` in each statement's place where it gives a list, at any depth; how many.

    A replaced statement's own blocks are not visited (the replacement is final).
    """
    count = index = 0
    while index < len(body):
        statement = body[index]
        replacement = replace(statement)
        if replacement is not None:
            body[index:index + 1] = replacement
            count += 1
            index += len(replacement)
            continue
        for inner in inner_blocks(statement):
            count += replace_statements(inner, replace)
        index += 1
    return count


def own_returns(body: list[ast.stmt]) -> list[ast.Return]:
    """The ``return`` statements of these statements, in source order (not of functions or classes inside)."""
    found: list[ast.Return] = []
    pending: list[ast.AST] = list(body)
    while pending:
        node = pending.pop(0)
        if isinstance(node, ast.Return):
            found.append(node)
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            pending.extend(ast.iter_child_nodes(node))
    return found


def parameter_names(function: ast.FunctionDef) -> list[str]:
    """The function's named parameters, in order (positional-only, positional, keyword-only)."""
    arguments = function.args
    return [arg.arg for arg in arguments.posonlyargs + arguments.args + arguments.kwonlyargs]


def name_uses(node: ast.AST, name: str, context: type = ast.Load) -> int:
    """How often ``node`` uses the plain name ``name`` in ``context`` (``ast.Load``, ``ast.Store``, a tuple...)."""
    return sum(1 for child in ast.walk(node)
               if isinstance(child, ast.Name) and child.id == name and isinstance(child.ctx, context))


def stored_names(nodes: Iterable[ast.AST]) -> set[str]:
    """Every plain name bound anywhere in ``nodes`` (assignments, loop targets, ``with ... as``)."""
    names: set[str] = set()
    for node in nodes:
        for child in ast.walk(node):
            if isinstance(child, ast.Name) and isinstance(child.ctx, (ast.Store, ast.Del)):
                names.add(child.id)
    return names


def breaks_or_continues(loop: ast.For) -> bool:
    """``break`` or ``continue`` of this loop (not of a loop nested in it)."""
    pending = list(loop.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.Break, ast.Continue)):
            return True
        if isinstance(node, (ast.For, ast.While, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        pending.extend(ast.iter_child_nodes(node))
    return False


def path_names(node: ast.AST) -> set[str]:
    """The plain names an expression reads."""
    return {child.id for child in ast.walk(node) if isinstance(child, ast.Name)}


_INDEX_NODES = (ast.Constant, ast.Name, ast.BinOp, ast.UnaryOp, ast.Tuple,
                ast.expr_context, ast.operator, ast.unaryop)


def is_access_path(node: ast.AST) -> bool:
    """A name followed by attributes and subscripts whose indices are constants, names and arithmetic."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        if isinstance(node, ast.Subscript) and not all(isinstance(part, _INDEX_NODES) for part in ast.walk(node.slice)):
            return False
        node = node.value
    return isinstance(node, ast.Name)


def root_name(node: ast.AST) -> Optional[str]:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


class ParseScope:
    """Names of one function whose values are known when it is parsed.

    Args:
        function: the function's syntax tree.
        namespace: DaCe's globals for the parse (module globals, closure
            cells, the model object under its parameter name, compile-time
            arguments).
        runtime: names of run-time arguments (arrays, scalars), never evaluated.
    """

    def __init__(self, function: ast.FunctionDef, namespace: dict[str, Any], runtime: Iterable[str]) -> None:
        self.namespace = namespace
        rebound = stored_names(function.body) | set(runtime)
        self.fixed = {name for name in namespace if name not in rebound}

    def value_of(self, node: ast.AST) -> Any:
        """The value of an access path rooted at a fixed name, or :data:`MISSING`."""
        if not is_access_path(node) or not path_names(node) <= self.fixed:
            return MISSING
        try:
            code = compile(ast.fix_missing_locations(ast.Expression(body=node)), "<orchestra path>", "eval")
            return eval(code, {"__builtins__": {}}, self.namespace)  # noqa: S307 (attribute path only)
        except Exception:  # an attribute set later, an index out of range: not known here
            return MISSING
