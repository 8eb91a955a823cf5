"""Step 3b of a first call on a miss: parse, optimize, compile, publish.

[KeyedRequest] -> [BuiltEntry]: the four stages of :mod:`.stages` run in a
staging folder of the store, whose manifest records the request's inputs;
right after parsing, :mod:`.audit` checks that the parse used nothing the key
does not hold (a BuildError otherwise, before anything is published);
publishing is atomic (:meth:`orchestra.cache.store.BuildStore.publish`).
Called only by the rank chosen to build the key, under the key's lock.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import json
import logging
import shutil
import socket
import time
import warnings
from pathlib import Path
from typing import Iterator

from orchestra.cache.entry import BuildEntry
from orchestra.cache.fingerprint import canonical
from orchestra.cache.manifest import Manifest
from orchestra.cache.store import BuildStore
from orchestra.key.call_tree import function_name
from orchestra.errors import BuildError
from orchestra.passes.cpu import describe_changes
from orchestra.passes.fusion.barriers import callback_barriers, describe_barriers
from orchestra.passes.memory import format_memory_report
from orchestra.pipeline.audit import ParseRecorder, audit_parse
from orchestra.pipeline.build_warnings import summary_line, write_warnings
from orchestra.pipeline.garbage_collection import fewer_collections
from orchestra.pipeline.lowering_processes import lowering_processes
from orchestra.pipeline.parse_reuse import repeated_components
from orchestra.pipeline.request import KeyedRequest
from orchestra.pipeline.stages import compile_program, optimize, parse
from orchestra.toolchain.object_cache import objects_kept_in, objects_summary

log = logging.getLogger("orchestra")


@dataclasses.dataclass(frozen=True)
class BuiltEntry:
    """A build this rank made and published."""

    entry: BuildEntry
    seconds: float


def build_and_publish(keyed: KeyedRequest, store: BuildStore, rank: int = 0, processes: int = 0) -> BuiltEntry:
    """Build the library of ``keyed`` in a staging folder and publish it under its key.

    Up to ``processes`` processes lower the program's stencils beside the parse
    (:mod:`orchestra.pipeline.lowering_processes`).
    """
    request, key = keyed.request, keyed.key
    start = time.perf_counter()
    staging = store.staging_dir(key)
    save_to = staging if request.options.save_stages else None
    log.info("[rank %d] %s: building (key %s)", rank, request.label, key[:12])
    _log_closest_difference(keyed, store, rank)
    with warnings.catch_warnings(record=True) as caught, _dace_debug_files_into(staging), fewer_collections():
        warnings.simplefilter("default")  # DaCe and gt4py warn a lot: to a file
        with lowering_processes(keyed.callees, processes, request.gpu) as helpers:
            with ParseRecorder() as recorder:  # defence in depth: the parse may use nothing unkeyed
                repeated = repeated_components(getattr(request.program, "resolver", None))
                parsed = parse(request.program, request.args, request.kwargs, save_to, repeated)
            helping = helpers.summary()
        audit_parse(recorder.records, parsed.sdfg, request.program.resolver, keyed.inputs,
                    function_name(request.function), request.label)
        reuse = "; ".join(part for part in (parsed.reuse, helping) if part)
        log.info("[rank %d] %s: parsed in %.1f s (%s)", rank, request.label, parsed.seconds, reuse)
        optimized = optimize(parsed, request.options, save_to)
        fusion = describe_changes(optimized.cpu_pass_changes)
        log.info("[rank %d] %s: optimized in %.1f s%s", rank, request.label, optimized.seconds,
                 f" ({fusion})" if fusion else "")
        if "merge_vertical_maps" in optimized.cpu_pass_changes:  # fusion ran: which callbacks cut kernels
            barriers = describe_barriers(callback_barriers(optimized.sdfg))
            if barriers:
                log.info("[rank %d] %s: %s", rank, request.label, barriers)
        with objects_kept_in(store.root):  # an edit recompiles only the files whose input changed
            compiled = compile_program(optimized, staging)
        objects = objects_summary(staging / "build")
        log.info("[rank %d] %s: compiled in %.1f s%s", rank, request.label, compiled.seconds,
                 f" ({objects})" if objects else "")
    _write_warnings(caught, staging, rank, request.label)
    (staging / "memory_report.json").write_text(json.dumps(optimized.memory_report, indent=2))
    log.info("[rank %d] %s: memory: %s", rank, request.label, format_memory_report(optimized.memory_report))
    seconds = time.perf_counter() - start
    manifest = Manifest(
        key=key,
        program=request.label,
        inputs=canonical(keyed.inputs),
        library=str(compiled.library.relative_to(staging)),
        checksum="",
        created=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        host=socket.gethostname(),
        build_seconds=seconds,
        orchestra_version=keyed.inputs["versions"]["orchestra"],
        stage_seconds={"parse": parsed.seconds, "optimize": optimized.seconds, "compile": compiled.seconds},
    )
    entry = store.publish(staging, manifest)
    log.info("[rank %d] %s: built in %.1f s -> %s", rank, request.label, seconds, entry.path)
    return BuiltEntry(entry, seconds)


#: Where DaCe saves an SDFG that failed validation or code generation, relative to the working directory.
DACE_DEBUG_FOLDER = Path("_dacegraphs")


@contextlib.contextmanager
def _dace_debug_files_into(staging: Path) -> Iterator[None]:
    """Keep DaCe's copies of a failing SDFG with the failed build, not in the user's working directory.

    On an invalid SDFG or a code-generation failure DaCe writes
    ``_dacegraphs/invalid.sdfgz`` (or ``failing.sdfgz``) into the current
    directory, wherever the model runs. Files it wrote during this build move
    into the build's staging folder (kept after a failure for inspection,
    removed by ``orchestra cache clean``), the folder goes if DaCe made it,
    and the error names where the copy is.
    """
    folder = DACE_DEBUG_FOLDER.resolve()
    existed = folder.is_dir()
    before = {path: path.stat().st_mtime_ns for path in folder.iterdir()} if existed else {}
    try:
        yield
    except BuildError as error:
        kept = []
        if folder.is_dir():
            for path in sorted(folder.iterdir()):
                if path.is_file() and before.get(path) != path.stat().st_mtime_ns:
                    target = staging / "dace_debug" / path.name
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.move(str(path), target)
                    kept.append(target)
            if not existed and not any(folder.iterdir()):
                folder.rmdir()
        if not kept:
            raise
        raise type(error)(f"{error} (DaCe's copy of the failing SDFG: {', '.join(map(str, kept))})") from error


def _write_warnings(caught: list, staging: Path, rank: int, label: str) -> None:
    """Write the warnings a build raised to its folder; one console line names their kinds and counts."""
    if caught:
        log.info("[rank %d] %s: %s", rank, label, summary_line(write_warnings(caught, staging)))


def _log_closest_difference(keyed: KeyedRequest, store: BuildStore, rank: int) -> None:
    """Say why this is built: what differs from the closest earlier build of the program (an edit, say).

    E.g. ``the closest earlier build (3f2a...) differs in: call_tree['...'].callees['FrozenStencil(
    hyperdiffusion_tendency, ...)'].gt_id: changed``. Nothing when there is none; never fails the build.
    """
    try:
        closest = store.closest(keyed.label, keyed.inputs, other_than=keyed.key)
    except Exception as error:  # an unreadable neighbour must not stop a build
        log.debug("%s: no comparison with earlier builds (%s)", keyed.label, error)
        return
    if not closest:
        return
    entry, differences = closest[0]
    shown = "; ".join(differences[:3]) + (f"; and {len(differences) - 3} more" if len(differences) > 3 else "")
    log.info("[rank %d] %s: the closest earlier build (%s) differs in: %s", rank, keyed.label, entry.path.name, shown)
