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

import contextvars
import functools
import inspect
import logging
import os
import sys
import time
import types
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from orchestra.arguments import (
    CallBinder,
    array_layouts,
    arguments_share_memory,
    compiletime_type,
    folded_identity,
    is_compiletime_annotation,
    is_folded_object,
)
from orchestra.config import DaceConfig, DaCeOrchestration, log_level
from orchestra.distributed import BuildCoordinator, CodePathClass, code_path_class, mpi_comm
from orchestra.errors import BuildError, OrchestraError
from orchestra import first_call_report, kernel_profile
from orchestra.fast_call import FastCaller
from orchestra.folded_values import FoldedValues
from orchestra.mid_call_changes import report_mid_call_changes
from orchestra.pipeline.request import BuildRequest
from orchestra.pipeline.stages import OptimizeOptions
from orchestra.python_body_stencils import reset_body_config, set_body_config
from orchestra.replay.record import RecordPlan
from orchestra.split_builds import EDITED, agreed_edited_split, edit_hint, named_component_below
from orchestra.threads import apply_threads, settle_threads
from orchestra.timings import ProgramClock
from orchestra.toolchain import GpuTarget, dace_settings, prepare_gt4py

log = logging.getLogger("orchestra")

#: How many orchestrated calls around this one run their Python body (split builds, DaceConfig.split_depth).
_SPLIT_DEPTH: contextvars.ContextVar[int] = contextvars.ContextVar("orchestra_split_depth", default=0)
#: The classes an enclosing program's edited split (``split_at=("edited",)``) builds on their own; None: none.
_EDITED_SPLIT: contextvars.ContextVar[Optional[tuple[str, ...]]] = contextvars.ContextVar(
    "orchestra_edited_split", default=None
)
#: The objects whose Python bodies run around this call in a split build, outermost first.
_RUNNING_BODIES: contextvars.ContextVar[tuple[Any, ...]] = contextvars.ContextVar("orchestra_running_bodies", default=())
#: Programs whose split-build line was logged (one line per program name, not per object or call).
_SPLIT_LOGGED: set[str] = set()


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
        self._binder = CallBinder(function, is_method=method_object is not None, label=self.label_of(function, method_object))
        self._constant: frozenset = frozenset()  # compile-time arguments, known once parsed
        # folded arguments -> [(values folded through self and globals, FastCaller, the call that obtained it)]
        self._callers: dict[tuple, list[tuple[FoldedValues, FastCaller, tuple, dict]]] = {}
        self._last_values: Optional[FoldedValues] = None  # those of the program the last call ran
        self._build_only = False
        self._returned = _ReturnedObjects.of(function, method_object)
        #: split_at: the names last looked up, and where the object holds one of them (None: nowhere)
        self._held_split: Optional[tuple[tuple[str, ...], Optional[str]]] = None
        #: split_at edited: the classes this program's calls split at (None: not decided yet; empty: no split)
        self._edited_split: Optional[tuple[str, ...]] = None
        self.build_seconds: Optional[float] = None
        self.load_seconds: Optional[float] = None
        self.built_here = False
        self._reported = False  # the first call's summary line was logged (orchestra.first_call_report)
        #: per-call timings (orchestra.timings), None unless the config asks for them
        self.clock: Optional[ProgramClock] = ProgramClock(self.label) if config.timings else None
        #: records one call (orchestra.replay), None unless the config asks for it
        self._record: Optional[RecordPlan] = (
            RecordPlan(config.record, config.record_call, self.label, None if config.communicator is None else config.rank)
            if config.record is not None
            else None
        )
        functools.update_wrapper(self, function)

    # ------------------------------------------------------------------ naming
    @property
    def label(self) -> str:
        """Human-readable program name, e.g. ``DynamicalCore.__call__``."""
        return self.label_of(self.function, self.method_object)

    @staticmethod
    def label_of(function: Callable, method_object: Any) -> str:
        if method_object is not None:
            return f"{type(method_object).__name__}.{function.__name__}"
        return function.__qualname__

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
                if is_compiletime_annotation(parameter.annotation):
                    names.add(parameter.name)
            for parameter, value in zip(parameters, args or ()):
                if is_folded_object(value):
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
        from orchestra.pipeline.parse_reuse import component_sdfg

        return component_sdfg(self, args, kwargs)

    def __sdfg_signature__(self) -> Any:
        return self.dace_program().__sdfg_signature__()

    def __sdfg_closure__(self, reevaluate: Any = None) -> Any:
        return self.dace_program().__sdfg_closure__(reevaluate)

    def closure_resolver(self, constant_args: Any, given_args: Any, parent_closure: Any = None) -> Any:
        self._fold_objects_given(constant_args)
        return self.current_program().closure_resolver(constant_args, given_args, parent_closure)

    def _fold_objects_given(self, constant_args: Optional[dict]) -> None:
        """A caller's parse gives this component an object DaCe cannot type: fold it in, as at the top.

        ``self.advection(state, dt)`` inside another orchestrated program: the
        caller's parse knows ``state`` (a value DaCe evaluated, by position or
        name), this program was created without seeing it. Each such
        argument becomes compile-time, like ``dace_compiletime_args``, at any
        depth of the call tree.
        """
        if not constant_args:
            return
        parameters = list(inspect.signature(self.function).parameters)[1 if self.method_object is not None else 0:]
        found = set()
        for position_or_name, value in constant_args.items():
            name = parameters[position_or_name] if isinstance(position_or_name, int) else position_or_name
            if isinstance(position_or_name, int) and position_or_name >= len(parameters):
                continue
            if name in parameters and is_folded_object(value):
                found.add(name)
        self.compiletime_args |= found
        if self._program is not None and found - set(self._program.constant_args):
            self._program = None  # created again with them compile-time

    def current_program(self, args: Optional[tuple] = None) -> Any:
        """The DaceProgram with its view of module globals renewed, before its closure is resolved.

        DaCe copies a function's globals when it creates the program and reads
        folded module constants from that copy; a constant changed since then
        would be keyed and parsed with its old value (``Python`` mode uses the
        new one). DaCe renews the copy in its own ``__call__``, which
        orchestra does not use, so every resolution here renews it.
        """
        from dace.frontend.python.parser import _get_locals_and_globals

        program = self.dace_program(args)
        program.global_vars = _get_locals_and_globals(program.f)
        if program.methodobj is not None:
            program.global_vars[program.objname] = program.methodobj
        return program

    def build_identity(self) -> dict[str, Any]:
        from orchestra.call_tree import function_name, source_digest

        return {
            "function": function_name(self.function),
            "source": source_digest(self.function),
        }

    # ------------------------------------------------------------------- call
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            if self._reported:
                return self._call(args, kwargs)
            return self._first_call(args, kwargs)
        except OrchestraError as error:
            if os.environ.get("ORCHESTRA_TRACEBACK"):
                raise
            raise _as_one_message(error) from None

    def _first_call(self, args: tuple, kwargs: dict) -> Any:
        if _SPLIT_DEPTH.get() == 0 and not self.config.on_gpu:  # the job's first call is collective
            _ensure_log_handler(self.config.rank)
            settle_threads(_mpi_comm_or_none(self.config.communicator), self.config.rank)
        with first_call_report.collecting() as first_call:  # None inside an outer first call
            start = time.perf_counter()
            result = self._call(args, kwargs)
        self._reported = True
        if first_call is not None and first_call.obtained and self.config.rank == 0:
            log.info("%s", first_call_report.summary(self.label, time.perf_counter() - start, first_call))
        return result

    def _call(self, args: tuple, kwargs: dict) -> Any:
        depth = _SPLIT_DEPTH.get()
        if depth < self.config.split_depth or self._split_path() is not None:
            return self._run_python_body(depth, args, kwargs)
        if self._edited_split:
            return self._run_edited_split(depth, args, kwargs)
        clock = self.clock
        if clock is not None:
            clock.start()
        args, kwargs = self._binder.complete(args, kwargs)  # defaults explicit: never folded silently
        if depth and arguments_share_memory(args, kwargs):  # a split part given one array twice: as inlined,
            return self._run_python_body(depth, args, kwargs)  # in call order (its stencils one by one)
        if clock is not None:
            clock.lap("bind")
        caller = None
        if self._program is not None:  # one program per distinct set of folded values
            folded = self._folded(depth, self._program.argnames, args, kwargs)
            caller = self._select(self._callers.get(folded, ()))
        if clock is not None:
            clock.lap("check")
        obtained = caller is None
        if caller is None:
            if self._build_only:
                return None
            caller = self._obtain(args, kwargs)
            if caller is None:
                return self._run_edited_split(depth, args, kwargs) if self._edited_split else None
            if self.config.profile == "kernels":
                kernel_profile.register(self.label, caller, Path(caller.origin["entry"]), self.dace_program())
            program = self.dace_program()
            self._constant = frozenset(program.constant_args)
            folded = self._folded(depth, program.argnames, args, kwargs)
            values = FoldedValues.of(program, _compiletime_values(program, args, kwargs))
            # keeps folded objects alive (identity); the newest program is tried first
            self._callers.setdefault(folded, []).insert(0, (values, caller, args, kwargs))
            self._caller, self._last_values = caller, values
            if clock is not None:
                clock.skip()
        if self._record is None:
            result = caller(args, kwargs)  # laps "marshal" and "library"
            if caller.has_callbacks:
                report_mid_call_changes(self.label, self.config.rank, self._last_values, caller)
        else:
            result, recorded = self._record(caller, args, kwargs)
            if recorded:
                self._record = None  # one call per program
        if self._returned is not None:  # the objects Python mode returns, not DaCe's copies
            result = self._returned(args, kwargs)
        if clock is not None:
            clock.lap("return")
            clock.stop(obtained)
        return result

    def _folded(self, depth: int, argnames: list[str], args: tuple, kwargs: dict) -> tuple:
        """What selects this call's program: the folded values; for a split part, its arrays' layouts too.

        A whole build inlines each call of a component with the arrays of that
        call; a split part is a program of its own, so a component called with
        full arrays and with views (``q[:-1, :-1, :]``) in one step gets a
        program for each layout instead of a refusal.
        """
        folded = folded_identity(self._constant, argnames, args, kwargs)
        return folded + array_layouts(args, kwargs) if depth else folded

    def _run_python_body(self, depth: int, args: tuple, kwargs: dict) -> Any:
        """A split build's outer call: the method's Python body, as in ``Python`` mode.

        The orchestrated components it calls see one more level of depth; at
        ``split_depth`` they are built and run as programs of their own.
        """
        if self.label not in _SPLIT_LOGGED and not self._edited_split:  # once per program name, on one rank
            _SPLIT_LOGGED.add(self.label)
            _ensure_log_handler(self.config.rank)
            if self.config.rank == 0:
                if depth < self.config.split_depth:
                    log.info("%s: split build (split_depth %d): runs its Python body at depth %d; the orchestrated "
                             "components it calls at depth %d are each built on their own", self.label,
                             self.config.split_depth, depth, depth + 1)
                else:
                    log.info("%s: split build (split_at %s): runs its Python body, as it holds %s; the "
                             "orchestrated components it calls are each built on their own", self.label,
                             ",".join(self._split_names()), self._split_path())
        token, body = _SPLIT_DEPTH.set(depth + 1), set_body_config(self.config, orchestrate)
        running = _RUNNING_BODIES.set(_RUNNING_BODIES.get() + (self.method_object,))
        try:
            if self.method_object is not None:
                return self.function(self.method_object, *args, **kwargs)
            return self.function(*args, **kwargs)
        finally:
            _RUNNING_BODIES.reset(running)
            reset_body_config(body)
            _SPLIT_DEPTH.reset(token)

    def _run_edited_split(self, depth: int, args: tuple, kwargs: dict) -> Any:
        """``split_at=("edited",)`` after an edit: the Python body, the edited components' classes split at below."""
        token = _EDITED_SPLIT.set(self._edited_split)
        try:
            return self._run_python_body(depth, args, kwargs)
        finally:
            _EDITED_SPLIT.reset(token)

    def _split_names(self) -> tuple[str, ...]:
        """The classes split at: those ``split_at`` names, and those an enclosing edited split chose."""
        edited = _EDITED_SPLIT.get()
        if not self.config.split_at and edited is None:  # every call asks: the common case stays cheap
            return ()
        return tuple(name for name in self.config.split_at if name != EDITED) + (edited or ())

    def _split_path(self) -> Optional[str]:
        """Where this call's object holds a component of a class split at (None: nowhere, or no names)."""
        names = self._split_names()
        if not names:
            return None
        if self._held_split is None or self._held_split[0] != names:  # the component tree is set up by now
            self._held_split = (names, named_component_below(self.method_object, names, _RUNNING_BODIES.get()))
        return self._held_split[1]

    def _decides_edited_split(self) -> bool:
        """``split_at=("edited",)`` and this is the outermost orchestrated call, not decided yet."""
        return self._edited_split is None and EDITED in self.config.split_at and _EDITED_SPLIT.get() is None

    def _select(self, candidates: Sequence[tuple[FoldedValues, FastCaller, tuple, dict]]) -> Optional[FastCaller]:
        """The program whose folded values (``self.n``, module constants...) all still hold, if any."""
        for values, caller, _args, _kwargs in candidates:
            if values.changed() is None:
                self._last_values = values
                return caller
        if self._last_values is not None:  # what changed since the last call
            reason = self._last_values.changed()
            if reason is not None:
                log.info("%s: %s; obtaining the program for the new value", self.label, reason)
        return None

    @property
    def fast_caller(self) -> Optional[FastCaller]:
        """The fast path of the program obtained last (None before the first call)."""
        return self._caller

    def _code_path(self) -> tuple[Optional[CodePathClass], int]:
        communicator = self.config.communicator
        partitioner = getattr(communicator, "partitioner", None)
        if partitioner is None:
            return None, 0
        rank = communicator.rank
        return code_path_class(partitioner, rank), int(partitioner.tile_index(rank))

    def _obtain(self, args: tuple, kwargs: dict) -> Optional[FastCaller]:
        """Find or build the library for this call, collectively over all ranks, and load it.

        The steps, each in :mod:`orchestra.pipeline`: request -> key -> entry
        (found, or built and published) -> loaded program.
        """
        from orchestra.cache.store import BuildStore
        from orchestra.pipeline.obtain import ensure_built, load_entry
        from orchestra.pipeline.request import key_request

        config = self.config
        _ensure_log_handler(config.rank)
        gpu = GpuTarget.from_config(config.cuda_arch) if config.on_gpu else None  # never probes a device
        # Called from a split build's Python body, which may call a component on some ranks only
        # (`if self.on_west_edge: ...`): each rank obtains the program alone (the key's file lock makes one
        # rank build it while the others of that key wait for it, then find it), so no rank waits in a
        # collective that others never enter.
        alone = _SPLIT_DEPTH.get() > 0
        with dace_settings(gpu=gpu):
            coordinator = BuildCoordinator(None if alone else config.communicator, config.build_timeout_s)
            # Every step that may fail on some ranks only is collective: a failure raises everywhere.
            keyed = coordinator.collectively(
                lambda: key_request(self._request(args, kwargs, gpu)), f"computing the build key of {self.label}"
            )
            store = BuildStore(config.cache_root)
            if self._decides_edited_split():
                self._edited_split, reason = agreed_edited_split(keyed, store, coordinator, self.method_object)
                if config.rank == 0 and self._edited_split:
                    log.info("%s: split build (split_at %s) at %s: no build of its key, and %s; the calls on the "
                             "way to them run their Python body, each orchestrated component they call is a "
                             "program of its own", self.label, EDITED, ",".join(self._edited_split), reason)
                elif config.rank == 0:
                    log.info("%s: split_at %s: one program, as %s", self.label, EDITED, reason)
                if self._edited_split:
                    return None
            mode = config.orchestration
            ensured = ensure_built(
                keyed, store, coordinator, may_build=mode is not DaCeOrchestration.Run,
                lowering_helpers=config.lowering_helpers,
                # alone, a rank does not know how many of its node's ranks build at once: no processes by default
                build_processes=0 if alone and config.build_processes is None else config.build_processes,
                alone_rank=config.rank if alone else None,
            )
            self.build_seconds = ensured.seconds_here
            self.built_here = self.build_seconds is not None
            if self.built_here and config.rank == 0 and not alone and EDITED not in config.split_at:
                hint = edit_hint(keyed, store, self.method_object)
                if hint is not None:
                    log.info("%s: %s", self.label, hint)
            if mode is DaCeOrchestration.Build:
                return self._end_build_only(coordinator)
            entry, loaded = load_entry(keyed, store, coordinator)
            self.load_seconds = loaded.seconds
            if not config.on_gpu:
                apply_threads(loaded.compiled_sdfg)
            if config.rank == 0:
                log.info("%s: loaded from cache %s in %.2f s", self.label, entry.path, loaded.seconds)
            first_call_report.record(first_call_report.Obtained(
                self.label, ensured.built_anywhere, entry.manifest.created, entry.manifest.stage_seconds, loaded.seconds
            ))
            origin = {
                "key": keyed.key, "entry": str(entry.path), "library": entry.manifest.library,
                "cache_root": str(store.root),
            }
            return FastCaller(keyed.request.program, loaded.compiled_sdfg, self.clock, origin)

    def _request(self, args: tuple, kwargs: dict, gpu: Optional[GpuTarget]) -> BuildRequest:
        config = self.config
        code_path, tile = self._code_path()
        return BuildRequest(
            label=self.label,
            program=self.current_program(args),
            function=self.function,
            args=args,
            kwargs=kwargs,
            backend=config.backend,
            options=OptimizeOptions(
                on_gpu=config.on_gpu,
                debug_checks=config.debug_checks,
                save_stages=config.verbose,
                fusion_block_bytes=config.fusion_block_bytes,
                kernel_timers=config.profile == "kernels",
                **({} if config.cpu_passes is None else {"cpu_passes": config.cpu_passes}),
            ),
            gpu=gpu,
            runs=config.orchestration.runs,
            code_path=code_path,
            tile=tile,
            split=bool(config.split_depth or config.split_at),
        )

    def _end_build_only(self, coordinator: BuildCoordinator) -> None:
        """``Build`` mode: every rank waits for all builds, then the job ends (or later calls do nothing)."""
        coordinator.barrier()
        if self.config.rank == 0:
            log.info("%s: build ready in %s (FV3_DACEMODE=Build)", self.label, self.config.cache_root)
        if self.config.exit_after_build:
            sys.stdout.flush()
            sys.stderr.flush()
            raise SystemExit(0)
        self._build_only = True
        return None


class _ReturnedObjects:
    """What the function returns when every ``return`` names parameters or ``self`` paths (``return fx, self.q``).

    Python returns those very objects; DaCe returns copies of arrays (and a
    one-element array for a number). When the source says what is returned,
    the call returns the objects themselves, read after the program ran:
    writing into them writes into the model's arrays, as in ``Python`` mode
    (:func:`orchestra.frontend.returns.returned_paths`).
    """

    def __init__(self, names: list[str], method_object: Any, expressions: list[Any], single: bool) -> None:
        self._names, self._method_object, self._expressions, self._single = names, method_object, expressions, single

    @classmethod
    def of(cls, function: Callable, method_object: Any) -> Optional["_ReturnedObjects"]:
        import ast

        from orchestra.frontend.returns import returned_paths, returns_tuple

        paths = returned_paths(function) if isinstance(function, types.FunctionType) else None
        if paths is None:
            return None
        names = list(inspect.signature(function).parameters)
        expressions = [compile(ast.Expression(body=path), "<orchestra return>", "eval") for path in paths]
        return cls(names, method_object, expressions, single=not returns_tuple(function))

    def __call__(self, args: tuple, kwargs: dict) -> Any:
        names = self._names[1:] if self._method_object is not None else self._names
        scope = dict(zip(names, args)) | kwargs
        if self._method_object is not None:
            scope[self._names[0]] = self._method_object
        values = tuple(eval(code, {}, scope) for code in self._expressions)  # noqa: S307 (parameter paths)
        return values[0] if self._single else values


def _compiletime_values(program: Any, args: tuple, kwargs: dict) -> dict[str, Any]:
    """This call's compile-time arguments by name (where folded expressions like ``state.dt`` start)."""
    given = dict(zip(program.argnames, args)) | dict(kwargs)
    return {name: given[name] for name in program.constant_args if name in given}


_PATCHED_CLASSES: dict[type, type] = {}


def _as_one_message(error: OrchestraError) -> OrchestraError:
    """``error`` as the caller's script sees it: orchestra's message alone, from the call into orchestra.

    orchestra's errors name the problem and the fix; the frames of orchestra
    and DaCe between the model's call and the raise, and the DaCe exception
    the message was made from (printed first, then "The above exception was
    the direct cause"), said it twice in up to 138 lines. The cause stays on
    the error as ``orchestra_cause`` and is logged at debug level;
    ``ORCHESTRA_TRACEBACK=1`` raises everything as it was.
    """
    cause = error.__cause__ or (None if error.__suppress_context__ else error.__context__)
    if cause is not None:
        log.debug("%s: caused by", type(error).__name__, exc_info=cause)
        error.orchestra_cause = cause  # type: ignore[attr-defined]
    error.__cause__, error.__context__, error.__suppress_context__ = None, None, True
    return error.with_traceback(None)


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
    dace_compiletime_args: Optional[Sequence[str]] = None,
) -> None:
    """Orchestrate ``obj.<method_to_orchestrate>`` in place (no-op in ``Python`` mode).

    Args:
        obj: the model object (e.g. a ``DynamicalCore``).
        config: the job's :class:`DaceConfig` (mode, backend, communicator).
        method_to_orchestrate: the method whose calls become one program.
        dace_compiletime_args: parameter names folded in at parse time (None: none).

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
    program = OrchestratedProgram(function, config, obj, dace_compiletime_args or ())
    programs[method_to_orchestrate] = program
    if method_to_orchestrate == "__call__":
        obj.__class__ = _patched_class(cls)
    else:
        obj.__dict__[method_to_orchestrate] = program


def orchestrate_function(
    config: DaceConfig, dace_compiletime_args: Optional[Sequence[str]] = None
) -> Callable[[Callable], Callable]:
    """Decorator: orchestrate a free function (returned unchanged in ``Python`` mode)."""

    def decorate(function: Callable) -> Callable:
        if not config.is_orchestrated:
            return function
        prepare_gt4py()
        return OrchestratedProgram(function, config, None, dace_compiletime_args or ())

    return decorate


def _mpi_comm_or_none(communicator: Any) -> Any:
    """The mpi4py communicator ``communicator`` wraps; None for none (or for an object that wraps none)."""
    try:
        return None if communicator is None else mpi_comm(communicator)
    except TypeError:
        return None


def _ensure_log_handler(rank: int) -> None:
    """Give orchestra's logger a stderr handler unless the application configured one."""
    if log.handlers or logging.getLogger().handlers:
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("[orchestra] %(message)s"))
    log.addHandler(handler)
    log.setLevel(log_level())
    log.propagate = False
