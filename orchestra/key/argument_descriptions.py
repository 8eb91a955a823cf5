"""Exact descriptions of what DaCe's frontend hands an SDFG-convertible for one argument.

Two calls whose arguments have equal descriptions give DaCe's frontend the
same input for them: data descriptors by their full JSON (dtype, shape,
strides, storage, offsets), symbols by name and type, folded numbers by type
and ``repr``. Used to reuse a component's parse within one build
(:mod:`orchestra.pipeline.parse_reuse`) and to key a stencil's restated SDFG
across builds (:mod:`orchestra.stencils.restated`).
"""

from __future__ import annotations

import json
from typing import Any


class Undescribable(Exception):
    """An argument whose description would not decide the parse exactly."""


def describe_argument(value: Any) -> Any:
    """A description of what DaCe's frontend hands a nested ``__sdfg__`` for one argument.

    Data descriptors by their full JSON (dtype, shape, strides, storage,
    offsets), symbols by name and type, folded numbers by type and ``repr``
    (exact for floats). Anything else raises :class:`Undescribable`.
    """
    import numpy as np
    import sympy
    from dace import data

    if isinstance(value, data.Data):
        return ("data", json.dumps(value.to_json(), sort_keys=True, default=str))
    if value is None or isinstance(value, (bool, int, float, complex, np.number, np.bool_)):
        return (type(value).__qualname__, repr(value))
    if isinstance(value, sympy.Basic):
        return ("symbolic", type(value).__qualname__, str(value), repr(getattr(value, "dtype", None)))
    raise Undescribable(type(value).__qualname__)
