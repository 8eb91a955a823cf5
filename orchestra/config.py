"""What an orchestrated build is asked to do: the mode and the DaceConfig.

``FV3_DACEMODE`` selects the mode for a whole job:

=============  ==============================================================
``Python``     default: no orchestration, stencils run one by one
``Build``      build (or find) the library, then end the job cleanly
``BuildAndRun`` build or reuse a valid build, then run it
``Run``        never compile: load a valid build or fail naming what is missing
=============  ==============================================================
"""

from __future__ import annotations

import dataclasses
import enum
import logging
import math
import os
import sys
from pathlib import Path
from typing import Any, Optional

from orchestra.errors import ConfigurationError
from orchestra.observe.kernel_profile import PROFILE_VARIABLE, PROFILES, profile_from_environment
from orchestra.observe.replay.recording import record_call_from_environment, record_from_environment
from orchestra.observe.timings import timings_from_environment
from orchestra.observe.verify import verify_calls_from_environment

MODE_VARIABLE = "FV3_DACEMODE"
VERBOSE_VARIABLE = "ORCHESTRA_VERBOSE"
BUILD_TIMEOUT_VARIABLE = "ORCHESTRA_BUILD_TIMEOUT"
LOG_LEVEL_VARIABLE = "ORCHESTRA_LOG_LEVEL"
LOWERING_HELPERS_VARIABLE = "ORCHESTRA_LOWERING_HELPERS"
SPLIT_DEPTH_VARIABLE = "ORCHESTRA_SPLIT_DEPTH"
BUILD_PROCESSES_VARIABLE = "ORCHESTRA_BUILD_PROCESSES"
SPLIT_AT_VARIABLE = "ORCHESTRA_SPLIT_AT"
COMPILE_PROCESSES_VARIABLE = "ORCHESTRA_COMPILE_PROCESSES"

#: What ``ORCHESTRA_LOG_LEVEL`` accepts (any case).
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")

#: Backends whose stencils DaCe can inline into one program.
DACE_BACKENDS = ("dace:cpu", "dace:cpu_kfirst", "dace:gpu")


class DaCeOrchestration(enum.Enum):
    """The orchestration mode (values are what ``FV3_DACEMODE`` accepts)."""

    Python = "Python"
    Build = "Build"
    BuildAndRun = "BuildAndRun"
    Run = "Run"

    @classmethod
    def parse(cls, value: str, source: str = MODE_VARIABLE) -> "DaCeOrchestration":
        """Parse a mode name; an unknown one is a :class:`ConfigurationError`."""
        for mode in cls:
            if value == mode.value:
                return mode
        choices = ", ".join(mode.value for mode in cls)
        raise ConfigurationError(
            f"{source}={value!r} is not a valid orchestration mode; choose one of: {choices}"
        )

    @classmethod
    def from_environment(cls) -> "DaCeOrchestration":
        """The mode set by ``FV3_DACEMODE`` (``Python`` when unset or empty)."""
        value = os.environ.get(MODE_VARIABLE, "").strip()
        return cls.parse(value) if value else cls.Python

    @property
    def compiles(self) -> bool:
        return self in (DaCeOrchestration.Build, DaCeOrchestration.BuildAndRun)

    @property
    def runs(self) -> bool:
        return self in (DaCeOrchestration.BuildAndRun, DaCeOrchestration.Run)


def _default_mode() -> DaCeOrchestration:
    return DaCeOrchestration.from_environment()


def _env_timeout() -> Optional[float]:
    value = os.environ.get(BUILD_TIMEOUT_VARIABLE, "").strip()
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        raise ConfigurationError(
            f"{BUILD_TIMEOUT_VARIABLE}={value!r} is not a number of seconds"
        ) from None
    if not math.isfinite(seconds) or seconds <= 0:
        raise ConfigurationError(
            f"{BUILD_TIMEOUT_VARIABLE}={value!r}: give a positive, finite number of seconds "
            "(unset it for no limit)"
        )
    return seconds


def _env_count(variable: str, unit: str, choices: str) -> Optional[int]:
    """A count from ``variable`` (None when unset); ``choices`` says what 0, N and unset mean."""
    value = os.environ.get(variable, "").strip()
    if not value:
        return None
    try:
        return int(value)
    except ValueError:
        raise ConfigurationError(f"{variable}={value!r} is not a number of {unit}; give {choices}") from None


def _env_lowering_helpers() -> Optional[int]:
    return _env_count(
        LOWERING_HELPERS_VARIABLE, "ranks",
        "0 (no rank lowers stencils ahead of a build), a positive number, or unset it (every waiting rank may)",
    )


def _env_build_processes() -> Optional[int]:
    return _env_count(
        BUILD_PROCESSES_VARIABLE, "processes",
        "0 (the building rank works alone), a positive number, or unset it (the cores the node's ranks leave idle)",
    )


def compile_processes_from_environment() -> Optional[int]:
    """``ORCHESTRA_COMPILE_PROCESSES``: processes compiling ``Python`` mode's stencils ahead (None when unset)."""
    value = _env_count(
        COMPILE_PROCESSES_VARIABLE, "processes",
        "0 (each stencil compiles on its first call), a positive number, or unset it (the cores the node's ranks "
        "leave idle)",
    )
    _check_count(value, "compile_processes", COMPILE_PROCESSES_VARIABLE, "processes", "the idle cores")
    return value


def _env_split_depth() -> int:
    value = os.environ.get(SPLIT_DEPTH_VARIABLE, "").strip()
    if not value:
        return 0
    try:
        return int(value)
    except ValueError:
        raise ConfigurationError(
            f"{SPLIT_DEPTH_VARIABLE}={value!r} is not a depth; give 0 (one program for the whole call, the "
            "default), or N > 0 (orchestrated calls less than N deep run their Python body; the components "
            "they call are built each on its own)"
        ) from None


def _env_split_at() -> tuple[str, ...]:
    value = os.environ.get(SPLIT_AT_VARIABLE, "")
    return tuple(name.strip() for name in value.split(",") if name.strip())


def _check_count(value: Any, field: str, variable: str, unit: str, default: str) -> None:
    """Refuse a ``DaceConfig`` count that is not None or an int of 0 or more."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise ConfigurationError(
            f"DaceConfig.{field} (or {variable}) must be a number of {unit}, 0 or more, or None for "
            f"{default}; got {value!r}"
        )


def log_level() -> str:
    """``ORCHESTRA_LOG_LEVEL`` (``INFO`` when unset); another value is a :class:`ConfigurationError`."""
    value = os.environ.get(LOG_LEVEL_VARIABLE, "").strip()
    if not value:
        return "INFO"
    if value.upper() not in LOG_LEVELS:
        raise ConfigurationError(
            f"{LOG_LEVEL_VARIABLE}={value!r} is not a log level; choose one of: {', '.join(LOG_LEVELS)}"
        )
    return value.upper()


def _check_late_settings() -> None:
    """Settings a build reads only when it compiles, checked when the model is configured, not after its parse."""
    from orchestra.pipeline.forked_child import forking_allowed
    from orchestra.toolchain.compile_jobs import requested_units
    from orchestra.toolchain.object_cache import limit_mb

    requested_units()  # ORCHESTRA_COMPILE_UNITS
    limit_mb()  # ORCHESTRA_OBJECT_CACHE_MB
    forking_allowed()  # ORCHESTRA_VALIDATE_BESIDE


def _check_cache_root(root: Path) -> None:
    """A cache root (or a folder above it) that is a file cannot hold builds: say so now."""
    blocker = next((path for path in (root, *root.parents) if path.exists() and not path.is_dir()), None)
    if blocker is not None:
        raise ConfigurationError(
            f"the build cache root {root} cannot be a folder: {blocker} is a file; "
            "set ORCHESTRA_CACHE_DIR (or DaceConfig.cache_root) to a folder"
        )


@dataclasses.dataclass
class DaceConfig:
    """Everything orchestration needs to know about one job.

    Args:
        communicator: an ``orchestra.comm.Communicator`` (or None for one
            process). Its partitioner decides which ranks share a build.
        backend: the gt4py backend of the model's stencils.
        orchestration: the mode; defaults to ``FV3_DACEMODE``.
        cache_root: where builds live; defaults to ``$ORCHESTRA_CACHE_DIR``
            or ``./.orchestra_cache``.
        exit_after_build: in ``Build`` mode, end the process (exit 0 on every
            rank after a barrier) once the build is published. A library
            caller sets False to get control back instead.
        build_timeout_s: a build taking longer ends the job with a message
            (default ``$ORCHESTRA_BUILD_TIMEOUT`` or no limit).
        verbose: save the SDFG after every pipeline stage into the build
            folder (default from ``ORCHESTRA_VERBOSE``).
        debug_checks: checks injected into the program, a ``DebugChecks`` or
            its ``ORCHESTRA_DEBUG`` text (see :mod:`orchestra.passes.debug`);
            default from ``ORCHESTRA_DEBUG``. Part of the cache key.
        cuda_arch: GPU architecture to build for (``dace:gpu``), e.g. "90";
            set explicitly so a GPU build needs no GPU.
        cpu_passes: the optimize stage's CPU passes by name (see
            :mod:`orchestra.passes.cpu`); None runs the default set, fusion
            included (``UNFUSED_CPU_PASSES`` opts out; with debug checks the
            default leaves fusion out). Part of the cache key.
        fusion_block_bytes: bytes of rows one block of a fused map may hold
            when ``tile_fused_maps`` runs (see :mod:`orchestra.passes.fusion`);
            None: half an L2 cache of 1 MiB. Part of the cache key.
        timings: record where each call's time goes (see
            :mod:`orchestra.observe.timings`); default from ``ORCHESTRA_TIMINGS``.
        record: a folder to record one call of each program into, for
            ``orchestra replay`` (see :mod:`orchestra.observe.replay`); default from
            ``ORCHESTRA_RECORD``; None: nothing recorded.
        verify: run each orchestrated call also in ``Python`` mode and compare
            every array it reaches bit for bit (see :mod:`orchestra.observe.verify`);
            None: off; 0: every call; N: the first N calls of each program.
            Default from ``ORCHESTRA_VERIFY=1`` and ``ORCHESTRA_VERIFY_CALLS``.
            Not part of the key: the program is the same.
        record_call: which call to record, counting from 1; default from
            ``ORCHESTRA_RECORD_CALL``, else 2.
            Not part of the key: the same program is timed.
        lowering_helpers: how many ranks waiting for a build lower its
            stencils into gt4py's cache meanwhile, per key (see
            :mod:`orchestra.pipeline.lower_ahead`); default from
            ``ORCHESTRA_LOWERING_HELPERS``, else None: every waiting rank may; 0: none.
            Not part of the key: the program is the same.
        build_processes: how many processes a building rank starts to lower
            the build's stencils beside its parse (see
            :mod:`orchestra.pipeline.lowering_processes`); default from
            ``ORCHESTRA_BUILD_PROCESSES``, else None: the cores this rank may
            use that the node's ranks leave idle, shared among the node's
            building ranks; 0: none. Not part of the key: the program is the same.
        compile_processes: in ``Python`` mode, how many processes compile
            the model's stencils ahead of their first calls (see
            :mod:`orchestra.stencils.compile_ahead`); default from
            ``ORCHESTRA_COMPILE_PROCESSES``, else None: the cores the node's
            ranks leave idle, shared among them (at most 8 per rank); 0: none,
            each stencil compiles on its first call. Results do not change.
        split_depth: for development: an orchestrated call less than this
            many orchestrated calls deep runs its Python body, as in
            ``Python`` mode, and each orchestrated component it calls is built
            as a program of its own; an edit then rebuilds only the component
            holding it (see docs/orchestration.md, "Split builds"). Default
            from ``ORCHESTRA_SPLIT_DEPTH``, else 0: one program for the whole
            call. The programs differ (other cache entries); results do not.
        split_at: for development, like ``split_depth`` but by name: each
            orchestrated object whose class is named here is built as a
            program of its own, and each orchestrated call whose object holds
            one (at any depth of its attributes) runs its Python body. Default
            from ``ORCHESTRA_SPLIT_AT`` (comma-separated class names), else
            none. Combines with ``split_depth``. The word ``"edited"`` names
            the classes of the components an edit is in: when the whole
            program's key has no build and differs from an earlier build
            only inside some components, the program splits at their
            classes; otherwise it is one program as usual.
        profile: ``"kernels"`` builds programs with a timer on every kernel
            (another cache entry) for :func:`orchestra.observe.kernel_profile.kernel_report`;
            default from ``ORCHESTRA_PROFILE``; ``""`` is off.

    Example:
        >>> config = DaceConfig(None, backend="numpy",
        ...                     orchestration=DaCeOrchestration.Python)
        >>> config.is_orchestrated
        False
    """

    communicator: Any = None
    backend: str = "dace:cpu"
    orchestration: DaCeOrchestration = dataclasses.field(default_factory=_default_mode)
    cache_root: Optional[Path] = None
    exit_after_build: bool = True
    build_timeout_s: Optional[float] = dataclasses.field(default_factory=_env_timeout)
    verbose: bool = dataclasses.field(
        default_factory=lambda: os.environ.get(VERBOSE_VARIABLE, "") not in ("", "0")
    )
    debug_checks: Any = None
    cuda_arch: Optional[str] = None
    cpu_passes: Optional[tuple[str, ...]] = None
    fusion_block_bytes: Optional[int] = None
    timings: bool = dataclasses.field(default_factory=timings_from_environment)
    record: Optional[Path] = dataclasses.field(default_factory=record_from_environment)
    record_call: int = dataclasses.field(default_factory=record_call_from_environment)
    verify: Optional[int] = dataclasses.field(default_factory=verify_calls_from_environment)
    profile: str = dataclasses.field(default_factory=profile_from_environment)
    lowering_helpers: Optional[int] = dataclasses.field(default_factory=_env_lowering_helpers)
    split_depth: int = dataclasses.field(default_factory=_env_split_depth)
    build_processes: Optional[int] = dataclasses.field(default_factory=_env_build_processes)
    split_at: tuple[str, ...] = dataclasses.field(default_factory=_env_split_at)
    compile_processes: Optional[int] = dataclasses.field(default_factory=compile_processes_from_environment)

    def __post_init__(self) -> None:
        if isinstance(self.orchestration, str):
            self.orchestration = DaCeOrchestration.parse(self.orchestration, "orchestration")
        if not isinstance(self.orchestration, DaCeOrchestration):
            raise ConfigurationError(
                f"DaceConfig.orchestration must be a DaCeOrchestration, got {self.orchestration!r}"
            )
        if self.is_orchestrated and self.backend not in DACE_BACKENDS:
            raise ConfigurationError(
                f"orchestration mode {self.orchestration.value} needs a DaCe backend, but the "
                f"backend is {self.backend!r}; choose one of {', '.join(DACE_BACKENDS)} or set "
                f"{MODE_VARIABLE}=Python"
            )
        if self.cache_root is None:
            from orchestra.cache.layout import default_cache_root

            self.cache_root = default_cache_root()
        self.cache_root = Path(self.cache_root).expanduser().absolute()
        if self.is_orchestrated:
            log_level()
            _check_cache_root(self.cache_root)
        if self.orchestration.compiles:
            _check_late_settings()
        if self.cpu_passes is not None:
            from orchestra.passes.cpu import check_cpu_passes

            self.cpu_passes = check_cpu_passes(self.cpu_passes)
        if self.fusion_block_bytes is not None and (
            isinstance(self.fusion_block_bytes, bool)
            or not isinstance(self.fusion_block_bytes, int)
            or self.fusion_block_bytes <= 0
        ):
            raise ConfigurationError(
                f"DaceConfig.fusion_block_bytes must be a positive number of bytes, got {self.fusion_block_bytes!r}"
            )
        _check_count(self.lowering_helpers, "lowering_helpers", LOWERING_HELPERS_VARIABLE, "ranks",
                     "every waiting rank")
        _check_count(self.build_processes, "build_processes", BUILD_PROCESSES_VARIABLE, "processes",
                     "the cores the node's ranks leave idle")
        _check_count(self.compile_processes, "compile_processes", COMPILE_PROCESSES_VARIABLE, "processes",
                     "the idle cores")
        self._check_split_settings()
        if self.profile not in PROFILES:
            raise ConfigurationError(
                f"unknown profile {self.profile!r} (DaceConfig.profile or {PROFILE_VARIABLE}); "
                "the profile there is: kernels (unset or empty: off)"
            )
        if self.debug_checks is None or isinstance(self.debug_checks, str):
            from orchestra.passes.debug import DebugChecks

            text = self.debug_checks
            self.debug_checks = DebugChecks.from_environment() if text is None else DebugChecks.parse(text)

    def _check_split_settings(self) -> None:
        """``split_depth`` a depth, ``split_at`` class names, and neither with ``Build`` mode."""
        if isinstance(self.split_depth, bool) or not isinstance(self.split_depth, int) or self.split_depth < 0:
            raise ConfigurationError(
                f"DaceConfig.split_depth (or {SPLIT_DEPTH_VARIABLE}) must be 0 (one program) or a positive "
                f"depth; got {self.split_depth!r}"
            )
        if isinstance(self.split_at, str):
            self.split_at = (self.split_at,)
        self.split_at = tuple(self.split_at)
        if not all(isinstance(name, str) and name.isidentifier() for name in self.split_at):
            raise ConfigurationError(
                f"DaceConfig.split_at (or {SPLIT_AT_VARIABLE}) must name classes of orchestrated components, "
                f"e.g. ('Hyperdiffusion',) or {SPLIT_AT_VARIABLE}=Hyperdiffusion,FluxComputation, or the word "
                f"'edited' (the components an edit is in); got {self.split_at!r}"
            )
        if (self.split_depth or self.split_at) and self.orchestration is DaCeOrchestration.Build:
            setting = (f"split_depth={self.split_depth} (or {SPLIT_DEPTH_VARIABLE})" if self.split_depth
                       else f"split_at={','.join(self.split_at)} (or {SPLIT_AT_VARIABLE})")
            raise ConfigurationError(
                f"{setting} needs {MODE_VARIABLE}=BuildAndRun "
                "or Run: a split build builds each component on its first call, after running the calls before "
                "it, which Build mode does not run"
            )

    @property
    def is_orchestrated(self) -> bool:
        """True unless the mode is ``Python``."""
        return self.orchestration is not DaCeOrchestration.Python

    @property
    def on_gpu(self) -> bool:
        return "gpu" in self.backend

    @property
    def rank(self) -> int:
        return 0 if self.communicator is None else int(self.communicator.rank)


log = logging.getLogger("orchestra")


def ensure_log_handler(rank: int) -> None:
    """Give orchestra's logger a stderr handler unless the application configured one."""
    if log.handlers or logging.getLogger().handlers:
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("[orchestra] %(message)s"))
    log.addHandler(handler)
    log.setLevel(log_level())
    log.propagate = False
