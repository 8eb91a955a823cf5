"""Steps 3 and 4 of a first call: the entry of a key, found or built, then loaded.

The build step (:func:`orchestra.pipeline.build.build_and_publish`) is wrapped,
from the inside out, by:

- the **cache** (:func:`cached_build`): a valid entry of the key is used as it
  is; ``Run`` mode refuses to build and says which inputs differ from the
  closest build; otherwise the key's file lock is taken and the store asked
  again before building (another job may have published it meanwhile);
- the **coordinator** (:func:`ensure_built`): keys are agreed across ranks,
  the run's requests recorded, and only the chosen builder of each key runs
  the cached build while the others wait (:mod:`orchestra.distributed.coordinator`).

:func:`load_entry` then looks up each rank's own key (checksums verified) and
loads that build, collectively: a failure on any rank raises on all. Before
it is loaded, every file the load reads must be trusted
(:func:`orchestra.cache.trust.check_trusted`). A read-only cache works in
``Run`` mode: recording the run's requests is skipped with a note.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import logging
from typing import Iterator, Optional

from orchestra.cache.causes import likely_causes
from orchestra.cache.entry import BuildEntry
from orchestra.cache.store import BuildStore
from orchestra.cache.trust import check_trusted
from orchestra.calls.fast_path import FastCaller
from orchestra.config import MODE_VARIABLE, DaCeOrchestration, ensure_log_handler
from orchestra.distributed.coordinator import BuildCoordinator
from orchestra.errors import ConfigurationError, MissingBuildError
from orchestra.distributed.key_agreement import KeyTable
from orchestra.pipeline.build import build_and_publish
from orchestra.pipeline.lower_ahead import START_AFTER_S, lowering_work
from orchestra.distributed.helper_processes import default_process_count, usable_cores
from orchestra.pipeline.lowering_processes import node_share
from orchestra.observe import first_call_report
from orchestra.distributed.threads import apply_threads
from orchestra.pipeline.request import KeyedRequest, OrchestratedCall, key_request, request_for
from orchestra.pipeline.split_builds import EDITED, edit_hint, split_depth
from orchestra.toolchain import GpuTarget, dace_settings
from orchestra.pipeline.stages import LoadedProgram, load
from orchestra.distributed.staging import load_through_node, staging_area_from_environment


log = logging.getLogger("orchestra")


def missing_message(store: BuildStore, keyed: KeyedRequest, reason: str) -> str:
    """Why ``Run`` mode cannot run ``keyed``: what the closest build differs in, in words, and the fix.

    A few lines: the changes that explain the difference lead (a stencil's
    domain, a function's source, a folded value; :func:`~orchestra.cache.causes.likely_causes`),
    the count of all differences follows, ``orchestra cache explain`` lists them.
    """
    lines = [f"{MODE_VARIABLE}=Run found no usable build of {keyed.label} in {store.root} "
             f"(key {keyed.key[:20]}): {reason}."]
    try:
        closest = store.closest(keyed.label, keyed.inputs, other_than=keyed.key)
    except Exception:  # an unreadable neighbour must not hide the real message
        closest = []
    if closest:
        entry, differences = closest[0]
        causes = likely_causes(keyed.inputs, entry.manifest.inputs)
        lines.append(f"The closest build ({entry.path}) differs in {len(differences)} input(s)"
                     + (":" if causes else f": {'; '.join(differences[:3])}"))
        lines += [f"  - {cause}" for cause in causes]
    if keyed.request.split:  # Build mode refuses split settings: each part is built on its first call
        lines.append(f"Build it first: run the same script with the same split setting and {MODE_VARIABLE}="
                     f"BuildAndRun (it builds each part on its first call); `orchestra cache explain --root "
                     f"{store.root}` lists every difference.")
    else:
        lines.append(f"Build it first: run the same script, with the same model and inputs, with {MODE_VARIABLE}="
                     f"Build (or BuildAndRun); `orchestra cache explain --root {store.root}` lists every difference.")
    return "\n".join(lines)


def cached_build(
    keyed: KeyedRequest,
    store: BuildStore,
    may_build: bool,
    lock_timeout_s: Optional[float],
    rank: int = 0,
    processes: int = 0,
) -> Optional[float]:
    """Make sure ``store`` holds a valid entry of ``keyed``; the build's seconds if this call built it.

    A build may start ``processes`` processes to lower stencils beside its parse
    (:mod:`orchestra.pipeline.lowering_processes`).
    """
    found = store.lookup(keyed.key, keyed.label)
    if found.entry is not None:
        return None
    if not may_build:
        raise MissingBuildError(missing_message(store, keyed, found.reason))
    if found.path is not None:  # a folder of this key that is not a usable build: say why it is built again
        log.warning("%s: the build in %s is not usable (%s); building it again", keyed.label, found.path, found.reason)
    with _build_lock(store, keyed, lock_timeout_s):
        if store.lookup(keyed.key, keyed.label).entry is not None:
            return None  # published by another job while this one waited for the lock
        return build_and_publish(keyed, store, rank, processes).seconds


@contextlib.contextmanager
def _build_lock(store: BuildStore, keyed: KeyedRequest, timeout_s: Optional[float]) -> Iterator[None]:
    """The key's lock; a cache that cannot take it (read-only) is one message saying what to do."""
    try:
        lock = store.lock(keyed.key, timeout_s)
        lock.__enter__()
    except OSError as error:
        if error.errno not in (errno.EROFS, errno.EACCES, errno.EPERM):
            raise
        raise ConfigurationError(
            f"{keyed.label}: the cache {store.root} is not writable ({error.strerror}), and it holds no build of "
            "this program for these inputs, so BuildAndRun cannot build one there. Build where the cache is "
            "writable (FV3_DACEMODE=Build), or give a writable cache (ORCHESTRA_CACHE_DIR or DaceConfig(cache_root="
            "...)); FV3_DACEMODE=Run uses a read-only cache's builds and never writes"
        ) from error
    try:
        yield
    finally:
        lock.__exit__(None, None, None)


@dataclasses.dataclass(frozen=True)
class Ensured:
    """What :func:`ensure_built` did."""

    #: seconds of the build this rank made; None if it made none
    seconds_here: Optional[float]
    #: some rank of the job made a build of this program (False: every rank's build was found)
    built_anywhere: bool


def ensure_built(
    keyed: KeyedRequest,
    store: BuildStore,
    coordinator: BuildCoordinator,
    may_build: bool,
    lowering_helpers: Optional[int] = None,
    build_processes: Optional[int] = None,
    alone_rank: Optional[int] = None,
) -> Ensured:
    """Collectively: every rank's key has a valid entry once this returns on any rank.

    Returns the seconds of the build this rank made (None if it made none),
    and whether any rank made one. ``alone_rank``: this rank's number in its
    job when it obtains the program alone (``coordinator`` without a
    communicator, where it is rank 0): the build logs name it, and only the
    job's rank 0 records what the run asks for.
    While a build runs, up to ``lowering_helpers`` (None: all) of the ranks
    waiting for it lower its stencils ahead (:mod:`orchestra.pipeline.lower_ahead`),
    and a building rank starts ``build_processes`` processes to do the same
    (None: as many as the node has idle cores for it, :func:`_process_count`).
    """
    request = keyed.request
    records = coordinator.check_agreement(keyed.key, keyed.inputs, request.code_path, request.tile)
    asked = coordinator.gather_requests(records, keyed.inputs, request.code_path)
    if alone_rank not in (None, 0):
        asked = []  # one rank's record is enough (`orchestra cache explain`)
    coordinator.collectively(lambda: _record(store, keyed, asked), f"recording the builds {keyed.label} asks for")
    built: list[Optional[float]] = [None]

    processes = _process_count(build_processes, coordinator, records) if may_build else 0

    def build() -> bool:
        rank = coordinator.rank if alone_rank is None else alone_rank
        built[0] = cached_build(keyed, store, may_build, coordinator.timeout_s, rank, processes)
        return built[0] is not None

    helping = lowering_work(keyed.callees, records, coordinator.rank, lowering_helpers) if may_build else []
    round_ = coordinator.run(records, keyed.key, build, keyed.label, helping, START_AFTER_S, may_build)
    return Ensured(built[0], round_.built_anywhere)


def _process_count(configured: Optional[int], coordinator: BuildCoordinator, records: KeyTable) -> int:
    """``configured``, or the cores this rank may use that its node's ranks leave idle, per building rank there.

    Collective on the job's first call (the node's communicator is made then).
    """
    if configured is not None:
        return configured
    if coordinator.comm is None or coordinator.size == 1:
        return default_process_count(usable_cores(), 1, 1)
    ranks_on_node, builders_on_node = node_share(coordinator.comm, sorted(set(records.builders.values())))
    return default_process_count(usable_cores(), ranks_on_node, builders_on_node)


def _record(store: BuildStore, keyed: KeyedRequest, asked: list) -> None:
    """Record what this run asked for (``orchestra cache explain``); a read-only cache skips it."""
    if not asked:
        return
    try:
        store.record_requests(keyed.label, asked)
    except OSError as error:
        if error.errno not in (errno.EROFS, errno.EACCES, errno.EPERM):
            raise
        log.info(
            "%s: cache %s is not writable (%s); this run's requests are not recorded, so "
            "`orchestra cache explain` will not show it", keyed.label, store.root, error.strerror
        )


def load_entry(
    keyed: KeyedRequest, store: BuildStore, coordinator: BuildCoordinator
) -> tuple[BuildEntry, LoadedProgram]:
    """Collectively: each rank loads the build of its own key (library checksum verified).

    In an MPI job, one reader per node copies the build into node-local
    storage and the ranks of the node load that copy (:mod:`orchestra.distributed.staging`);
    a single rank, or ``ORCHESTRA_NODE_LOCAL_DIR=none``, loads from the cache itself.
    """
    several_ranks = coordinator.comm is not None and coordinator.comm.Get_size() > 1
    area = staging_area_from_environment() if several_ranks else None

    def load_own_build() -> tuple[BuildEntry, LoadedProgram]:
        found = store.lookup(keyed.key, keyed.label)
        if found.entry is None:
            raise MissingBuildError(missing_message(store, keyed, found.reason))
        entry = found.entry
        loaded_files = [entry.library_path, *(entry.path / name for name in entry.manifest.files)]
        check_trusted(store.root, entry.path, loaded_files)
        return entry, load(entry.path)

    if area is not None:
        return load_through_node(keyed, store, coordinator, area, missing_message, load_own_build)
    return coordinator.collectively(load_own_build, f"loading {keyed.label}")


@dataclasses.dataclass(frozen=True)
class Obtained:
    """What :func:`obtain_program` did for one call of an orchestrated program."""

    caller: Optional[FastCaller]  #: the loaded program's fast path (None: not loaded)
    build_seconds: Optional[float] = None  #: of the build this rank made (None: it made none)
    load_seconds: Optional[float] = None
    build_only: bool = False  #: ``Build`` mode: built everywhere, nothing loaded
    coordinator: Optional[BuildCoordinator] = None


def obtain_program(program: OrchestratedCall, args: tuple, kwargs: dict) -> Obtained:
    """[a call of ``program``] -> request -> key -> entry (found, or built and published) -> loaded program.

    Collective over the job's ranks, except inside a split build's Python body,
    which may call a component on some ranks only (``if self.on_west_edge:``):
    each rank then obtains the program alone (the key's file lock makes one rank
    build it while the others wait for it, then find it), so no rank waits in a
    collective the others never enter. ``Obtained.caller`` is None when the
    call must run an edited split instead.
    """
    config = program.config
    ensure_log_handler(config.rank)
    gpu = GpuTarget.from_config(config.cuda_arch) if config.on_gpu else None  # never probes a device
    alone = split_depth() > 0
    with dace_settings(gpu=gpu):
        coordinator = BuildCoordinator(None if alone else config.communicator, config.build_timeout_s)
        # Every step that may fail on some ranks only is collective: a failure raises everywhere.
        keyed = coordinator.collectively(
            lambda: key_request(request_for(program, args, kwargs, gpu)), f"computing the build key of {program.label}"
        )
        store = BuildStore(config.cache_root)
        if program.split.decides_edited() and program.split.decide_edited(keyed, store, coordinator):
            return Obtained(None)  # the call runs the edited split instead
        ensured = ensure_built(
            keyed, store, coordinator, may_build=config.orchestration is not DaCeOrchestration.Run,
            lowering_helpers=config.lowering_helpers,
            # alone, a rank does not know how many of its node's ranks build at once: no processes by default
            build_processes=0 if alone and config.build_processes is None else config.build_processes,
            alone_rank=config.rank if alone else None,
        )
        if ensured.seconds_here is not None and config.rank == 0 and not alone and EDITED not in config.split_at:
            hint = edit_hint(keyed, store, program.method_object)
            if hint is not None:
                log.info("%s: %s", program.label, hint)
        if config.orchestration is DaCeOrchestration.Build:
            return Obtained(None, ensured.seconds_here, build_only=True, coordinator=coordinator)
        return _loaded(program, keyed, store, coordinator, ensured)


def _loaded(program: OrchestratedCall, keyed: KeyedRequest, store: BuildStore, coordinator: BuildCoordinator,
            ensured: Ensured) -> Obtained:
    """Load the entry of ``keyed`` (every rank, collectively) and wrap it in the fast call path."""
    config = program.config
    entry, loaded = load_entry(keyed, store, coordinator)
    if not config.on_gpu:
        apply_threads(loaded.compiled_sdfg)
    if config.rank == 0:
        log.info("%s: loaded from cache %s in %.2f s", program.label, entry.path, loaded.seconds)
    first_call_report.record(first_call_report.Obtained(
        program.label, ensured.built_anywhere, entry.manifest.created, entry.manifest.stage_seconds, loaded.seconds
    ))
    origin = {"key": keyed.key, "entry": str(entry.path), "library": entry.manifest.library,
              "cache_root": str(store.root)}
    caller = FastCaller(keyed.request.program, loaded.compiled_sdfg, program.clock, origin)
    return Obtained(caller, ensured.seconds_here, loaded.seconds)
