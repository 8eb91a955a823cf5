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

import functools
import inspect
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from orchestra.calls.arguments import (
    CallBinder,
    compiletime_parameters,
    compiletime_values,
    array_layouts,
    arguments_share_memory,
    folded_identity,
    is_compiletime_annotation,
    is_folded_object,
    objects_given,
    with_compiletime_annotations,
)
from orchestra.calls.fast_path import FastCaller
from orchestra.calls.mid_call_changes import report_mid_call_changes
from orchestra.calls.returns import ReturnedObjects
from orchestra.config import DaceConfig, ensure_log_handler
from orchestra.distributed.coordinator import BuildCoordinator, mpi_comm_or_none
from orchestra.distributed.threads import settle_threads
from orchestra.errors import OrchestraError, as_one_message
from orchestra.key.call_tree import PROGRAMS_ATTRIBUTE
from orchestra.key.folded_values import FoldedValues
from orchestra.observe import first_call_report, kernel_profile
from orchestra.observe.replay.record import RecordPlan
from orchestra.observe.timings import ProgramClock, synchronize_device
from orchestra.observe.verify import Verifier, python_only
from orchestra.pipeline.split_builds import SplitRole, split_depth
from orchestra.stencils import compile_ahead
from orchestra.toolchain import prepare_gt4py

log = logging.getLogger("orchestra")

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
        if isinstance(compiletime_args, str):
            raise TypeError(
                f"dace_compiletime_args of {self.label_of(function, method_object)} must be a list of "
                f"parameter names, got the string {compiletime_args!r}: write [{compiletime_args!r}]"
            )
        self.compiletime_args = set(compiletime_args)
        self._program: Any = None
        self._caller: Optional[FastCaller] = None
        self._binder = CallBinder(function, is_method=method_object is not None, label=self.label_of(function, method_object))
        self._constant: frozenset = frozenset()  # compile-time arguments, known once parsed
        # folded arguments -> [(values folded through self and globals, FastCaller, the call that obtained it)]
        self._callers: dict[tuple, list[tuple[FoldedValues, FastCaller, tuple, dict]]] = {}
        self._last_values: Optional[FoldedValues] = None  # those of the program the last call ran
        self._build_only = False
        self._returned = ReturnedObjects.of(function, method_object)
        #: this program's part in a split build (pipeline.split_builds)
        self.split = SplitRole(self.label, config, method_object)
        self.build_seconds: Optional[float] = None
        self.load_seconds: Optional[float] = None
        self.built_here = False
        self._reported = False  # the first call's summary line was logged (orchestra.observe.first_call_report)
        #: per-call timings (orchestra.observe.timings), None unless the config asks for them
        self.clock: Optional[ProgramClock] = (
            ProgramClock(self.label, synchronize_device if config.on_gpu else None) if config.timings else None
        )
        #: records one call (orchestra.observe.replay), None unless the config asks for it
        self._record: Optional[RecordPlan] = (
            RecordPlan(config.record, config.record_call, self.label, None if config.communicator is None else config.rank)
            if config.record is not None
            else None
        )
        #: each call also run in Python mode and compared (ORCHESTRA_VERIFY), None unless the config asks
        self._verify = Verifier(self.label, config.verify, config.rank) if config.verify is not None else None
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

            from orchestra.frontend.named_program import dace_program as named_dace_program

            signature = inspect.signature(self.function)
            parameters = list(signature.parameters.values())
            if self.method_object is not None:
                parameters = parameters[1:]
            names = compiletime_parameters(self.label, self.compiletime_args, [p.name for p in parameters])
            for parameter in parameters:
                if is_compiletime_annotation(parameter.annotation):
                    names.add(parameter.name)
            for parameter, value in zip(parameters, args or ()):
                if is_folded_object(value):
                    names.add(parameter.name)
            function = with_compiletime_annotations(self.function, names)
            device = dace.DeviceType.GPU if self.config.on_gpu else dace.DeviceType.CPU
            program = named_dace_program(function, device, method=self.method_object is not None)
            if self.method_object is not None:
                program.methodobj = self.method_object
            self._program = program
        return self._program

    # SDFG-convertible protocol (nested orchestrated calls are inlined)
    def __sdfg__(self, *args: Any, **kwargs: Any) -> Any:
        from orchestra.pipeline.parse_reuse import component_sdfg

        self._last_sdfg = component_sdfg(self, args, kwargs)
        return self._last_sdfg

    def __sdfg_signature__(self) -> Any:
        return self.dace_program().__sdfg_signature__()

    def __sdfg_closure__(self, reevaluate: Any = None) -> Any:
        from orchestra.pipeline.callback_bindings import pass_every_callback

        closure = self.dace_program().__sdfg_closure__(reevaluate)
        sdfg, self._last_sdfg = getattr(self, "_last_sdfg", None), None  # the caller asks right after __sdfg__
        return pass_every_callback(closure, sdfg) if reevaluate is None and sdfg is not None else closure

    def closure_resolver(self, constant_args: Any, given_args: Any, parent_closure: Any = None) -> Any:
        self._fold_objects_given(constant_args)
        return self.current_program().closure_resolver(constant_args, given_args, parent_closure)

    def _fold_objects_given(self, constant_args: Optional[dict]) -> None:
        """A caller's parse gives this component objects DaCe cannot type: fold them in (:func:`objects_given`)."""
        found = objects_given(self.function, self.method_object is not None, constant_args)
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
        from orchestra.key.call_tree import function_name, source_digest

        return {
            "function": function_name(self.function),
            "source": source_digest(self.function),
        }

    # ------------------------------------------------------------------- call
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if python_only():  # the Python-mode half of a verified call (orchestra.observe.verify)
            return self._body(args, kwargs)()
        try:
            if self._verify is not None and self._verify.wants():
                return self._verify.call(self._body(args, kwargs), lambda: self._run(args, kwargs), self.method_object,
                                         self._binder.parameter_names, args, kwargs)
            return self._run(args, kwargs)
        except OrchestraError as error:
            if os.environ.get("ORCHESTRA_TRACEBACK"):
                raise
            raise as_one_message(error) from None

    def _run(self, args: tuple, kwargs: dict) -> Any:
        return self._call(args, kwargs) if self._reported else self._first_call(args, kwargs)

    def _first_call(self, args: tuple, kwargs: dict) -> Any:
        if split_depth() == 0 and not self.config.on_gpu:  # the job's first call is collective
            ensure_log_handler(self.config.rank)
            settle_threads(mpi_comm_or_none(self.config.communicator), self.config.rank)
        with first_call_report.collecting() as first_call:  # None inside an outer first call
            start = time.perf_counter()
            result = self._call(args, kwargs)
        self._reported = True
        if first_call is not None and first_call.obtained and self.config.rank == 0:
            log.info("%s", first_call_report.summary(self.label, time.perf_counter() - start, first_call))
        return result

    def _call(self, args: tuple, kwargs: dict) -> Any:
        depth = split_depth()
        if self.split.runs_body(depth):
            return self.split.roots(args, kwargs).run_body(depth, self._body(args, kwargs), orchestrate)
        if self.split.edited:
            return self.split.roots(args, kwargs).run_edited(depth, self._body(args, kwargs), orchestrate)
        clock = self.clock
        if clock is not None:
            clock.start()
        args, kwargs = self._binder.complete(args, kwargs)  # defaults explicit: never folded silently
        if depth and arguments_share_memory(args, kwargs):  # a split part given one array twice: as inlined,
            return self.split.run_body(depth, self._body(args, kwargs), orchestrate)  # in call order
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
                if not self.split.edited:
                    return None
                return self.split.roots(args, kwargs).run_edited(depth, self._body(args, kwargs), orchestrate)
            if self.config.profile == "kernels":
                kernel_profile.register(self.label, caller, Path(caller.origin["entry"]), self.dace_program())
            program = self.dace_program()
            self._constant = frozenset(program.constant_args)
            folded = self._folded(depth, program.argnames, args, kwargs)
            values = FoldedValues.of(program, compiletime_values(program, args, kwargs))
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

    def _body(self, args: tuple, kwargs: dict) -> Callable[[], Any]:
        """The method's Python body for this call, as ``Python`` mode runs it."""
        if self.method_object is not None:
            return lambda: self.function(self.method_object, *args, **kwargs)
        return lambda: self.function(*args, **kwargs)

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

    def _obtain(self, args: tuple, kwargs: dict) -> Optional[FastCaller]:
        """Find or build the library for this call, collectively over all ranks, and load it (None: not run)."""
        from orchestra.pipeline.obtain import obtain_program

        obtained = obtain_program(self, args, kwargs)
        self.build_seconds, self.load_seconds = obtained.build_seconds, obtained.load_seconds
        self.built_here = self.build_seconds is not None
        if obtained.build_only:
            return self._end_build_only(obtained.coordinator)
        return obtained.caller

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


_PATCHED_CLASSES: dict[type, type] = {}


def _patched_class(cls: type) -> type:
    """A subclass of ``cls`` whose ``__call__`` and SDFG protocol use the instance's program."""
    if getattr(cls, "__orchestra_patched__", False):
        return cls
    if cls not in _PATCHED_CLASSES:

        def program_of(self: Any) -> OrchestratedProgram:
            return self.__dict__[PROGRAMS_ATTRIBUTE]["__call__"]

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
    """Orchestrate ``obj.<method_to_orchestrate>`` in place.

    In ``Python`` mode nothing is orchestrated: the stencils made so far (and
    later ones) start compiling in ``config.compile_processes`` worker
    processes ahead of their first calls (:mod:`orchestra.stencils.compile_ahead`).

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
    if not config.is_orchestrated:  # stencils run one by one: they compile ahead in workers
        compile_ahead.start(config.compile_processes)
        return
    prepare_gt4py()
    cls = type(obj)
    function = getattr(cls, method_to_orchestrate, None)
    if function is None or not callable(function):
        raise AttributeError(f"{cls.__name__} has no method {method_to_orchestrate!r} to orchestrate")
    programs = obj.__dict__.setdefault(PROGRAMS_ATTRIBUTE, {})
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
