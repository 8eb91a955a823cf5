"""A stencil call's arguments checked at parse time, as gt4py checks them stencil by stencil.

In ``Python`` mode gt4py refuses a call whose arrays do not fit the stencil
(``validate_args``): a field of another dtype or dimensionality, an array too
small for the frozen origin and domain plus the offsets the stencil reads at,
an array for a scalar. Under orchestration the stencil is inlined from the
argument *descriptors*, and nothing checked them: a float64 array passed for
a ``Field[np.float32]`` was computed on as it was, an int64 array for a float
field ran, and an array too small ended in a DaCe memlet error naming
internal map names. Orchestrated code refuses the arrays ``Python`` mode
refuses, with one message that names the stencil, the parameter, what is
wrong and the fix. (A number of another type for a scalar parameter is
converted, not refused: parsing sees calls a run may skip.)

:func:`check_stencil_call` first refuses a call that Python mode refuses
before gt4py sees an array (a missing argument, an unknown keyword), in the
words of Python's ``TypeError``; :func:`check_stencil_arguments` then checks
the arrays. Both run once per stencil call while the program is parsed
(never at run time, so they cost nothing per call) and raise
:class:`StencilArgumentError`. It reads gt4py's field and parameter
information from the stencil's IR (no build). Symbolic shapes (an argument
DaCe did not specialize) are not checked; DaCe checks what it can.
"""

from __future__ import annotations

import inspect
from typing import Any, Mapping, Optional, Sequence, Union

from orchestra.errors import StencilArgumentError

#: A stencil's origin as :class:`~orchestra.stencils.frozen.FrozenStencil` holds it: one (i, j, k)
#: for every field, or per field (``{"_all_": (i, j, k), "edge_w": (i, j)}``).
Origin = Union[tuple[int, ...], dict[str, tuple[int, ...]]]

#: The key of an origin mapping that gives the fields it does not name their origin.
ALL_FIELDS = "_all_"


def check_stencil_call(stencil: str, signature: inspect.Signature, args: tuple, kwargs: Mapping[str, Any],
                       origin: Origin, domain: tuple[int, ...]) -> None:
    """Refuse a call whose arguments do not bind to the stencil's parameters, as Python mode does.

    A required argument left out (a field or a scalar), a keyword the stencil
    does not have, or a parameter given twice: :class:`StencilArgumentError`
    with the words of Python mode's ``TypeError``, the stencil and the fix.
    (Unrefused, a missing scalar ended in a ``KeyError`` deep in DaCe's
    optimization.) ``args``: what DaCe passes by position (it keeps as many
    as the stencil has parameters); ``kwargs``: by name.
    """
    names = list(signature.parameters)
    where = f"stencil {stencil!r} (origin {origin}, domain {domain})"
    fix = f"call it as {stencil}({', '.join(names)}) (Python mode refuses this call too)"
    for name in kwargs:
        if name in ("origin", "domain", "validate_args"):
            raise StencilArgumentError(
                f"{where}: got multiple values for keyword argument {name!r}; a FrozenStencil's origin and "
                f"domain are given when it is made, not when it is called: {fix}"
            )
        if name not in signature.parameters:
            raise StencilArgumentError(f"{where}: got an unexpected keyword argument {name!r}; {fix}")
        if name in names[: len(args)]:
            raise StencilArgumentError(f"{where}: got multiple values for argument {name!r}; {fix}")
    given = set(names[: len(args)]) | set(kwargs)
    missing = [name for name, parameter in signature.parameters.items()
               if name not in given and parameter.default is inspect.Parameter.empty]
    if missing:
        quoted = [repr(name) for name in missing]
        listed = quoted[0] if len(quoted) == 1 else (
            f"{quoted[0]} and {quoted[1]}" if len(quoted) == 2 else f"{', '.join(quoted[:-1])}, and {quoted[-1]}")
        plural = "s" if len(missing) > 1 else ""
        raise StencilArgumentError(
            f"{where}: missing {len(missing)} required positional argument{plural}: {listed}; {fix}"
        )


def check_stencil_arguments(
    stencil: str,
    args_data: Any,
    names: Sequence[str],
    args: tuple,
    kwargs: Mapping[str, Any],
    origin: Origin,
    domain: tuple[int, ...],
) -> None:
    """Refuse a stencil call whose arguments Python mode would refuse.

    ``args_data``: gt4py's ``ModuleData`` of the stencil (``field_info``,
    ``parameter_info``, ``domain_info``); ``args``/``kwargs``: the call's
    DaCe descriptors (or constants) by position and name; ``origin``: one
    (i, j, k) or an origin per field (:func:`field_origin`).
    """
    passed = dict(zip(names, args)) | dict(kwargs)
    where = f"stencil {stencil!r} (origin {origin}, domain {domain})"
    for name, info in args_data.field_info.items():
        if info is None or _unused(info) or name not in passed:
            continue
        own_origin = field_origin(origin, name, info, where)
        _check_field(where, name, info, passed[name], own_origin, domain)
    for name, info in args_data.parameter_info.items():
        if info is None or _unused(info) or name not in passed:
            continue
        _check_parameter(where, name, info, passed[name])


def field_origin(origin: Origin, name: str, info: Any, where: str = "") -> tuple[int, ...]:
    """The origin of field ``name`` along its own spatial axes (``info.domain_ndim`` entries).

    The rules gt4py applies stencil by stencil: an origin given for the field
    itself (with an entry per spatial axis, or per axis and data dimension,
    whose data entries do not move the spatial start) is taken as it is; any
    other field gets the ``"_all_"`` origin (or the single (i, j, k) origin)
    along the axes it has (an IJ field takes i and j, a K field k); a
    mapping without ``"_all_"`` leaves it at zero (gt4py would take an
    ``__gt_origin__`` of the array, which neither gt4py storages nor the
    descriptors DaCe parses with carry). ``info`` is gt4py's ``FieldInfo``;
    an origin of the field's own with another number of entries raises
    :class:`StencilArgumentError` (gt4py stencil by stencil: ``AssertionError``).
    """
    if not isinstance(origin, Mapping):
        return _along_axes(origin, info)
    own = origin.get(name)
    if own is None:
        default = origin.get(ALL_FIELDS)
        return _along_axes(default, info) if default is not None else (0,) * info.domain_ndim
    if len(own) not in (info.domain_ndim, info.ndim):
        data = f" and {len(info.data_dims)} data dimensions" if info.data_dims else ""
        raise StencilArgumentError(
            f"{where or 'stencil'}: the origin {tuple(own)} given for field {name!r} has {len(own)} entries, "
            f"but the field has {info.domain_ndim} axes ({', '.join(info.axes)}){data}; give "
            + (f"{info.domain_ndim} or {info.ndim} entries" if info.data_dims else f"{info.domain_ndim} entries")
        )
    return tuple(own[: info.domain_ndim])


def _along_axes(origin: Sequence[int], info: Any) -> tuple[int, ...]:
    """An (i, j, k) origin restricted to the axes a field has."""
    return tuple(value for value, present in zip(origin, info.domain_mask) if present)


def _unused(info: Any) -> bool:
    from gt4py.cartesian.definitions import AccessKind

    return info.access == AccessKind.NONE


def _numpy_dtype(descriptor: Any) -> Optional[Any]:
    try:
        return descriptor.dtype.as_numpy_dtype()
    except (AttributeError, TypeError):
        return None


def _check_field(where: str, name: str, info: Any, value: Any, own_origin: tuple, domain: tuple) -> None:
    """``own_origin``: the field's origin along its spatial axes (:func:`field_origin`)."""
    import dace
    import numpy as np

    declared = f"{'x'.join(info.axes)} field of {np.dtype(info.dtype)}"
    if not isinstance(value, dace.data.Array):
        raise StencilArgumentError(
            f"{where}: argument {name!r} must be an array ({declared}), got {_describe(value)}; "
            "pass a gt4py storage or a numpy array"
        )
    dtype = _numpy_dtype(value)
    if dtype is not None and dtype != np.dtype(info.dtype):
        raise StencilArgumentError(
            f"{where}: field {name!r} is declared {declared} but the array passed has dtype {dtype} "
            f"(Python mode refuses it too); pass an array of {np.dtype(info.dtype)} "
            f"(gt4py.storage.zeros(..., dtype=np.{np.dtype(info.dtype)}))"
        )
    ndim = info.domain_ndim + len(info.data_dims)
    if len(value.shape) != ndim:
        raise StencilArgumentError(
            f"{where}: field {name!r} is declared {declared} ({ndim} dimensions) but the array passed "
            f"has {len(value.shape)} (shape {tuple(value.shape)}); pass an array with axes {', '.join(info.axes)}"
            + (f" and data dimensions {info.data_dims}" if info.data_dims else "")
        )
    mask = info.domain_mask
    spatial = [axis for axis in range(len(mask)) if mask[axis]]
    lower = [info.boundary[axis][0] for axis in spatial]
    upper = [info.boundary[axis][1] for axis in spatial]
    needed = [o + d + u for o, d, u in zip(own_origin, [domain[axis] for axis in spatial], upper)]
    shape = _concrete(value.shape[: len(spatial)])
    if any(o < low for o, low in zip(own_origin, lower)):
        raise StencilArgumentError(
            f"{where}: field {name!r} is read {lower} points before the origin along {', '.join(info.axes)}, "
            f"but the origin is {own_origin} (Python mode refuses it too); "
            "give the FrozenStencil an origin with that many halo points"
        )
    if shape is not None and any(have < need for have, need in zip(shape, needed)):
        raise StencilArgumentError(
            f"{where}: field {name!r} has shape {tuple(shape)} along {', '.join(info.axes)} but needs at least "
            f"{tuple(needed)} (origin + domain + {tuple(upper)} points read past the domain; Python mode refuses "
            "it too); pass a larger array or build the FrozenStencil with a smaller domain"
        )
    data_shape = _concrete(value.shape[len(spatial):])
    if data_shape is not None and tuple(data_shape) != tuple(info.data_dims):
        raise StencilArgumentError(
            f"{where}: field {name!r} has data dimensions {tuple(data_shape)}, declared {tuple(info.data_dims)}"
        )


def _check_parameter(where: str, name: str, info: Any, value: Any) -> None:
    """An array for a scalar parameter is refused; a number of another type is converted.

    ``Python`` mode also refuses an ``int`` for a ``float`` parameter, but
    only when the call runs; parsing sees calls a run may skip (a loop run
    zero times), and the conversion computes what the stencil means.
    """
    import dace
    import numpy as np

    if isinstance(value, dace.data.Array) and _concrete(value.shape) not in (None, [1]):
        # (DaCe holds a value computed in the program, ``twice(self.a)``, as a one-element array)
        raise StencilArgumentError(
            f"{where}: parameter {name!r} is a scalar of {np.dtype(info.dtype)}, got an array "
            f"(shape {tuple(value.shape)}); pass a number"
        )


def _concrete(shape: Sequence[Any]) -> Optional[list[int]]:
    try:
        return [int(extent) for extent in shape]
    except TypeError:
        return None


def _describe(value: Any) -> str:
    import dace

    if isinstance(value, dace.data.Scalar):
        return f"a scalar of {_numpy_dtype(value)}"
    return type(value).__name__
