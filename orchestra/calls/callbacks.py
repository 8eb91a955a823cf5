"""Keeping calls in Python: callbacks from the compiled program.

DaCe's preprocessor tries to parse every function an orchestrated program
calls. A function wrapped by a decorator it does not know is left alone and
becomes a *callback*: the compiled code calls back into the Python
interpreter at that point. Halo exchanges, I/O and getters are kept in Python
this way.

A callback that returns a scalar needs a return annotation, and the variable
receiving it in orchestrated code needs one too::

    @dace_inhibitor
    def factor(self) -> float:
        return self._factor

    def __call__(self, q):
        f: float = self.factor()
        self.scale(q, f)
"""

from __future__ import annotations

import functools
from typing import Callable, TypeVar

from orchestra.observe import callback_trace

F = TypeVar("F", bound=Callable)


def dace_inhibitor(func: F) -> F:
    """Keep ``func`` in Python when it is called from orchestrated code.

    In ``Python`` mode the decorated function runs as usual; under
    orchestration every call becomes a callback from the compiled program.
    """

    @functools.wraps(func)
    def _kept_in_python(*args, **kwargs):
        trace = callback_trace.active()  # ORCHESTRA_VERIFY narrowing a difference down (observe.callback_trace)
        if trace is None:
            return func(*args, **kwargs)
        return trace.record(func, args, kwargs)

    _kept_in_python.__orchestra_callback__ = True  # type: ignore[attr-defined]
    return _kept_in_python  # type: ignore[return-value]
