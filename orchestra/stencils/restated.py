"""gt4py's frozen SDFG of a stencil restated for the call that nests it, and kept beside it for later builds.

:meth:`FrozenStencil.__sdfg__ <orchestra.stencils.frozen.FrozenStencil.__sdfg__>` hands
the parser a stencil's SDFG in two steps. The first, :func:`restate`, takes most of a
stencil's share of the parse (on the FV3-size benchmark about 0.3 s of 0.4 s per stencil,
read from gt4py's cache): a copy of gt4py's frozen SDFG with the optional fields and
dropped parameters the call passes added back, each field's horizontal bounds ended where
its reads end, and DaCe's ``convert_legacy_nested_sdfgs`` (windows moved into the memlets,
:mod:`orchestra.stencils.sdfg_contract`). The second retypes the scalars as the call passes
them (:func:`~orchestra.stencils.sdfg_contract.scalars_as_given`, cheap).

The first step depends only on the frozen SDFG (a file of gt4py's cache), the stencil's
argument data, its origin and domain, and what the call passes for the parameters the
frozen SDFG lacks (its *extras*: unused optional fields, dropped scalars). Its result is
saved in ``<frozen SDFG file>.restated/`` under a digest of all of these (the frozen file by
the digest of its bytes, the extras by their DaCe descriptors) and of orchestra's
sources and DaCe's and gt4py's versions; ``names.json`` there lists the frozen SDFG's data
and symbols, so a later build tells a call's extras without loading it. A build then reads
the restated SDFG instead of making it (an edit of one stencil restates only that one),
and the processes and waiting ranks that lower stencils ahead of a build restate them too,
for calls without extras (:meth:`FrozenStencil.lower_ahead`): that work leaves the
building process.

Whoever restated it, the SDFG a build nests is the one read back from the file, so a
program is the same whichever process restated its stencils (JSON gives a tasklet's
connectors back in another order: see :func:`orchestra.stencils.stencil_cache._as_saved`).
Where the file cannot be written the SDFG makes the same round trip through JSON in memory.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Any, Mapping, Optional

from orchestra.stencils.arguments import Origin, field_origin

log = logging.getLogger("orchestra")

NAMES_FILE = "names.json"


@dataclasses.dataclass(frozen=True)
class StencilCall:
    """What restating a stencil's frozen SDFG for one call depends on, besides that SDFG."""

    frozen_path: Path  #: gt4py's file of the frozen SDFG (origin and domain normalized)
    args_data: Any  #: gt4py's argument data of the stencil (field and parameter information)
    names: tuple[str, ...]  #: the stencil's parameters, in order
    passed: Mapping[str, Any]  #: parameter name -> what the call passes (DaCe descriptors, numbers)
    normalized: Mapping[str, Any]  #: gt4py's normalization of the call's fields and keywords
    origin: Origin  #: the stencil's own origin (per field, possibly)
    domain: tuple[int, ...]


def restate(sdfg: Any, call: StencilCall) -> Any:
    """The first step (see the module) on ``sdfg``, a copy of the frozen SDFG of the caller's own; returns it."""
    from dace.sdfg.dealias import convert_legacy_nested_sdfgs
    from gt4py.cartesian.backend.dace_stencil_object import add_optional_fields
    from gt4py.cartesian.definitions import AccessKind

    # by name: the argument data computed from gt4py's IR and the one read back list them in other orders
    fields, parameters = _by_name(call.args_data.field_info), _by_name(call.args_data.parameter_info)
    given = call.normalized
    if any(entry.access == AccessKind.NONE and name in given and name not in sdfg.arrays
           for name, entry in fields.items()) or any(
           entry.access == AccessKind.NONE and name in given and name not in sdfg.symbols
           for name, entry in parameters.items()):
        # gt4py adds the unused optional fields a call gives, to a copy (it copies whatever it is given)
        sdfg = add_optional_fields(sdfg, field_info=fields, parameter_info=parameters, **given)
    _restore_dropped_parameters(sdfg, call.names, call.passed)
    _tighten_horizontal_bounds(sdfg, fields, call.origin, call.domain)  # per field
    convert_legacy_nested_sdfgs(sdfg)  # DaCe 2's reading of nested SDFGs
    return sdfg


def _by_name(info: Mapping[str, Any]) -> dict[str, Any]:
    return dict(sorted(info.items()))


def saved_restated(call: StencilCall) -> Optional[Any]:
    """The restated SDFG of ``call`` as saved by an earlier build or lowering, or None."""
    path = _entry(call)
    return _load(path) if path is not None else None


def is_restated(call: StencilCall) -> bool:
    """Whether the restated SDFG of ``call`` is saved (without reading it)."""
    path = _entry(call)
    return path is not None and path.is_file()


def _entry(call: StencilCall) -> Optional[Path]:
    """Where the restated SDFG of ``call`` is kept (None: its key cannot be told without the frozen SDFG)."""
    stamp = _stamp(call.frozen_path)
    known = _frozen_names(_folder(call.frozen_path), stamp) if stamp else None
    key = _key(call, stamp, known) if known is not None else None
    return _folder(call.frozen_path) / f"{key}.sdfgz" if key else None


def restated_and_saved(frozen: Any, call: StencilCall) -> Any:
    """:func:`restate` ``frozen`` (a copy of the caller's own, just read), saved for later builds.

    Returns the SDFG as read back (see the module).
    """
    import dace

    stamp = _stamp(call.frozen_path)  # of the file ``frozen`` was read from
    names = set(frozen.arrays) | set(frozen.symbols)
    sdfg = restate(frozen, call)
    key = _key(call, stamp, names) if stamp else None
    folder = _folder(call.frozen_path)
    if key is not None:
        try:
            _save(folder, stamp, names, sdfg, key)
            saved = _load(folder / f"{key}.sdfgz")
            if saved is not None:
                return saved
        except OSError as error:  # a read-only gt4py cache: restated again next time
            log.debug("could not keep the restated SDFG of %s (%s)", call.frozen_path, error)
    return dace.SDFG.from_json(json.loads(json.dumps(sdfg.to_json())))


def _folder(frozen_path: Path) -> Path:
    return frozen_path.with_name(frozen_path.name + ".restated")


def _stamp(path: Path) -> Optional[str]:
    """The digest of the file's bytes: a frozen SDFG gt4py writes again is another one (a copied cache is the same)."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def _frozen_names(folder: Path, stamp: str) -> Optional[set[str]]:
    """The data and symbol names of the frozen SDFG of ``stamp``, if saved for it."""
    try:
        saved = json.loads((folder / NAMES_FILE).read_text())
    except (OSError, ValueError):
        return None
    return set(saved["names"]) if saved.get("frozen") == stamp else None


def _key(call: StencilCall, stamp: str, frozen_names: set[str]) -> Optional[str]:
    """The digest of everything :func:`restate` reads (None: an extra DaCe cannot describe exactly)."""
    from orchestra.key.inputs import orchestra_sources_digest
    from orchestra.key.argument_descriptions import Undescribable, describe_argument
    from orchestra.stencils.stencil_cache import toolchain_stamp

    absent = [name for name in call.names if name not in frozen_names]
    try:
        extras = {name: [describe_argument(call.passed[name]) if name in call.passed else None,
                         describe_argument(call.normalized[name]) if name in call.normalized else None]
                  for name in absent}
    except Undescribable:
        return None
    described = {
        "frozen": [call.frozen_path.name, stamp], "origin": repr(call.origin), "domain": list(call.domain),
        "fields": repr(_by_name(call.args_data.field_info)),
        "parameters": repr(_by_name(call.args_data.parameter_info)),
        "names": list(call.names), "extras": extras,
        "orchestra": orchestra_sources_digest(), "toolchain": toolchain_stamp(),
    }
    return hashlib.sha256(json.dumps(described, sort_keys=True, default=str).encode()).hexdigest()[:32]


def _save(folder: Path, stamp: str, names: set[str], sdfg: Any, key: str) -> None:
    """Write the restated SDFG and the frozen SDFG's names, each atomically (equal writers may race)."""
    from orchestra.cache.durable import replace_atomically

    folder.mkdir(exist_ok=True)
    target = folder / f"{key}.sdfgz"
    temporary = folder / f".{key}.{os.getpid()}.sdfgz"
    try:
        sdfg.save(str(temporary), compress=True)
        os.replace(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)
    if _frozen_names(folder, stamp) is None:
        replace_atomically(folder / NAMES_FILE, json.dumps({"frozen": stamp, "names": sorted(names)}))


def _load(path: Path) -> Optional[Any]:
    """The SDFG in ``path``; None if there is none, or it does not load (then it is removed)."""
    import dace

    if not path.is_file():
        return None
    try:
        return dace.SDFG.from_file(str(path))
    except Exception as error:  # noqa: BLE001 - a damaged file is restated again
        log.warning("the restated stencil SDFG %s does not load (%s: %s); restated again",
                    path, type(error).__name__, str(error)[:200])
        path.unlink(missing_ok=True)
        return None


def _restore_dropped_parameters(sdfg: Any, names: tuple[str, ...], passed: Mapping[str, Any]) -> None:
    """Give back the parameters gt4py left out of a stencil's SDFG because the stencil never reads them.

    A scalar never read, or a field read only in a region outside the domain,
    is dropped from the SDFG's data while staying in its signature; DaCe then
    cannot connect the call's argument (``KeyError``). Each comes back as an
    unused, non-transient container described like the argument passed.
    """
    import dace
    import numpy as np

    for name in names:
        if name in sdfg.arrays or name in sdfg.symbols or name not in passed:
            continue
        value = passed[name]
        if isinstance(value, dace.data.Data):
            descriptor = copy.deepcopy(value)
            descriptor.transient = False
            sdfg.add_datadesc(name, descriptor)
        elif isinstance(value, (bool, int, float, complex, np.number)):
            sdfg.add_scalar(name, dace.dtypes.typeclass(type(value)))


def _tighten_horizontal_bounds(sdfg: Any, field_info: Mapping[str, Any], origin: Origin, domain: Any) -> None:
    """End each field's I/J memlet where the stencil's reads end, not where gt4py's lowering says.

    gt4py's orchestration wrapper gives a field the range ``[origin - lower,
    origin - lower + size)``, with ``lower`` from the field's boundary (which
    knows horizontal regions) but ``size`` from an extent that does not: a
    read at an offset inside a region (``f[0, -2, 0]`` in
    ``region[:, J[0] + 1]``) widens the size on both sides, so the range ends
    past the array and the orchestrated build fails although Python mode runs
    (reproducer: ``tests/fusion/reproducers/random_program_13``). The start is
    right (the generated code indexes from it), so only the end is moved back
    to ``origin + domain + upper``, the boundary Python mode checks arguments
    against; a range that still ends past the array is left for DaCe to refuse.
    Each field is moved by its own origin (:func:`field_origin`).
    """
    from dace import subsets

    if not isinstance(origin, Mapping) and len(origin) != 3:
        return
    for state in sdfg.states():
        for edge in state.edges():
            info = field_info.get(edge.data.data) if edge.data.data else None
            if info is None or tuple(info.axes[:2]) != ("I", "J") or not isinstance(edge.data.subset, subsets.Range):
                continue
            own_origin = field_origin(origin, edge.data.data, info)
            ranges = list(edge.data.subset.ranges)
            for axis in (0, 1):
                begin, end, step = ranges[axis]
                upper = max(0, info.boundary[axis][1])
                try:
                    needed = own_origin[axis] + domain[axis] + upper - 1
                    if int(end) > needed:
                        ranges[axis] = (begin, needed, step)
                except TypeError:
                    continue  # symbolic: left as it is
            edge.data.subset = subsets.Range(ranges)
