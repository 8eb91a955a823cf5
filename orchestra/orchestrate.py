"""Patching methods and functions so that calling them runs one compiled program.

``orchestrate(obj, config)`` replaces ``obj.__call__`` (or another method) on
that instance only. In ``Python`` mode it does nothing. Otherwise the first
call parses the method and everything it calls (stencils, nested
orchestrated components, callbacks) into one SDFG, finds or builds the
library through the shared cache, loads it, and every later call goes through
the fast call path.

An orchestrated object called from another orchestrated method is inlined
into the caller's program (it is an SDFG-convertible): one library for the
whole call tree.
"""

from __future__ import annotations

import datetime
import functools
import inspect
import json
import logging
import os
import socket
import sys
import time
import types
from typing import Any, Callable, Optional, Sequence

from orchestra.build_inputs import collect_build_inputs
from orchestra.config import DaceConfig, DaCeOrchestration, MODE_VARIABLE
from orchestra.distributed import BuildCoordinator, CodePathClass, code_path_class
from orchestra.errors import BuildError, MissingBuildError
from orchestra.fast_call import FastCaller
from orchestra.abstract_arrays import refuse_abstract_arrays
from orchestra.toolchain import GpuTarget, dace_settings, prepare_gt4py

log = logging.getLogger("orchestra")

_COMPILETIME_TYPES: set[type] = set()


def compiletime_type(cls: type) -> type:
    """Class decorator: arguments of this type are folded in at parse time.

    Use it for objects an orchestrated method receives as an argument and
    only reads arrays and constants from (a model state, a grid).
    """
    _COMPILETIME_TYPES.add(cls)
    return cls


def _is_compiletime_annotation(annotation: Any) -> bool:
    return isinstance(annotation, type) and any(issubclass(annotation, t) for t in _COMPILETIME_TYPES)


def _with_compiletime_annotations(function: Callable, names: set[str]) -> Callable:
    """A copy of ``function`` for DaCe: ``names`` annotated ``dace.compiletime``, other hints dropped.

    DaCe turns parameter type hints into data descriptors (``q: Any`` would
    become a scalar, ``-> None`` a scalar return value); model code's hints are for humans and type checkers,
    so the program's descriptors always come from the actual arguments.
    """
    import dace

    copy = types.FunctionType(
        function.__code__, function.__globals__, function.__name__, function.__defaults__, function.__closure__
    )
    copy.__kwdefaults__ = function.__kwdefaults__
    copy.__qualname__ = function.__qualname__
    copy.__module__ = function.__module__
    copy.__doc__ = function.__doc__
    copy.__annotations__ = {name: dace.compiletime for name in names}
    return copy


class OrchestratedProgram:
    """One orchestrated function or bound method, built lazily on first call.

    Calling it runs the compiled program. It is also an SDFG-convertible, so
    that a call from another orchestrated program is inlined.
    """

    def __init__(
        self,
        function: Callable,
        config: DaceConfig,
        method_object: Any = None,
        compiletime_args: Sequence[str] = (),
    ) -> None:
        self.function = function
        self.config = config
        self.method_object = method_object
        self.compiletime_args = set(compiletime_args)
        self._program: Any = None
        self._caller: Optional[FastCaller] = None
        self._build_only = False
        self.build_seconds: Optional[float] = None
        self.load_seconds: Optional[float] = None
        self.built_here = False
        functools.update_wrapper(self, function)

    # ------------------------------------------------------------------ naming
    @property
    def label(self) -> str:
        """Human-readable program name, e.g. ``DynamicalCore.__call__``."""
        if self.method_object is not None:
            return f"{type(self.method_object).__name__}.{self.function.__name__}"
        return self.function.__qualname__

    # ----------------------------------------------------------- DaCe program
    def dace_program(self, args: Optional[tuple] = None) -> Any:
        """The DaceProgram (created on first use; ``args`` help spot compile-time types)."""
        if self._program is None:
            import dace
            from dace.frontend.python.parser import DaceProgram

            signature = inspect.signature(self.function)
            parameters = list(signature.parameters.values())
            if self.method_object is not None:
                parameters = parameters[1:]
            names = set(self.compiletime_args)
            unknown = names - {p.name for p in parameters}
            if unknown:
                raise BuildError(
                    f"dace_compiletime_args of {self.label} name {sorted(unknown)}, which are not "
                    f"parameters of it (parameters: {[p.name for p in parameters]})"
                )
            for parameter in parameters:
                if _is_compiletime_annotation(parameter.annotation):
                    names.add(parameter.name)
            for parameter, value in zip(parameters, args or ()):
                if type(value) in _COMPILETIME_TYPES or any(isinstance(value, t) for t in _COMPILETIME_TYPES):
                    names.add(parameter.name)
            function = _with_compiletime_annotations(self.function, names)
            device = dace.DeviceType.GPU if self.config.on_gpu else dace.DeviceType.CPU
            program = DaceProgram(function, (), {}, False, device, method=self.method_object is not None)
            if self.method_object is not None:
                program.methodobj = self.method_object
            self._program = program
        return self._program

    # SDFG-convertible protocol (nested orchestrated calls are inlined)
    def __sdfg__(self, *args: Any, **kwargs: Any) -> Any:
        return self.dace_program().__sdfg__(*args, **kwargs)

    def __sdfg_signature__(self) -> Any:
        return self.dace_program().__sdfg_signature__()

    def __sdfg_closure__(self, reevaluate: Any = None) -> Any:
        return self.dace_program().__sdfg_closure__(reevaluate)

    def closure_resolver(self, constant_args: Any, given_args: Any, parent_closure: Any = None) -> Any:
        return self.dace_program().closure_resolver(constant_args, given_args, parent_closure)

    def build_identity(self) -> dict[str, Any]:
        from orchestra.build_inputs import source_digest

        return {
            "function": f"{self.function.__module__}.{self.function.__qualname__}",
            "source": source_digest(self.function),
        }

    # ------------------------------------------------------------------- call
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._caller is None:
            if self._build_only:
                return None
            self._caller = self._obtain(args, kwargs)
            if self._caller is None:
                return None
        return self._caller(args, kwargs)

    @property
    def fast_caller(self) -> Optional[FastCaller]:
        return self._caller

    def _code_path(self) -> tuple[Optional[CodePathClass], int]:
        communicator = self.config.communicator
        partitioner = getattr(communicator, "partitioner", None)
        if partitioner is None:
            return None, 0
        rank = communicator.rank
        return code_path_class(partitioner, rank), int(partitioner.tile_index(rank))

    def _obtain(self, args: tuple, kwargs: dict) -> Optional[FastCaller]:
        """Find or build the library for this call, collectively over all ranks, and load it."""
        from orchestra.cache.fingerprint import fingerprint
        from orchestra.cache.store import BuildStore
        from orchestra.pipeline.stages import OptimizeOptions

        config = self.config
        mode = config.orchestration
        _ensure_log_handler(config.rank)
        gpu = GpuTarget.from_config(config.cuda_arch) if config.on_gpu else None  # never probes a device
        with dace_settings(gpu=gpu):
            chosen = {} if config.cpu_passes is None else {"cpu_passes": config.cpu_passes}
            options = OptimizeOptions(
                on_gpu=config.on_gpu, debug_checks=config.debug_checks, save_stages=config.verbose, **chosen
            )
            code_path, tile = self._code_path()
            pipeline = options.as_key()
            if gpu is not None:
                pipeline["cuda_arch"] = gpu.cuda_arch
                pipeline["gpu"] = gpu.as_key()
            coordinator = BuildCoordinator(config.communicator, config.build_timeout_s)

            def build_key() -> tuple[Any, dict, str]:
                program = self.dace_program(args)
                inputs = collect_build_inputs(
                    program, self.function, args, kwargs, backend=config.backend, pipeline=pipeline
                )
                if mode.runs:
                    refuse_abstract_arrays(self.label, program, args, kwargs)
                return program, inputs, fingerprint(inputs)

            # Every step that may fail on some ranks only is collective: a failure raises everywhere.
            program, inputs, key = coordinator.collectively(build_key, f"computing the build key of {self.label}")
            store = BuildStore(config.cache_root)
            records = coordinator.check_agreement(key, inputs, code_path, tile)
            asked = coordinator.gather_requests(records, inputs, code_path)
            coordinator.collectively(
                lambda: store.record_requests(self.label, asked) if asked else None,
                f"recording the builds {self.label} asks for",
            )

            def find_or_build() -> None:
                found = store.lookup(key, self.label)
                if found.entry is not None:
                    return
                if mode is DaCeOrchestration.Run:
                    raise MissingBuildError(self._missing_message(store, key, inputs, found.reason))
                with store.lock(key, config.build_timeout_s):
                    if store.lookup(key, self.label).entry is None:
                        self._build(store, key, inputs, program, args, kwargs, options)

            coordinator.run(records, key, find_or_build, self.label)
            if mode is DaCeOrchestration.Build:
                coordinator.barrier()
                if config.rank == 0:
                    log.info("%s: build ready in %s (FV3_DACEMODE=Build)", self.label, config.cache_root)
                if config.exit_after_build:
                    sys.stdout.flush()
                    sys.stderr.flush()
                    raise SystemExit(0)
                self._build_only = True
                return None
            from orchestra.pipeline.stages import load

            def load_own_build() -> Any:
                found = store.lookup(key, self.label)  # this rank's own key, library checksum verified
                if found.entry is None:
                    raise MissingBuildError(self._missing_message(store, key, inputs, found.reason))
                return found.entry, load(found.entry.path)

            entry, loaded = coordinator.collectively(load_own_build, f"loading {self.label}")
            self.load_seconds = loaded.seconds
            if config.rank == 0:
                log.info("%s: loaded from cache %s in %.2f s", self.label, entry.path, loaded.seconds)
            return FastCaller(program, loaded.compiled_sdfg)

    def _build(self, store: Any, key: str, inputs: dict, program: Any, args: tuple, kwargs: dict, options: Any) -> None:
        from orchestra.cache.fingerprint import canonical
        from orchestra.cache.manifest import Manifest
        from orchestra.passes.memory import format_memory_report
        from orchestra.pipeline.stages import compile_program, optimize, parse

        rank = self.config.rank
        start = time.perf_counter()
        staging = store.staging_dir(key)
        save_to = staging if options.save_stages else None
        log.info("[rank %d] %s: building (key %s)", rank, self.label, key[:12])
        parsed = parse(program, args, kwargs, save_to)
        log.info("[rank %d] %s: parsed in %.1f s", rank, self.label, parsed.seconds)
        optimized = optimize(parsed, options, save_to)
        log.info("[rank %d] %s: optimized in %.1f s", rank, self.label, optimized.seconds)
        compiled = compile_program(optimized, staging)
        log.info("[rank %d] %s: compiled in %.1f s", rank, self.label, compiled.seconds)
        (staging / "memory_report.json").write_text(json.dumps(optimized.memory_report, indent=2))
        log.info("[rank %d] %s: memory: %s", rank, self.label, format_memory_report(optimized.memory_report))
        self.build_seconds = time.perf_counter() - start
        manifest = Manifest(
            key=key,
            program=self.label,
            inputs=canonical(inputs),
            library=str(compiled.library.relative_to(staging)),
            checksum="",
            created=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            host=socket.gethostname(),
            build_seconds=self.build_seconds,
            orchestra_version=inputs["versions"]["orchestra"],
        )
        entry = store.publish(staging, manifest)
        self.built_here = True
        log.info("[rank %d] %s: built in %.1f s -> %s", rank, self.label, self.build_seconds, entry.path)

    def _missing_message(self, store: Any, key: str, inputs: dict, reason: str) -> str:
        lines = [
            f"FV3_DACEMODE=Run found no usable build of {self.label} in {store.root} (key {key[:20]}): {reason}."
        ]
        try:
            closest = [pair for pair in store.closest(self.label, inputs) if pair[0].key != key]
        except Exception:  # an unreadable neighbour must not hide the real message
            closest = []
        if closest:
            entry, differences = closest[0]
            lines.append(f"Closest build {entry.path} differs in: {'; '.join(differences[:10])}.")
        lines.append(
            f"Build it first by running the same job with {MODE_VARIABLE}=Build (or BuildAndRun), "
            "e.g. `FV3_DACEMODE=Build scripts/run.sh CONFIG`; `orchestra cache explain` shows details."
        )
        return " ".join(lines)


_PATCHED_CLASSES: dict[type, type] = {}


def _patched_class(cls: type) -> type:
    """A subclass of ``cls`` whose ``__call__`` and SDFG protocol use the instance's program."""
    if getattr(cls, "__orchestra_patched__", False):
        return cls
    if cls not in _PATCHED_CLASSES:

        def program_of(self: Any) -> OrchestratedProgram:
            return self.__dict__["__orchestra_programs__"]["__call__"]

        namespace = {
            "__orchestra_patched__": True,
            "__module__": cls.__module__,
            "__qualname__": cls.__qualname__,
            "__doc__": cls.__doc__,
            "__call__": lambda self, *args, **kwargs: program_of(self)(*args, **kwargs),
            "__sdfg__": lambda self, *args, **kwargs: program_of(self).__sdfg__(*args, **kwargs),
            "__sdfg_signature__": lambda self: program_of(self).__sdfg_signature__(),
            "__sdfg_closure__": lambda self, reevaluate=None: program_of(self).__sdfg_closure__(reevaluate),
            "closure_resolver": lambda self, constant_args, given_args, parent_closure=None: program_of(
                self
            ).closure_resolver(constant_args, given_args, parent_closure),
            "build_identity": lambda self: program_of(self).build_identity(),
        }
        _PATCHED_CLASSES[cls] = type(cls.__name__, (cls,), namespace)
    return _PATCHED_CLASSES[cls]


def orchestrate(
    obj: Any,
    config: DaceConfig,
    method_to_orchestrate: str = "__call__",
    dace_compiletime_args: Sequence[str] = (),
) -> None:
    """Orchestrate ``obj.<method_to_orchestrate>`` in place (no-op in ``Python`` mode).

    Args:
        obj: the model object (e.g. a ``DynamicalCore``).
        config: the job's :class:`DaceConfig` (mode, backend, communicator).
        method_to_orchestrate: the method whose calls become one program.
        dace_compiletime_args: parameter names folded in at parse time.

    Example::

        class Model:
            def __init__(self, config):
                self.step = FrozenStencil(...)
                orchestrate(obj=self, config=config)

            def __call__(self, q):
                self.step(q)
    """
    if not config.is_orchestrated:
        return
    prepare_gt4py()
    cls = type(obj)
    function = getattr(cls, method_to_orchestrate, None)
    if function is None or not callable(function):
        raise AttributeError(f"{cls.__name__} has no method {method_to_orchestrate!r} to orchestrate")
    programs = obj.__dict__.setdefault("__orchestra_programs__", {})
    if method_to_orchestrate in programs:
        return
    if getattr(cls, "__orchestra_patched__", False):
        function = getattr(cls.__mro__[1], method_to_orchestrate)
    program = OrchestratedProgram(function, config, obj, dace_compiletime_args)
    programs[method_to_orchestrate] = program
    if method_to_orchestrate == "__call__":
        obj.__class__ = _patched_class(cls)
    else:
        obj.__dict__[method_to_orchestrate] = program


def orchestrate_function(
    config: DaceConfig, dace_compiletime_args: Sequence[str] = ()
) -> Callable[[Callable], Callable]:
    """Decorator: orchestrate a free function (returned unchanged in ``Python`` mode)."""

    def decorate(function: Callable) -> Callable:
        if not config.is_orchestrated:
            return function
        prepare_gt4py()
        return OrchestratedProgram(function, config, None, dace_compiletime_args)

    return decorate


def _ensure_log_handler(rank: int) -> None:
    """Give orchestra's logger a stderr handler unless the application configured one."""
    if log.handlers or logging.getLogger().handlers:
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("[orchestra] %(message)s"))
    log.addHandler(handler)
    log.setLevel(os.environ.get("ORCHESTRA_LOG_LEVEL", "INFO").upper())
    log.propagate = False
