"""orchestra's files beside one stencil in gt4py's cache: its lock, its argument data, its lowering.

gt4py keeps, per stencil (its content id: definition, externals, backend
options), a folder of generated files; for a DaCe backend these include the
stencil's SDFG and one *frozen* SDFG per origin and domain. Producing the
first costs seconds per stencil (schedule tree, DaCe's simplify), and the
frozen ones need gt4py's IR of the stencil (frontend and analysis passes,
seconds more) for the field information that decides each field's origin.

This module lets any rank produce them ahead of a build and lets the
building rank use them without computing the IR again:

* :func:`stencil_lock`: one exclusive file lock per stencil, so ranks lower
  *different* stencils at once (gt4py writes its files without locking);
* :func:`argument_data`: gt4py's field, parameter and domain information of
  the stencil, read from a JSON file beside gt4py's files, or computed from
  the IR and saved there (atomically; a file that does not parse, describes
  other parameters or does not round-trip is ignored and replaced);
* :func:`saved_argument_data`: the same, only if saved (for a cheap "is it lowered?");
* :func:`frozen_sdfg_path`: where gt4py keeps the frozen SDFG of one origin
  and domain; :func:`frozen_sdfg_saved` tells a rank, without the IR, that
  it is there and lowered by the DaCe and gt4py of this process;
* :func:`frozen_sdfg`: that SDFG, from gt4py's cache or lowered; a cached
  SDFG file that does not load (truncated, damaged) is a miss: it is removed
  and the stencil lowered again, with one warning. SDFG files lowered by
  another DaCe or gt4py (an upgrade keeps gt4py's content id, which does not
  hash them) are removed and lowered again: a stamp beside them names the
  versions that wrote them (files gt4py wrote itself, unstamped, count as
  this toolchain's when newer than both packages' installation);
* :func:`lowering_tally`: how many stencils a parse found lowered and how
  many it lowered itself (the builder's log line).

The files are gt4py's cache's, not orchestra's build cache: they are keyed by
gt4py's content id and removed with gt4py's cache (``.gt_cache_root``).
"""

from __future__ import annotations

import collections
import contextlib
import copy
import contextvars
import json
import logging
from pathlib import Path
from typing import Any, Iterator, Optional

from orchestra.cache.durable import replace_atomically
from orchestra.toolchain.gt4py_builds import stencil_build_lock
from orchestra.toolchain.line_info import cheap_line_info

log = logging.getLogger("orchestra")

#: Version of the argument-data file; a file of another version is recomputed.
FORMAT = 1


def _stem(builder: Any) -> Path:
    """gt4py's module path of the stencil without its suffix: every file of it starts so."""
    return Path(builder.module_path).with_suffix("")


@contextlib.contextmanager
def stencil_lock(builder: Any) -> Iterator[None]:
    """Hold the exclusive lock of one stencil's files in gt4py's cache (any origin and domain).

    The lock gt4py's builds of the stencil hold too (:mod:`orchestra.toolchain.gt4py_builds`); re-entrant in a thread.
    """
    with stencil_build_lock(builder):
        yield


def arguments_path(builder: Any) -> Path:
    """The JSON file of the stencil's argument data, beside gt4py's files."""
    return Path(f"{_stem(builder)}_orchestra_arguments.json")


def frozen_sdfg_path(builder: Any, origin: dict[str, tuple[int, ...]], domain: tuple[int, ...]) -> Path:
    """gt4py's file of the stencil's SDFG frozen to ``origin`` (normalized, per field) and ``domain``."""
    from gt4py.cartesian.utils import shash

    return Path(f"{_stem(builder)}_{shash(origin, domain)}.sdfgz")


def lowering_stamp_path(builder: Any) -> Path:
    """The file naming the DaCe and gt4py versions that lowered the stencil's SDFG files."""
    return Path(f"{_stem(builder)}_orchestra_lowered_by.txt")


def toolchain_stamp() -> str:
    import dace
    import gt4py

    return f"dace {dace.__version__}, gt4py {gt4py.__version__}"


def _stamp(builder: Any) -> Optional[str]:
    try:
        return lowering_stamp_path(builder).read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None


def _lowered_by_this_toolchain(builder: Any) -> bool:
    """Stamped with this DaCe and gt4py; or not stamped, every SDFG file written since they were installed.

    gt4py writes a stencil's SDFG itself when the stencil runs stencil by
    stencil (no stamp): such a file, newer than both packages, is this
    toolchain's; an older unstamped one may be another's (an upgrade).
    """
    stamp = _stamp(builder)
    if stamp is not None:
        return stamp == toolchain_stamp()
    import dace
    import gt4py

    installed = max(Path(dace.__file__).stat().st_mtime, Path(gt4py.__file__).stat().st_mtime)
    try:
        return all(path.stat().st_mtime > installed for path in _sdfg_files(builder))
    except OSError:  # removed meanwhile
        return False


def _sdfg_files(builder: Any) -> list[Path]:
    """The stencil's SDFG files in gt4py's cache: its own and every frozen one."""
    stem = _stem(builder)
    return sorted(stem.parent.glob(f"{stem.name}.sdfgz")) + sorted(stem.parent.glob(f"{stem.name}_*.sdfgz"))


def frozen_sdfg_saved(builder: Any, origin: dict[str, tuple[int, ...]], domain: tuple[int, ...]) -> bool:
    """Whether gt4py's cache holds the frozen SDFG of ``origin`` and ``domain``, lowered by this DaCe and gt4py."""
    return frozen_sdfg_path(builder, origin, domain).exists() and _lowered_by_this_toolchain(builder)


def frozen_sdfg(builder: Any, origin: dict[str, tuple[int, ...]], domain: tuple[int, ...]) -> Any:
    """gt4py's frozen SDFG of the stencil (its own object: do not change it); call it holding :func:`stencil_lock`.

    gt4py reads its cached SDFG files without checking them; if that fails
    and one of the stencil's files (its SDFG, or the frozen one of this
    origin and domain) does not load, the file is removed, forgotten by
    gt4py, and the stencil lowered again. Files not stamped as lowered by
    this DaCe and gt4py are removed first (a file from another DaCe may load
    and then fail, or differ, in DaCe's passes).
    """
    if not _lowered_by_this_toolchain(builder):
        _remove_sdfg_files(builder, "not stamped as lowered by " + toolchain_stamp())
    path = frozen_sdfg_path(builder, origin, domain)
    lowered_here = not path.exists()
    with cheap_line_info():
        sdfg = _frozen_sdfg(builder, origin, domain)
    if lowered_here and path.exists():
        sdfg = _as_saved(sdfg, path)
    stamp_lowering(builder)
    return sdfg


def frozen_sdfg_copy(builder: Any, origin: dict[str, tuple[int, ...]], domain: tuple[int, ...]) -> Any:
    """A copy of gt4py's frozen SDFG that the caller may change; call it holding :func:`stencil_lock`.

    Read from gt4py's file when gt4py holds the SDFG in no memory (a build
    reads most stencils once: one read, no copy of it), else copied from the
    object :func:`frozen_sdfg` gives (which also lowers it, or replaces a file
    that does not load).
    """
    from gt4py.cartesian.backend.dace_backend import SDFGManager

    path = frozen_sdfg_path(builder, origin, domain)
    if path not in SDFGManager._loaded_sdfgs and str(path) not in SDFGManager._loaded_sdfgs \
            and frozen_sdfg_saved(builder, origin, domain):
        own = _read(path)
        if own is not None:
            stamp_lowering(builder)
            return own
    return copy.deepcopy(frozen_sdfg(builder, origin, domain))


def stamp_lowering(builder: Any) -> None:
    """Name this DaCe and gt4py in the stencil's stamp file, if it names others or is missing."""
    if _stamp(builder) != toolchain_stamp():
        try:
            replace_atomically(lowering_stamp_path(builder), toolchain_stamp() + "\n")
        except OSError as error:  # a read-only gt4py cache: lowered again next time
            log.debug("could not save %s (%s)", lowering_stamp_path(builder), error)


def _remove_sdfg_files(builder: Any, why: str) -> None:
    """Remove the stencil's SDFG files from gt4py's cache and from gt4py's memory of them."""
    from gt4py.cartesian.backend.dace_backend import SDFGManager

    stale = _sdfg_files(builder)
    if stale:
        log.info("removing %d SDFG file(s) of %s from gt4py's cache: %s", len(stale), _stem(builder).name, why)
    for path in stale:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        SDFGManager._loaded_sdfgs.pop(path, None)
        SDFGManager._loaded_sdfgs.pop(str(path), None)


def _as_saved(sdfg: Any, path: Path) -> Any:
    """The SDFG as its file holds it, in gt4py's memory in place of ``sdfg``: what a build gets from any lowerer.

    gt4py keeps the SDFG it lowered in memory and saves a copy; a build that
    finds the stencil lowered by another process reads the copy, whose
    connectors come back in another order (the generated code declares a
    tasklet's inputs in that order). Reading the file here too makes the
    generated code the same whoever lowered the stencil
    (``tests/distributed/test_mpi_build.py`` compares the two).
    """
    import dace
    from gt4py.cartesian.backend.dace_backend import SDFGManager

    saved = dace.SDFG.from_file(str(path))
    for key, value in list(SDFGManager._loaded_sdfgs.items()):
        if value is sdfg:
            SDFGManager._loaded_sdfgs[key] = saved
    return saved


def _frozen_sdfg(builder: Any, origin: dict[str, tuple[int, ...]], domain: tuple[int, ...]) -> Any:
    from gt4py.cartesian.backend.dace_backend import SDFGManager

    try:
        return SDFGManager(builder)._frozen_sdfg(origin=origin, domain=domain)
    except Exception as error:
        damaged = [path for path in (_stem(builder).with_suffix(".sdfgz"), frozen_sdfg_path(builder, origin, domain))
                   if path.exists() and not _loads(path)]
        if not damaged:
            raise
        log.warning(
            "gt4py's cached SDFG %s does not load (%s: %s); removed, the stencil is lowered again",
            ", ".join(str(path) for path in damaged), type(error).__name__, str(error)[:200],
        )
        for path in damaged:
            path.unlink()
            SDFGManager._loaded_sdfgs.pop(path, None)
            SDFGManager._loaded_sdfgs.pop(str(path), None)
        return SDFGManager(builder)._frozen_sdfg(origin=origin, domain=domain)


def _loads(path: Path) -> bool:
    return _read(path) is not None


def _read(path: Path) -> Optional[Any]:
    """The SDFG in ``path``, or None if it does not load."""
    import dace

    try:
        return dace.SDFG.from_file(str(path))
    except Exception:
        return None


_tally: contextvars.ContextVar[Optional[collections.Counter]] = contextvars.ContextVar("lowering_tally", default=None)


@contextlib.contextmanager
def lowering_tally() -> Iterator[collections.Counter]:
    """Count, inside the block, stencils parsed from gt4py's cache (``found``) and lowered (``lowered``)."""
    counts: collections.Counter = collections.Counter()
    token = _tally.set(counts)
    try:
        yield counts
    finally:
        _tally.reset(token)


def note_lowering(found: bool, restated: bool = False) -> None:
    """Count one stencil parsed in the current :func:`lowering_tally` (if any); ``restated``: its
    SDFG restated for the call was read too (:mod:`orchestra.stencils.restated`)."""
    counts = _tally.get()
    if counts is not None:
        counts["found" if found else "lowered"] += 1
        counts["restated"] += restated


def tally_summary(counts: collections.Counter) -> str:
    """E.g. "stencils: 16 of 18 found lowered, 2 lowered here (FrozenStencils), 12 found restated"
    ("" when none was parsed).

    Only ``FrozenStencil``s are counted: a gt4py stencil object called directly lowers through gt4py.
    """
    total = counts["found"] + counts["lowered"]
    if not total:
        return ""
    return (f"stencils: {counts['found']} of {total} found lowered, {counts['lowered']} lowered here (FrozenStencils), "
            f"{counts['restated']} found restated")


def argument_data(builder: Any, parameters: list[str]) -> Any:
    """gt4py's ``ModuleData`` of the stencil: from its saved file, else from the IR (then saved).

    Call it holding :func:`stencil_lock`. ``parameters`` are the definition's
    parameters: a saved file that lists others is stale and recomputed. The
    IR's API signature must list them too (a gt4py that lowered other
    parameters is refused with a ``RuntimeError``).
    """
    path = arguments_path(builder)
    saved = saved_argument_data(builder, parameters)
    if saved is not None:
        return saved
    from gt4py.cartesian.backend.module_generator import make_args_data_from_gtir

    with _k_boundaries_once():
        data = make_args_data_from_gtir(builder.gtir_pipeline)
    lowered = [arg.name for arg in builder.gtir.api_signature]
    if lowered != parameters:
        raise RuntimeError(f"gt4py lowered the parameters {lowered}, the definition has {parameters}")
    _write(path, data, parameters)
    return data


@contextlib.contextmanager
def _k_boundaries_once() -> Iterator[None]:
    """Inside the block, gt4py's argument data computes a stencil's vertical boundaries once, not once per field.

    gt4py 1.1.12's ``make_args_data_from_gtir`` calls ``compute_k_boundary``
    (a visit of the whole stencil IR, returning every field's boundary) for
    each field in turn and keeps that field's entry: 17 visits for a flux
    stencil with 17 fields, 2.7 of the 36 s of its lowering under cProfile.
    The visit is a pure function of the IR, so its first answer is the
    answer of every later call on the same IR; the caller only reads it.
    """
    from gt4py.cartesian.backend import module_generator

    compute = module_generator.compute_k_boundary
    answers: dict[int, tuple[Any, Any]] = {}  # id(IR) -> (IR, its boundaries); the IR is held so its id stays its own

    def once(node: Any) -> Any:
        if id(node) not in answers:
            answers[id(node)] = (node, compute(node))
        return answers[id(node)][1]

    module_generator.compute_k_boundary = once
    try:
        yield
    finally:
        module_generator.compute_k_boundary = compute


def saved_argument_data(builder: Any, parameters: list[str]) -> Optional[Any]:
    """The stencil's saved argument data if there and valid for ``parameters``; None otherwise (nothing computed)."""
    path = arguments_path(builder)
    try:
        document = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as error:
        log.debug("ignoring %s (%s); recomputing it from gt4py's IR", path, error)
        return None
    try:
        if document.get("format") != FORMAT or document.get("parameters") != parameters:
            return None
        return _decode(document)
    except (AttributeError, KeyError, TypeError, ValueError) as error:
        log.debug("ignoring %s (%s: %s); recomputing it from gt4py's IR", path, type(error).__name__, error)
        return None


def _write(path: Path, data: Any, parameters: list[str]) -> None:
    """Save ``data`` atomically, only if it reads back equal (a type this format misses is not saved)."""
    document = {"format": FORMAT, "parameters": parameters, **_encode(data)}
    if _decode(json.loads(json.dumps(document))) != data:
        log.debug("argument data of %s does not round-trip through JSON; not saved", path.name)
        return
    try:
        replace_atomically(path, json.dumps(document, indent=1, sort_keys=True))
    except OSError as error:  # a read-only gt4py cache: the IR is computed again next time
        log.debug("could not save %s (%s)", path, error)


def _encode(data: Any) -> dict[str, Any]:
    domain = data.domain_info
    return {
        "domain_info": None if domain is None else {
            "parallel_axes": list(domain.parallel_axes),
            "sequential_axis": domain.sequential_axis,
            "min_sequential_axis_size": int(domain.min_sequential_axis_size),
            "ndim": int(domain.ndim),
        },
        "field_info": {
            name: None if info is None else {
                "access": int(info.access),
                "boundary": [[int(low), int(high)] for low, high in info.boundary],
                "axes": list(info.axes),
                "data_dims": [int(size) for size in info.data_dims],
                "dtype": info.dtype.str,
            }
            for name, info in data.field_info.items()
        },
        "parameter_info": {
            name: None if info is None else {"access": int(info.access), "dtype": info.dtype.str}
            for name, info in data.parameter_info.items()
        },
        "unreferenced": list(data.unreferenced),
    }


def _decode(document: dict[str, Any]) -> Any:
    import numpy as np
    from gt4py.cartesian.backend.module_generator import ModuleData
    from gt4py.cartesian.definitions import AccessKind, DomainInfo, FieldInfo, ParameterInfo
    from gt4py.cartesian.gtc.definitions import Boundary

    domain = document["domain_info"]
    return ModuleData(
        domain_info=None if domain is None else DomainInfo(
            parallel_axes=tuple(domain["parallel_axes"]),
            sequential_axis=domain["sequential_axis"],
            min_sequential_axis_size=domain["min_sequential_axis_size"],
            ndim=domain["ndim"],
        ),
        field_info={
            name: None if info is None else FieldInfo(
                access=AccessKind(info["access"]),
                boundary=Boundary(tuple(tuple(pair) for pair in info["boundary"])),
                axes=tuple(info["axes"]),
                data_dims=tuple(info["data_dims"]),
                dtype=np.dtype(info["dtype"]),
            )
            for name, info in document["field_info"].items()
        },
        parameter_info={
            name: None if info is None else ParameterInfo(access=AccessKind(info["access"]), dtype=np.dtype(info["dtype"]))
            for name, info in document["parameter_info"].items()
        },
        unreferenced=list(document["unreferenced"]),
    )
