"""DaCe's trivial-condition test evaluates each condition once, not once per truth value asked about.

DaCe's ``LiftTrivialIf`` (part of ``simplify``, which gt4py runs on every
stencil it lowers) asks of each branch condition whether it is provably
true and whether it is provably false: ``_trivial_cond_check_cached(code,
True)`` and ``(code, False)``, memoized on both arguments. Each question
parses the condition into sympy, tries to evaluate it, and, when it does not
reduce to a constant (a region's ``__i < 3``: nearly always), rewrites it as
arithmetic and asks sympy to simplify it. The work does not depend on the
truth value asked about, only the final comparison does; for a condition
that is not constant, both questions run it in full. Lowering one of the
benchmark's FV3-style stencils spent about 13% of its time there (2.2 of
16.9 s for five stencils, under cProfile).

:func:`one_evaluation_per_condition` installs, for the duration of a
``with`` block, a function with DaCe's signature and answers that evaluates
a condition once (:func:`constant_truth`, memoized on the condition alone)
and compares. It is installed only over the DaCe function it was written for
(recognised by the names its code uses); another DaCe's is left alone.
"""

from __future__ import annotations

import contextlib
import functools
import re
from typing import Any, Optional

from orchestra.toolchain.stand_in import standing_in

#: What DaCe's function uses, checked before it is replaced: the version this was written for.
_REPLACES_NAMES = frozenset({"pystr_to_symbolic", "evaluate", "SymExpr", "simplify", "symstr", "split"})

#: Python's boolean words and literals as 0/1 arithmetic (DaCe's second attempt).
_AS_ARITHMETIC = {"True": "1", "False": "0", "and": "*", "or": "+"}
_TOKENS = re.compile(r"(\s+|[()\[\]])")


def _constant(value: Any) -> Optional[bool]:
    import sympy

    if isinstance(value, (bool, int, sympy.Integer)) or value in (sympy.true, sympy.false):
        return bool(value)
    return None


def _evaluated(code: str) -> Any:
    from dace import symbolic

    return symbolic.evaluate(symbolic.pystr_to_symbolic(code), symbols={})


def _evaluated_as_arithmetic(code: str) -> Any:
    from dace import symbolic

    words = (_AS_ARITHMETIC.get(token.strip(), token.strip()) for token in _TOKENS.split(code))
    simplified = symbolic.SymExpr(" ".join(words).strip()).simplify()
    return symbolic.evaluate(symbolic.SymExpr(symbolic.symstr(simplified)), symbols={})


@functools.lru_cache(maxsize=16384)
def constant_truth(code: str) -> Optional[bool]:
    """The truth value ``code`` provably has (True or False), or None: DaCe's two attempts, in its order."""
    for attempt in (_evaluated, _evaluated_as_arithmetic):
        try:
            truth = _constant(attempt(code))
        except Exception:  # DaCe's own test treats a failure as "not provably constant"
            continue
        if truth is not None:
            return truth
    return None


def _trivial_condition(code_string: str, val: bool) -> bool:
    """DaCe's ``_trivial_cond_check_cached``: whether ``code_string`` provably reduces to the constant ``val``."""
    return constant_truth(code_string) is val


def replaceable(function: Any) -> bool:
    """Whether ``function`` is the DaCe function :func:`_trivial_condition` stands for."""
    function = getattr(function, "__wrapped__", function)  # DaCe's is lru_cache'd
    code = getattr(function, "__code__", None)
    if code is None or code.co_argcount != 2:
        return False
    names = set(code.co_names) | {name for const in code.co_consts if hasattr(const, "co_names") for name in const.co_names}
    return _REPLACES_NAMES <= names


def one_evaluation_per_condition() -> contextlib.AbstractContextManager:
    """Inside the block, DaCe's ``LiftTrivialIf`` evaluates each condition once for both truth values."""
    from dace.transformation.passes import lift_trivial_if

    return standing_in(lift_trivial_if, "_trivial_cond_check_cached", _trivial_condition, replaceable)
