"""A stencil call's size and stride symbols, read off its arguments instead of solved by sympy.

When DaCe's frontend nests an SDFG (each stencil call, each orchestrated
component), it infers the values of the nested SDFG's free symbols from the
arguments: for every array, each dimension of its shape, strides and offset
becomes an equation ``symbolic - given = 0``, and ``sympy.solve`` solves them
all at once (``dace.frontend.python.parser.infer_symbols_from_datadescriptor``).
A gt4py stencil has a size and a stride symbol per field and axis
(``__a_I_size``, ``__a_I_stride``...), each equal to a number of the
argument: 18 trivial equations for a 3-field stencil, solved by sympy's
general solver in 60-80 ms per call, a third of a parse whose stencils are
all in gt4py's cache (docs/performance_log.md, "Build").

:func:`fast_symbol_inference` installs, for the duration of a parse, an
inference that handles exactly that case itself: every dimension that is not
a number is one plain symbol not given as an argument, and every given value
is an integer. Then each symbol's value is the given integer, the same value
``sympy.solve`` returns (a ``sympy.Integer``), and the result lists the
symbols in the order ``sympy.solve`` does (sorted by name). Anything else (an
expression such as ``N + 1``, a symbol passed as an argument, a symbolic
given value, two values for one symbol) goes to DaCe's own inference
unchanged, which solves it or raises its error.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator, Optional

#: DaCe's module whose function the frontend calls (looked up at each call, inside ``_parse_sdfg_call``).
_PARSER_MODULE = "dace.frontend.python.parser"
_FUNCTION = "infer_symbols_from_datadescriptor"


def given_values(argument: Any) -> list:
    """The argument's shape, strides (in elements) and offset, in the order DaCe pairs them with the SDFG's."""
    values = list(argument.shape)
    if hasattr(argument, "strides"):
        itemsize = getattr(argument, "itemsize", 1)  # numpy arrays give strides in bytes
        values += [stride // itemsize for stride in argument.strides]
    if hasattr(argument, "offset"):
        values += list(argument.offset)
    return values


def trivial_solution(sdfg: Any, args: dict[str, Any]) -> Optional[dict[str, Any]]:
    """Each free size/stride symbol's value when all are plain symbols equal to integers; None otherwise."""
    import sympy

    solution: dict[str, Any] = {}
    for name, argument in args.items():
        if name not in sdfg.arrays or not hasattr(argument, "shape"):
            continue
        descriptor = sdfg.arrays[name]
        expected = list(descriptor.shape) + list(descriptor.strides) + list(descriptor.offset)
        for symbolic, given in zip(expected, given_values(argument)):
            if isinstance(symbolic, (int, sympy.Integer)):
                continue  # a number: no equation (DaCe does not check it either)
            if not isinstance(symbolic, sympy.Symbol) or str(symbolic) in args:
                return None
            if isinstance(given, bool) or not isinstance(given, (int, sympy.Integer)):
                return None
            value = sympy.Integer(given)
            if solution.setdefault(str(symbolic), value) != value:
                return None  # two values: DaCe's inference raises its error
    return {name: solution[name] for name in sorted(solution)}


@contextlib.contextmanager
def fast_symbol_inference() -> Iterator[None]:
    """Within the block, DaCe's frontend infers trivially given symbols without ``sympy.solve``."""
    import importlib

    module = importlib.import_module(_PARSER_MODULE)
    original: Callable = getattr(module, _FUNCTION)

    def infer(sdfg: Any, args: dict[str, Any], exclude: Optional[set] = None) -> dict[str, Any]:
        solved = trivial_solution(sdfg, args)
        return original(sdfg, args, exclude) if solved is None else solved

    setattr(module, _FUNCTION, infer)
    try:
        yield
    finally:
        setattr(module, _FUNCTION, original)
