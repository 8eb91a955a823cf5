"""Stencils with a frozen origin and domain, callable alone or from orchestrated code.

Under orchestration a stencil's ``origin`` and ``domain`` must be plain
Python values when the program is parsed: they decide the generated loops.
:class:`FrozenStencil` fixes them at construction, so model code calls
``self.update(h, flux_x)`` the same way in every mode.

Example (numpy backend, runs anywhere)::

    from gt4py.cartesian.gtscript import PARALLEL, Field, computation, interval

    def double(a: Field[float], b: Field[float]):
        with computation(PARALLEL), interval(...):
            b = 2.0 * a

    stencil = FrozenStencil(double, backend="numpy", origin=(1, 1, 0), domain=(4, 4, 1))
    stencil(a, b)

As in gt4py, ``origin`` may also be given per field: ``{"_all_": (3, 3, 0),
"edge_w": (0, 3)}`` starts ``edge_w`` (an IJ field) at (0, 3) and every
other field at (3, 3, 0) along the axes it has.
"""

from __future__ import annotations

import inspect
import types
from typing import Any, Callable, Mapping, Optional, Sequence, Union

from orchestra.toolchain.line_info import cheap_line_info
from orchestra.stencils import compile_ahead
from orchestra.stencils.python_body import body_program
from orchestra.stencils.arguments import ALL_FIELDS, Origin
from orchestra.stencils.restated import StencilCall, is_restated, restated_and_saved, saved_restated
from orchestra.stencils.stencil_cache import (
    argument_data,
    frozen_sdfg,
    frozen_sdfg_copy,
    frozen_sdfg_path,
    frozen_sdfg_saved,
    note_lowering,
    saved_argument_data,
    stamp_lowering,
    stencil_lock,
)
from orchestra.toolchain import prepare_gt4py

class FrozenStencil:
    """A gt4py stencil bound to one origin and domain.

    Args:
        definition: the ``gtscript`` stencil definition function.
        backend: a gt4py backend name (``numpy``, ``gt:cpu_kfirst``, ``dace:cpu``...).
        origin: the compute-domain start in each array, (i, j, k); or, as gt4py takes it,
            a mapping of field names to their own origins (as many entries as the field has
            axes, or axes and data dimensions) with an optional ``"_all_"`` (i, j, k) for the
            fields it does not name.
        domain: the compute-domain size, (ni, nj, nk).
        externals: compile-time constants of the stencil (region offsets...).
        validate_args: let gt4py check arguments on each stencil-by-stencil call.
    """

    def __init__(
        self,
        definition: Callable,
        *,
        backend: str,
        origin: Union[Sequence[int], Mapping[str, Sequence[int]]],
        domain: Sequence[int],
        externals: Optional[Mapping[str, Any]] = None,
        validate_args: bool = True,
        name: Optional[str] = None,
    ) -> None:
        prepare_gt4py()
        from gt4py.cartesian import gtscript

        prepare_gt4py()  # again, now that gt4py's backends are loaded (see toolchain)
        _resolve_string_annotations(definition)
        self.definition = definition
        self.backend = backend
        self.origin: Origin = _normalize_origin(self.name, origin)
        self.domain = tuple(int(value) for value in domain)
        self.externals = dict(externals or {})
        self.validate_args = validate_args
        self._gt_name = name
        options = {"name": name} if name else {}
        if backend.startswith("dace"):
            # A lazy stencil yields its SDFG for orchestration without building a Python
            # extension (it builds only if called stencil by stencil), and nothing of gt4py's
            # IR is computed here: a rank that loads a build never needs it, the building rank
            # lowers the stencil when it parses. Creating it writes nothing: no cache lock.
            self.stencil_object = gtscript.lazy_stencil(
                backend=backend, definition=_own_copy(definition), externals=self.externals, check_syntax=False,
                **options,
            )
        else:  # built now; gt4py's build holds the stencil's lock (orchestra.toolchain.gt4py_builds)
            self.stencil_object = gtscript.stencil(
                backend=backend, definition=definition, externals=self.externals, **options
            )
        # the built stencil object, once there (a lazy stencil builds on its first call)
        self._callable: Optional[Callable] = None if backend.startswith("dace") else self.stencil_object
        if self._callable is None:  # compiled ahead by workers once the process runs stencils one by one
            compile_ahead.register(self)

    @property
    def name(self) -> str:
        return getattr(self.definition, "__name__", "stencil")

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        if self._callable is None:
            program = body_program(self)  # in a split build's Python body: a one-stencil program
            if program is not None:
                return program(*args, **kwargs)
            compile_ahead.start()  # the stencils made so far, and later ones, compile in workers meanwhile
            with stencil_lock(self.stencil_object.builder), cheap_line_info():
                self._callable = self.stencil_object.implementation
        self._callable(
            *args,
            origin=self.origin,
            domain=self.domain,
            validate_args=self.validate_args,
            **kwargs,
        )

    def build_identity(self) -> dict[str, Any]:
        """What makes this stencil's generated code unique (enters the cache key)."""
        return {
            "stencil": f"{self.definition.__module__}.{self.definition.__qualname__}",
            "gt_id": self._gt_id(),
            "backend": self.backend,
            "origin": _canonical_origin(self.origin),
            "domain": list(self.domain),
        }

    def _gt_id(self) -> str:
        builder = getattr(self.stencil_object, "builder", None)
        if builder is not None:  # lazy stencil: gt4py's content id of definition + externals + options
            return str(builder.stencil_id.version)
        return str(getattr(self.stencil_object, "_gt_id_", ""))

    # --- DaCe's SDFGConvertible protocol: inlined when called from orchestrated code
    def _require_dace_backend(self) -> None:
        if not self.backend.startswith("dace"):
            from orchestra.errors import ConfigurationError

            raise ConfigurationError(
                f"stencil {self.name!r} is built for backend {self.backend!r}, but orchestrated code inlines "
                "only stencils of a DaCe backend; build it with the DaceConfig's backend "
                "(FrozenStencil(..., backend=config.backend))"
            )

    def __sdfg__(self, *args: Any, **kwargs: Any):
        from gt4py.cartesian.backend.dace_stencil_object import DaCeStencilObject

        from orchestra.stencils.arguments import check_stencil_arguments, check_stencil_call
        from orchestra.stencils.sdfg_contract import scalars_as_given

        self._require_dace_backend()
        check_stencil_call(self.name, inspect.signature(self.definition), args, kwargs, self.origin, self.domain)
        builder = self.stencil_object.builder
        names = self.__sdfg_signature__()[0]
        passed = dict(zip(names, args)) | kwargs
        with stencil_lock(builder):
            # gt4py's field and parameter information: saved beside gt4py's files, or from the IR
            try:
                args_data = argument_data(builder, names)
            except RuntimeError as error:  # gt4py's API signature differs from the definition's parameters
                raise RuntimeError(f"stencil {self.name!r}: {error}") from None
            # refuse, while parsing, the arrays Python mode would refuse
            check_stencil_arguments(self.name, args_data, names, args, kwargs, self.origin, self.domain)
            normalized = DaCeStencilObject.normalize_arg_fields(
                *args,
                backend=self.backend,
                arg_names=names,
                domain_info=args_data.domain_info,
                field_info=args_data.field_info,
                origin=self.origin,
                domain=self.domain,
                **kwargs,
            )
            origin, domain = normalized["origin"], normalized["domain"]
            call = StencilCall(frozen_sdfg_path(builder, origin, domain), args_data, tuple(names), passed,
                               normalized, self.origin, self.domain)
            # gt4py's frozen SDFG: from its cache when there (lowered earlier, or ahead by a waiting rank),
            # restated for this call by an earlier build or lowering when that is saved too
            found = frozen_sdfg_saved(builder, origin, domain)
            sdfg = saved_restated(call) if found else None
            note_lowering(found=found, restated=sdfg is not None)
            if sdfg is not None:
                stamp_lowering(builder)  # as reading the frozen SDFG would
            frozen = frozen_sdfg_copy(builder, origin, domain) if sdfg is None else None
        if sdfg is None:
            sdfg = restated_and_saved(frozen, call)
        scalars_as_given(sdfg, passed)  # DaCe 2 nests a scalar as the caller's: converted on entry
        return sdfg

    def lower_ahead(self) -> bool:
        """Put this stencil's SDFG for its origin and domain into gt4py's cache, for a build to come.

        What a building rank's :meth:`__sdfg__` then only reads: gt4py's
        frozen SDFG and the argument data. Returns False when both were there
        (nothing computed) or the backend is not DaCe's. Another rank's build
        may lower the same stencil at the same time: the stencil's lock makes
        one of them wait and then find it done.
        """
        if not self.backend.startswith("dace"):
            return False
        builder = self.stencil_object.builder
        with stencil_lock(builder):
            args_data = argument_data(builder, self.__sdfg_signature__()[0])
            if self._frozen_saved(args_data):
                return False
            frozen_sdfg(builder, _normalized_origin(self.origin, args_data.field_info), self.domain)  # saved; no copy
        return True

    def restate_ahead(self) -> bool:
        """Keep this stencil's SDFG restated for a call that passes nothing its frozen SDFG lacks.

        (:mod:`orchestra.stencils.restated`; lowered first if it is not.) A
        build's :meth:`__sdfg__` then reads it. Returns False when it was kept
        already (nothing computed) or the backend is not DaCe's.
        """
        if not self.backend.startswith("dace"):
            return False
        builder = self.stencil_object.builder
        names = tuple(self.__sdfg_signature__()[0])
        with stencil_lock(builder):
            args_data = argument_data(builder, list(names))
            origin = _normalized_origin(self.origin, args_data.field_info)
            call = StencilCall(frozen_sdfg_path(builder, origin, self.domain), args_data, names, {}, {},
                               self.origin, self.domain)
            if self._frozen_saved(args_data) and is_restated(call):
                return False
            frozen = frozen_sdfg_copy(builder, origin, self.domain)  # lowered and saved if it was not
        restated_and_saved(frozen, call)
        return True

    def is_lowered(self) -> bool:
        """Whether gt4py's cache holds this stencil's frozen SDFG and argument data (never computes the IR)."""
        if not self.backend.startswith("dace"):
            return True
        args_data = saved_argument_data(self.stencil_object.builder, self.__sdfg_signature__()[0])
        return args_data is not None and self._frozen_saved(args_data)

    def _frozen_saved(self, args_data: Any) -> bool:
        """Whether gt4py's cache holds this stencil's frozen SDFG, lowered by this DaCe and gt4py (``args_data``: for the origins)."""
        origin = _normalized_origin(self.origin, args_data.field_info)
        return frozen_sdfg_saved(self.stencil_object.builder, origin, self.domain)

    def lowering_job(self) -> dict[str, Any]:
        """What another process needs to make this stencil again and lower it (picklable if the definition is)."""
        return {
            "definition": self.definition, "backend": self.backend, "origin": self.origin, "domain": self.domain,
            "externals": self.externals, "name": self._gt_name,
        }

    @classmethod
    def from_lowering_job(cls, job: Mapping[str, Any]) -> "FrozenStencil":
        """The stencil :meth:`lowering_job` describes, made again (in a helper process)."""
        return cls(job["definition"], backend=job["backend"], origin=job["origin"], domain=job["domain"],
                   externals=job["externals"], name=job["name"])

    def __sdfg_signature__(self) -> tuple[list[str], list[str]]:
        """The stencil's parameters in order (gt4py's API signature is the definition's), no constants.

        Read from the definition, not from gt4py's IR: DaCe asks for it while
        resolving closures on every rank, and only a building rank needs the IR.
        """
        self._require_dace_backend()
        return list(inspect.signature(self.definition).parameters), []

    def __sdfg_closure__(self, *args: Any, **kwargs: Any) -> dict:
        return {}

    def closure_resolver(self, constant_args, given_args, parent_closure=None):
        from dace.frontend.python.common import SDFGClosure

        return SDFGClosure()

    def __repr__(self) -> str:
        return f"FrozenStencil({self.name}, backend={self.backend!r}, origin={self.origin}, domain={self.domain})"


def _normalize_origin(stencil: str, origin: Any) -> Origin:
    """``origin`` as a tuple of ints, or a dict of field names to tuples of ints.

    Raises :class:`~orchestra.errors.ConfigurationError`, naming the stencil,
    for a mapping gt4py could not use: a key that is not a string, a value
    that is not a sequence of integers, an ``"_all_"`` without three entries.
    """
    from orchestra.errors import ConfigurationError

    if not isinstance(origin, Mapping):
        return _origin_entries(stencil, "origin", origin)
    normalized: dict[str, tuple[int, ...]] = {}
    for key, value in origin.items():
        if not isinstance(key, str):
            raise ConfigurationError(
                f"stencil {stencil!r}: origin key {key!r} is not a field name; an origin mapping maps field "
                f"names (or {ALL_FIELDS!r}) to origins, e.g. {{{ALL_FIELDS!r}: (3, 3, 0), 'edge_w': (0, 3)}}"
            )
        normalized[key] = _origin_entries(stencil, f"origin[{key!r}]", value)
    everywhere = normalized.get(ALL_FIELDS)
    if everywhere is not None and len(everywhere) != 3:
        raise ConfigurationError(
            f"stencil {stencil!r}: origin[{ALL_FIELDS!r}] is {everywhere}; it needs three entries (i, j, k)"
        )
    return normalized


def _origin_entries(stencil: str, what: str, value: Any) -> tuple[int, ...]:
    """One origin as a tuple of ints; a clear error for anything else (a number, a string, ``None``)."""
    from orchestra.errors import ConfigurationError

    try:
        if isinstance(value, (str, bytes, Mapping)):
            raise TypeError(type(value).__name__)
        return tuple(int(entry) for entry in value)
    except (TypeError, ValueError) as error:
        raise ConfigurationError(
            f"stencil {stencil!r}: {what} must be a sequence of integers, got {value!r} ({error}); give a tuple "
            f"such as (3, 3, 0), or a mapping of field names to tuples with an optional {ALL_FIELDS!r} default"
        ) from None


def _normalized_origin(origin: Origin, field_info: Mapping[str, Any]) -> dict[str, tuple[int, ...]]:
    """The origin of every field as gt4py normalizes it for a call whose arrays carry no origin of their own."""
    from gt4py.cartesian.backend.dace_stencil_object import DaCeStencilObject

    return DaCeStencilObject._normalize_origins({name: None for name in field_info}, field_info, origin)


def _canonical_origin(origin: Origin) -> Any:
    """The origin as the cache key holds it: a list, or a dict of lists sorted by field name."""
    if isinstance(origin, Mapping):
        return {name: list(origin[name]) for name in sorted(origin)}
    return list(origin)


def _resolve_string_annotations(definition: Callable) -> None:
    """Evaluate postponed (string) annotations of a stencil definition in its module.

    gt4py's lazy stencils read ``__annotations__`` as they are, so a module
    with ``from __future__ import annotations`` would hand them strings.
    """
    annotations = getattr(definition, "__annotations__", {})
    for name, annotation in list(annotations.items()):
        if isinstance(annotation, str):
            annotations[name] = eval(annotation, definition.__globals__)  # noqa: S307 (module's own names)


def _own_copy(definition: Callable) -> Callable:
    """A copy of a stencil definition for one lazy stencil, so that its externals stay its own.

    gt4py keeps what its frontend made of a definition (the annotated syntax
    tree, the externals it resolved) on the function object, and a lazy stencil
    reads it there when it is lowered. Two stencils of one definition with
    different externals (one corner-fill definition built with
    ``fill_corners_x`` and with ``_y``) overwrote each other's: the first
    failed with gt4py's ``KeyError: 'ast'``. A copy shares the code, source,
    name and annotations (gt4py's content id is unchanged) but not that state.
    """
    if not isinstance(definition, types.FunctionType):
        return definition
    duplicate = types.FunctionType(definition.__code__, definition.__globals__, definition.__name__,
                                  definition.__defaults__, definition.__closure__)
    duplicate.__kwdefaults__ = definition.__kwdefaults__
    duplicate.__qualname__, duplicate.__module__ = definition.__qualname__, definition.__module__
    duplicate.__doc__ = definition.__doc__
    duplicate.__annotations__ = dict(definition.__annotations__)
    return duplicate
