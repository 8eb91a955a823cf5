"""Where the rewrites enter DaCe: around ``preprocess_dace_program``, for the function it parses.

(And, for the same span, DaCe's naming of closure arrays, :mod:`orchestra.frontend.closure_arrays`, and
the arguments its callbacks fix at parse time, :mod:`orchestra.frontend.callback_arguments`.)

DaCe parses a function (the orchestrated method, a nested component's
method, a helper it parses implicitly) in
``dace.frontend.python.preprocessing.preprocess_dace_program(f, argtypes,
global_vars, ...)``, which reads ``f``'s syntax tree with
``astutils.function_to_ast(f)``. Inside :func:`source_rewrites` both are
wrapped: the first records which function is being parsed and with which
globals, the second rewrites that function's tree before returning it. The
rewrites keep line numbers, so DaCe's messages name the model's lines.
"""

from __future__ import annotations

import ast
import contextlib
import threading
from typing import Any, Callable, Iterator

from orchestra.frontend.aliases import replace_aliases
from orchestra.frontend.array_attributes import refuse_array_attributes
from orchestra.frontend.base_calls import bind_base_calls
from orchestra.frontend.branch_aliases import split_branch_aliases
from orchestra.frontend.call_arguments import hoist_calls_from_arguments
from orchestra.frontend.callback_arguments import live_callback_arguments
from orchestra.frontend.callbacks import type_callback_results
from orchestra.frontend.closure_arrays import one_array_per_memory
from orchestra.frontend.dead_branches import empty_dead_branches
from orchestra.frontend.early_returns import single_exit
from orchestra.frontend.element_reads import copy_element_reads, split_tuple_assignments
from orchestra.frontend.iterators import index_collection_iterators
from orchestra.frontend.loops import UNROLL, unroll_collection_loops
from orchestra.frontend.model_writes import refuse_model_rebinding
from orchestra.frontend.numpy_calls import refuse_inexact_numpy
from orchestra.frontend.numpy_promotion import numpy_promotion_checked
from orchestra.frontend.python_arithmetic import NUMPY, python_arithmetic
from orchestra.frontend.python_only import refuse_python_only
from orchestra.frontend.rebinding import refuse_rebound_arguments, rename_rebound_names
from orchestra.frontend.returns import expose_returned_aliases
from orchestra.frontend.scope import ParseScope, parsed_despite_decorators

_state = threading.local()
_install_lock = threading.Lock()


def rewrite(
    tree: ast.Module, filename: str, namespace: dict[str, Any], argtypes: dict[str, Any], called: bool = False,
    parsed: Any = None,
) -> ast.Module:
    """Apply every rewrite to the function definition in ``tree`` (DaCe's parse of one function).

    ``argtypes``: DaCe's descriptors of the run-time arguments. ``called``: the function is parsed
    for a call inside another one being parsed (a helper, a nested component's method), not as
    the program itself. ``parsed``: the Python function ``tree`` is the source of.
    """
    import dace

    definition = tree.body[0] if tree.body else None
    if not isinstance(definition, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return tree
    runtime = set(argtypes)
    arrays = {name for name, descriptor in argtypes.items() if isinstance(descriptor, dace.data.Array)}
    rename_rebound_names(definition)
    bind_base_calls(definition, ParseScope(definition, namespace, runtime), parsed)
    hoist_calls_from_arguments(definition, ParseScope(definition, namespace, runtime))
    expose_returned_aliases(definition, ParseScope(definition, namespace, runtime))  # before the aliases
    split_tuple_assignments(definition)
    copy_element_reads(definition, ParseScope(definition, namespace, runtime), argtypes)  # before the aliases
    split_branch_aliases(definition, ParseScope(definition, namespace, runtime))  # before the aliases
    replace_aliases(definition)
    empty_dead_branches(definition, ParseScope(definition, namespace, runtime))  # after the aliases: whole branches
    refuse_rebound_arguments(definition, filename, arrays)
    scope = ParseScope(definition, namespace, runtime)
    refuse_model_rebinding(definition, scope, filename)
    refuse_python_only(definition, scope, filename)
    if called:
        single_exit(definition, filename)
    index_collection_iterators(definition, scope)  # before the marking: it makes loops that index collections
    if unroll_collection_loops(definition, scope, filename):
        namespace[UNROLL] = dace.unroll
    type_callback_results(definition, scope, filename)
    python_arithmetic(definition, scope, filename)
    refuse_inexact_numpy(definition, scope, filename, arrays)
    refuse_array_attributes(definition, filename, arrays)
    ast.fix_missing_locations(tree)
    return tree


@contextlib.contextmanager
def source_rewrites() -> Iterator[None]:
    """Within the block, every function DaCe parses is rewritten first (re-entrant, per thread)."""
    from dace.frontend.python import astutils, preprocessing

    depth = getattr(_state, "depth", 0)
    if depth:
        _state.depth = depth + 1
        try:
            yield
        finally:
            _state.depth = depth
        return
    with _install_lock:
        original_preprocess = preprocessing.preprocess_dace_program
        original_to_ast = astutils.function_to_ast
        preprocessing.preprocess_dace_program = _preprocess(original_preprocess)
        astutils.function_to_ast = _function_to_ast(original_to_ast)
    _state.depth, _state.parsing, _state.program = 1, [], None
    try:
        with one_array_per_memory(), live_callback_arguments(), numpy_promotion_checked():
            yield
    finally:
        _state.depth, _state.program = 0, None
        with _install_lock:
            preprocessing.preprocess_dace_program = original_preprocess
            astutils.function_to_ast = original_to_ast


def _preprocess(original: Callable) -> Callable:
    def preprocess_dace_program(f: Any, argtypes: dict, global_vars: dict, *args: Any, **kwargs: Any) -> Any:
        modules = args[0] if args and isinstance(args[0], dict) else kwargs.get("modules")
        if isinstance(modules, dict):  # the rewrites may call NumPy by this name (DaCe reads modules first)
            import numpy

            modules.setdefault(NUMPY, "numpy")
            global_vars.setdefault(NUMPY, numpy)
        if _state.program is None:  # the first function parsed in the block is the program itself
            _state.program = f
        _state.parsing.append((f, global_vars, dict(argtypes)))
        try:
            return original(f, argtypes, global_vars, *args, **kwargs)
        finally:
            _state.parsing.pop()

    return preprocess_dace_program


def _function_to_ast(original: Callable) -> Callable:
    def function_to_ast(f: Any) -> tuple:
        tree, filename, line, source = original(f)
        definition = tree.body[0] if tree.body else None
        if isinstance(definition, (ast.FunctionDef, ast.AsyncFunctionDef)) and parsed_despite_decorators(
                definition, getattr(f, "__globals__", {})):
            definition.decorator_list = []  # DaCe then parses it instead of keeping a callback
        parsing = getattr(_state, "parsing", None)
        if parsing and parsing[-1][0] is f:
            _, namespace, argtypes = parsing[-1]
            tree = rewrite(tree, filename, namespace, argtypes, called=f is not _state.program, parsed=f)
        return tree, filename, line, source

    return function_to_ast
