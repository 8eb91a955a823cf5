"""Callback results typed from the callback: ``n = math.floor(self.cfl())``, ``a, b = self.two()``.

A callback (a function with a decorator, such as a ``dace_inhibitor``
method: it stays in Python) returns values whose type DaCe must know when it
parses the caller. DaCe reads it only from an annotated receiving variable
(``dt: float = self.timestep()``) and ignores the callback's own return
annotation, so a result used in an expression or unpacked from a tuple
(with ``-> tuple[float, float]``) compiled into code that failed in the
C++ compiler.

Here every callback call whose result is used gets the type its return
annotation states: the call moves into a typed temporary just before the
statement (in order, evaluated once, as Python evaluates it), and the
temporary takes its place. Calls inside ``and``/``or``, conditional
expressions, comprehensions and ``while`` tests are not moved (Python may
skip or repeat them). A callback without a return annotation whose result is
used, with no annotated receiving variable, is refused here, naming the line
and the annotation to add.
"""

from __future__ import annotations

import ast
import types
import typing
from typing import Any, Optional

from orchestra.errors import BuildError
from orchestra.frontend.scope import MISSING, ParseScope, definition_of, inner_blocks, parsed_despite_decorators

_NOT_MOVED = (ast.BoolOp, ast.IfExp, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.Lambda)


def type_callback_results(function: ast.FunctionDef, scope: ParseScope, filename: str) -> int:
    """Rewrite ``function`` in place; returns how many callback results were typed."""
    typer = _Typer(function, scope, filename)
    typer.block(function.body)
    return typer.count


def callback_function(value: Any) -> Optional[types.FunctionType]:
    """The Python function DaCe will keep as a callback when ``value`` is called, else None.

    DaCe keeps any decorated function (``dace_inhibitor`` is an identity
    decorator) in Python; undecorated functions, and static methods (see
    :func:`~orchestra.frontend.scope.parsed_despite_decorators`), it parses
    into the program.
    """
    if hasattr(value, "__sdfg__"):
        return None
    function = getattr(value, "__func__", value)
    if not isinstance(function, types.FunctionType):
        return None
    definition = definition_of(function)
    if definition is None or not definition.decorator_list:
        return None
    return None if parsed_despite_decorators(definition, function.__globals__) else function


def result_types(function: types.FunctionType) -> Optional[list[Any]]:
    """DaCe scalar descriptors of what ``function`` returns, from its annotation; None if unknown."""
    import dace

    try:
        annotation = typing.get_type_hints(function).get("return", MISSING)
    except Exception:  # an annotation that does not evaluate
        annotation = function.__annotations__.get("return", MISSING)
    if annotation is MISSING or isinstance(annotation, str):
        return None
    if annotation is None or annotation is type(None):
        return []
    parts = typing.get_args(annotation) if typing.get_origin(annotation) is tuple else (annotation,)
    if not parts or Ellipsis in parts:
        return None
    descriptors = []
    for part in parts:
        try:
            dtype = part if isinstance(part, dace.dtypes.typeclass) else dace.dtypes.typeclass(part)
            descriptors.append(dace.data.Scalar(dtype))
        except Exception:  # not a scalar type (an array, an object): DaCe decides
            return None
    return descriptors


def scalar_annotation(scope: ParseScope, descriptor: Any) -> ast.Name:
    """An annotation DaCe reads as ``descriptor`` (a scalar): a name bound to it in the parse's globals."""
    type_name = f"__orchestra_scalar_{descriptor.dtype.to_string()}__"
    scope.namespace[type_name] = descriptor
    return ast.Name(id=type_name, ctx=ast.Load())


class _Typer:
    def __init__(self, function: ast.FunctionDef, scope: ParseScope, filename: str) -> None:
        self.scope, self.filename, self.count = scope, filename, 0
        self.annotated = {node.target.id for node in ast.walk(function)
                          if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)}

    def block(self, body: list[ast.stmt]) -> None:
        index = 0
        while index < len(body):
            statement = body[index]
            before = self.statement(statement)
            body[index:index] = before
            index += len(before)
            for inner in inner_blocks(statement):
                self.block(inner)
            index += 1

    def statement(self, statement: ast.stmt) -> list[ast.stmt]:
        """The typed temporaries to insert before ``statement`` (its calls replaced by them)."""
        inserted: list[ast.stmt] = []
        if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
            call = statement.value  # its own result is unused; its arguments are not
            call.args = [self.expression(arg, statement, inserted) for arg in call.args]
            for keyword in call.keywords:
                keyword.value = self.expression(keyword.value, statement, inserted)
            return inserted
        if isinstance(statement, ast.AnnAssign):
            return []  # typed by the model
        roots = {
            ast.Assign: ("value",), ast.AugAssign: ("value",), ast.Return: ("value",), ast.Expr: ("value",),
            ast.If: ("test",), ast.For: ("iter",),
        }.get(type(statement), ())
        for field in roots:
            node = getattr(statement, field)
            if node is not None:
                setattr(statement, field, self.expression(node, statement, inserted))
        return inserted

    def expression(self, node: ast.expr, statement: ast.stmt, inserted: list[ast.stmt]) -> ast.expr:
        if isinstance(node, _NOT_MOVED):
            return node
        for field, value in ast.iter_fields(node):
            if isinstance(value, ast.expr):
                setattr(node, field, self.expression(value, statement, inserted))
            elif isinstance(value, list):
                setattr(node, field, [self.expression(item, statement, inserted) if isinstance(item, ast.expr)
                                      else item for item in value])
        if not isinstance(node, ast.Call):
            return node
        callee = self.scope.value_of(node.func)
        function = callback_function(callee) if callee is not MISSING else None
        if function is None:
            return node
        types_ = result_types(function)
        if types_ is None:
            if not self._receiver_annotated(statement, node):
                self._refuse(node, function)
            return node
        if not types_:
            return node
        return self._move(node, types_, inserted)

    def _move(self, call: ast.Call, descriptors: list[Any], inserted: list[ast.stmt]) -> ast.expr:
        self.count += 1
        base = f"__orchestra_result_{call.lineno}_{self.count}"
        names = [base] if len(descriptors) == 1 else [f"{base}_{i}" for i in range(len(descriptors))]
        for name, descriptor in zip(names, descriptors):
            annotation = scalar_annotation(self.scope, descriptor)
            value = call if len(names) == 1 else None
            inserted.append(ast.AnnAssign(target=ast.Name(id=name, ctx=ast.Store()), annotation=annotation,
                                          value=value, simple=1))
        if len(names) > 1:
            target = ast.Tuple(elts=[ast.Name(id=name, ctx=ast.Store()) for name in names], ctx=ast.Store())
            inserted.append(ast.Assign(targets=[target], value=call))
        for new in inserted:
            ast.copy_location(new, call)
            ast.fix_missing_locations(new)
        if len(names) == 1:
            return ast.copy_location(ast.Name(id=names[0], ctx=ast.Load()), call)
        return ast.copy_location(ast.Tuple(elts=[ast.Name(id=n, ctx=ast.Load()) for n in names], ctx=ast.Load()), call)

    def _receiver_annotated(self, statement: ast.stmt, call: ast.Call) -> bool:
        if not isinstance(statement, ast.Assign) or statement.value is not call:
            return False
        names = [node for target in statement.targets for node in ast.walk(target) if isinstance(node, ast.Name)]
        return bool(names) and all(name.id in self.annotated for name in names)

    def _refuse(self, call: ast.Call, function: types.FunctionType) -> None:
        raise BuildError(
            f"{self.filename}:{call.lineno}: the result of the callback {ast.unparse(call.func)}() is used, "
            f"but {function.__qualname__} has no return annotation; it is decorated, so it stays in Python "
            "as a callback and the compiled program must be told the type of what it returns: annotate it "
            f"(def {function.__name__}(...) -> float, or -> tuple[float, int] for several values), or, for a "
            "value known before the run, compute it in __init__ and read it through self"
        )
