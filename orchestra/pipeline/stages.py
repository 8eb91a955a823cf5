"""The four build stages; see :mod:`orchestra.pipeline`."""

from __future__ import annotations

import dataclasses
import logging
import time
import warnings
from pathlib import Path
from typing import Any, Mapping, Optional

from orchestra.errors import BuildError, OrchestraError
from orchestra.pipeline.generated_code import compile_code, generate_code
from orchestra.pipeline.open_libraries import library_to_open, opened
from orchestra.pipeline.saved_program import PROGRAM_FILE, SIGNATURE_FILE, PendingSave, save_signature
from orchestra.pipeline.validation_beside import PendingValidation, validate_beside
from orchestra.passes.cpu import DEFAULT_CPU_PASSES, UNFUSED_CPU_PASSES, check_cpu_passes
from orchestra.passes.debug import DebugChecks
from orchestra.passes.simplify import SIMPLIFY_SKIP

log = logging.getLogger("orchestra")

@dataclasses.dataclass(frozen=True)
class OptimizeOptions:
    """Options of the optimize stage; all of them enter the cache key."""

    on_gpu: bool = False
    debug_checks: DebugChecks = DebugChecks()
    pool_transients: Optional[bool] = None  # None: pool on GPU only
    save_stages: bool = False
    #: CPU builds only, see orchestra.passes.cpu; () runs none; None: DEFAULT_CPU_PASSES, or
    #: UNFUSED_CPU_PASSES with debug checks (each check then follows one stencil)
    cpu_passes: Optional[tuple[str, ...]] = None
    #: bytes of rows per block of a fused map (tile_fused_maps); None: its default
    fusion_block_bytes: Optional[int] = None
    #: timers on every kernel (ORCHESTRA_PROFILE=kernels, orchestra.observe.kernel_profile)
    kernel_timers: bool = False

    def __post_init__(self) -> None:
        passes = self.cpu_passes
        if passes is None:
            passes = UNFUSED_CPU_PASSES if self.debug_checks else DEFAULT_CPU_PASSES
        object.__setattr__(self, "cpu_passes", check_cpu_passes(passes))

    def as_key(self) -> dict[str, Any]:
        return {
            "on_gpu": self.on_gpu,
            "debug_checks": self.debug_checks.as_key(),
            "pool_transients": self.pooling,
            "simplify_skip": sorted(SIMPLIFY_SKIP),
            "cpu_passes": [] if self.on_gpu else list(self.cpu_passes),
            "fusion_block_bytes": self.fusion_block_bytes,
            "kernel_timers": self.kernel_timers,
        }

    @property
    def pooling(self) -> bool:
        return self.on_gpu if self.pool_transients is None else self.pool_transients


@dataclasses.dataclass(frozen=True)
class ParsedProgram:
    """The Python code and its stencils as one SDFG, before optimization."""

    sdfg: Any
    seconds: float
    #: e.g. "5 component parse(s), 6 reused (Tendencies.__call__ x2, ...); stencils: 16 of 18 found lowered, ..."
    reuse: str = ""
    #: program data name -> where the model holds the array (``state.tracers['qc']``, ``self.lap``)
    array_paths: dict = dataclasses.field(default_factory=dict)
    #: callback symbol -> the resolver's name of the callable it runs (:mod:`.callback_bindings`);
    #: None: an SDFG not parsed by :func:`parse` (a test's), whose mapping is left as it is
    callback_bindings: Optional[dict] = None


@dataclasses.dataclass(frozen=True)
class OptimizedProgram:
    """The SDFG after simplification, expansion and memory policy."""

    sdfg: Any
    memory_report: dict
    seconds: float
    #: the innermost loop of each parallel map declared ``omp simd`` in the generated code
    #: (the CPU pass ``simd_innermost_loops``, orchestra.passes.cpu.simd)
    simd_innermost_loops: bool = False
    #: what each CPU pass changed (maps), for the build log (orchestra.passes.cpu.describe_changes)
    cpu_pass_changes: Mapping[str, int] = dataclasses.field(default_factory=dict)
    #: DaCe's validation of the program, running beside code generation (None: validated)
    validation: Optional[PendingValidation] = None


@dataclasses.dataclass(frozen=True)
class CompiledProgram:
    """A built library in ``folder`` (picklable: what a builder hands others)."""

    folder: Path
    library: Path
    sdfg_name: str
    seconds: float


@dataclasses.dataclass(frozen=True)
class LoadedProgram:
    """A library opened in this process."""

    compiled_sdfg: Any
    seconds: float


def _save_stage(sdfg: Any, folder: Optional[Path], name: str) -> None:
    if folder is not None:
        stages = folder / "stages"
        stages.mkdir(parents=True, exist_ok=True)
        sdfg.save(str(stages / f"{name}.sdfgz"), compress=True)


#: DaCe warnings that are expected when parsing stencil models and say nothing
#: to a model developer (callbacks are created on purpose by dace_inhibitor).
_EXPECTED_WARNINGS = (
    "Using sets for connectors is discouraged",
    "Performance warning: Automatically creating callback",
)


def _quiet_expected_warnings() -> warnings.catch_warnings:
    context = warnings.catch_warnings()
    context.__enter__()
    for message in _EXPECTED_WARNINGS:
        warnings.filterwarnings("ignore", message=message)
    return context


def parse(
    program: Any,
    args: tuple,
    kwargs: dict,
    save_to: Optional[Path] = None,
    repeated: Optional[Mapping[int, int]] = None,
) -> ParsedProgram:
    """[Python + stencils] -> one SDFG (nested orchestrated objects inlined).

    A component called from several places with the same argument
    descriptors is parsed once (:mod:`orchestra.pipeline.parse_reuse`);
    ``repeated`` gives the components that may be (by ``id`` of their
    orchestrated program), with their number of call sites (None: any may
    be, count unknown).
    """
    from orchestra.key.inputs import array_paths
    from orchestra.pipeline.scratch_contract import (
        check_scratch_not_given_to_callbacks,
        check_scratch_written_before_read,
    )
    from orchestra.stencils.stencil_cache import tally_summary
    from orchestra.toolchain.descendant_rebase import rebase_once_per_integration

    start = time.perf_counter()
    with rebase_once_per_integration():  # DaCe's integration of nested SDFGs, each SDFG walked once per integration
        sdfg, bindings, closure, reuse, stencils = _parse_and_restate(program, args, kwargs, repeated)
    _save_stage(sdfg, save_to, "0_parsed")
    check_scratch_not_given_to_callbacks(sdfg, closure, program.name)
    check_scratch_written_before_read(sdfg, closure, program.name)
    summary = "; ".join(part for part in (reuse.summary(), tally_summary(stencils)) if part)
    return ParsedProgram(sdfg, time.perf_counter() - start, summary, array_paths(getattr(program, "resolver", None)),
                         bindings)


def _parse_and_restate(program: Any, args: tuple, kwargs: dict, repeated: Optional[Mapping[int, int]]) -> tuple:
    """DaCe's parse of ``program``, its callbacks bound and its nested SDFGs restated for DaCe 2's contract."""
    from orchestra.frontend.symbol_inference import fast_symbol_inference
    from orchestra.pipeline.callback_bindings import CallbackSites, bind_callbacks
    from orchestra.pipeline.corrected_sdfg_call import corrected_sdfg_calls
    from orchestra.pipeline.nested_contract import restate_nested_sdfgs
    from orchestra.pipeline.parse_reuse import ParseReuse
    from orchestra.stencils.stencil_cache import lowering_tally
    from orchestra.toolchain.parse_errors_once import errors_said_once

    quiet = _quiet_expected_warnings()
    try:
        # a component called from several places is parsed once; stencils found lowered are counted;
        # sizes and strides given as plain numbers are not solved by sympy; orchestra's errors said once
        with ParseReuse(repeated) as reuse, lowering_tally() as stencils, fast_symbol_inference(), \
                CallbackSites(), corrected_sdfg_calls(), errors_said_once():
            sdfg = program.to_sdfg(*args, simplify=False, save=False, validate=False, **kwargs)
    except Exception as error:
        from orchestra.pipeline.diagnostics import explain_unreadable, function_of

        message = explain_unreadable(error, program.name, function_of(program), "parsing")
        kind = type(error) if isinstance(error, BuildError) else BuildError
        raise kind(message) from error
    finally:
        quiet.__exit__(None, None, None)
    closure = getattr(program, "resolver", None)
    # what entered the program follows DaCe 2's nested-SDFG contract; each callback runs what Python mode would
    bindings = bind_callbacks(sdfg, closure, program.name)  # first: restating may fold symbol mappings
    restate_nested_sdfgs(sdfg, program.name)
    return sdfg, bindings, closure, reuse, stencils


def optimize(parsed: ParsedProgram, options: OptimizeOptions, save_to: Optional[Path] = None) -> OptimizedProgram:
    """[SDFG] -> [optimized SDFG]: simplify, expand library nodes (simplify again if any), CPU passes, memory policy."""
    from orchestra.passes.memory import apply_memory_policy, memory_report
    from orchestra.pipeline.callback_bindings import apply_bindings
    from orchestra.passes.simplify import expand_library_nodes, simplify

    start = time.perf_counter()
    sdfg = parsed.sdfg
    changes: dict[str, int] = {}
    quiet = _quiet_expected_warnings()
    try:
        simplify(sdfg, SIMPLIFY_SKIP)
        _save_stage(sdfg, save_to, "1_simplified")
        expanded = expand_library_nodes(sdfg)
        _save_stage(sdfg, save_to, "2_expanded")
        if expanded:  # simplify runs to a fixed point: again only if expansion changed the program
            simplify(sdfg, SIMPLIFY_SKIP)
        if not options.on_gpu:  # [SDFG] -> [SDFG, maps split at regions, one OpenMP level]
            from orchestra.passes.cpu import apply_cpu_passes

            changes = apply_cpu_passes(sdfg, options.cpu_passes, options.fusion_block_bytes)
        # Order (see orchestra.passes.gpu): GPU kernels and device storage first, then the
        # memory policy (persistent/pooled device transients), then debug checks, which see
        # the final kernels and may add a device synchronisation after each.
        if options.on_gpu:
            from orchestra.passes.gpu import to_gpu

            result = to_gpu(sdfg, SIMPLIFY_SKIP)
            log.debug("%s: %d GPU kernels, callbacks on the host: %s", sdfg.name, result.kernels, result.callbacks)
        apply_memory_policy(sdfg, pool=options.pooling)
        if options.debug_checks:
            from orchestra.passes.debug import insert_debug_checks

            insert_debug_checks(sdfg, options.debug_checks, parsed.array_paths)
        if options.kernel_timers:  # last: the timers see the final kernels
            from orchestra.passes.kernel_timers import add_kernel_timers

            add_kernel_timers(sdfg)
        if parsed.callback_bindings is not None:  # passes rename symbols and merge mappings into it
            apply_bindings(sdfg, parsed.callback_bindings, sdfg.name)
        _save_stage(sdfg, save_to, "3_optimized")
        validation = validate_beside(sdfg, sdfg.name)  # waited for before anything is compiled
    except OrchestraError:
        raise
    except Exception as error:
        raise BuildError(f"optimizing {sdfg.name} failed: {error}") from error
    finally:
        quiet.__exit__(None, None, None)
    simd = not options.on_gpu and "simd_innermost_loops" in options.cpu_passes
    return OptimizedProgram(sdfg, memory_report(sdfg), time.perf_counter() - start, simd, changes, validation)


def compile_program(optimized: OptimizedProgram, folder: Path) -> CompiledProgram:
    """[optimized SDFG] -> one shared library in ``folder`` (not loaded).

    DaCe's ``SDFG.compile`` in the pinned version, with three costs taken out
    (about 7 s of an 80 s dycore build): it deep-copies the program first
    (orchestra does not reuse the optimized SDFG after this stage, so code is
    generated from it directly), and before starting the compiler it
    serializes the whole program to JSON twice, once for a hash written into
    ``include/hash.h`` (only a label in instrumentation reports) and once for
    ``program.sdfgz``. Here the label is the sha256 of the generated code,
    and ``program.sdfgz`` and the signature are written by a forked child
    from the point where code generation has fixed the program
    (:mod:`orchestra.pipeline.saved_program`).
    """
    start = time.perf_counter()
    sdfg = optimized.sdfg
    sdfg.build_folder = str(folder)
    index, name = 0, sdfg.name
    while sdfg.is_loaded():  # as DaCe does: a loaded library of that name in this process
        sdfg.name, index = f"{name}_{index}", index + 1
    saving = PendingSave(sdfg, folder)
    try:
        sdfg.fill_scope_connectors()
        try:
            with saving.when_frozen():
                code_objects = generate_code(sdfg, folder, optimized.simd_innermost_loops)
        except Exception:  # an invalid program is reported as such, also where its code generation failed
            _validated(optimized)
            raise  # (an interrupt is not held up: the child is stopped when its validation is dropped)
        _validated(optimized)
        compile_code(code_objects, folder, sdfg.name)
        saving.wait()
    except BuildError:
        raise
    except Exception as error:
        raise BuildError(f"compiling {sdfg.name} in {folder} failed: {error}") from error
    finally:
        saving.abandon()
    libraries = [
        path for path in (folder / "build").glob("lib*.so") if not path.name.startswith("libdacestub")
    ]
    if len(libraries) != 1:
        raise BuildError(f"expected one shared library in {folder / 'build'}, found {libraries}")
    library_name = libraries[0].name[len("lib") : -len(".so")]
    if library_name != sdfg.name:  # not what DaCe does; the signature must carry the library's name
        save_signature(sdfg, library_name, folder)
    return CompiledProgram(folder, libraries[0], library_name, time.perf_counter() - start)


def _validated(optimized: OptimizedProgram) -> None:
    """Wait for the program's validation beside code generation; an invalid program is a BuildError."""
    if optimized.validation is not None:
        optimized.validation.verdict()


def load(folder: Path) -> LoadedProgram:
    """[build folder] -> a callable CompiledSDFG in this process.

    Reads the small signature SDFG when the build has one (see
    :func:`~orchestra.pipeline.saved_program.save_signature`), the full program otherwise. A library this
    process already has open is opened from a private copy
    (:mod:`orchestra.pipeline.open_libraries`), so the build is never written to.
    """
    from dace.codegen.compiler import get_binary_name, get_program_handle
    from dace.sdfg import SDFG

    start = time.perf_counter()
    try:
        signature = folder / SIGNATURE_FILE
        sdfg = SDFG.from_file(str(signature if signature.exists() else folder / PROGRAM_FILE))
        library = get_binary_name(folder, sdfg_name=sdfg.name)
        path = library_to_open(library)
        compiled_sdfg = get_program_handle(path, sdfg)
        opened(path, compiled_sdfg)
    except Exception as error:
        raise BuildError(f"loading the build in {folder} failed: {error}") from error
    return LoadedProgram(compiled_sdfg, time.perf_counter() - start)
