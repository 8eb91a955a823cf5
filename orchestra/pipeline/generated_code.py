"""The C++ of an optimized program: DaCe's code generation and what orchestra does to its output.

orchestra's edits of the generated code: ``omp simd`` on the maps' innermost
loops (when asked), thread-private buffers in every OpenMP team, the kernel
report's folder read from the environment, and the program split into several
files compiled at once (:mod:`orchestra.toolchain.translation_units`).
"""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path
from typing import Any, Iterator

from orchestra.errors import BuildError, OrchestraError

log = logging.getLogger("orchestra")

def generate_code(sdfg: Any, folder: Path, simd_innermost_loops: bool) -> list:
    """DaCe's code generation and orchestra's edits of its output (module docstring), as DaCe's code objects.

    On failure the SDFG is kept as ``dace_debug/failing.sdfgz`` in ``folder``.
    """
    from dace.codegen import codegen

    from orchestra.passes.fusion.plane_allocation import allocate_in_code_objects
    from orchestra.toolchain.control_flow_raising import raising_only_where_possible
    from orchestra.toolchain.function_sharing import hashing_only_where_shared
    from orchestra.toolchain.inference_symbols import inference_with_symbols_once

    try:
        # DaCe's descriptor walk once per SDFG, not per nested SDFG node; no control-flow raising where none can be;
        # only nested SDFGs that may equal another hashed in the search for functions to share
        with inference_with_symbols_once(), raising_only_where_possible(), hashing_only_where_shared():
            code_objects = codegen.generate_code(sdfg, validate=False)
        if simd_innermost_loops:
            _vectorize_innermost_loops(sdfg, code_objects)
        allocate_in_code_objects(code_objects)  # thread-private buffers in any OpenMP team
    except Exception as error:
        kept = folder / "dace_debug" / "failing.sdfgz"
        try:
            sdfg.save(str(kept), compress=True)
        except Exception:  # the original error matters more
            raise error from None
        raise BuildError(f"generating code for {sdfg.name} failed: {error} (the SDFG: {kept})") from error
    _report_folder_from_environment(code_objects, folder)
    return code_objects


def in_files(code_objects: list, program: str) -> list:
    """``code_objects`` with the program's CPU file split into files compiled at once, where it can be.

    The given list is left as it is (what to compile again if the split program fails to).
    """
    from orchestra.toolchain.translation_units import split_code_objects

    try:
        split = split_code_objects(code_objects, program)
    except OrchestraError:
        raise
    except Exception as error:  # a defect of the split, never a reason to fail the build
        log.warning("%s: the generated C++ stays one file (splitting it failed: %s)", program, error)
        return code_objects
    if len(split) > len(code_objects):
        log.debug("%s: the generated C++ in %d files, compiled at once", program, len(split) - len(code_objects) + 1)
    return split


def compile_code(code_objects: list, folder: Path, program: str) -> None:
    """Write the program's files into ``folder`` and compile them with DaCe's build.

    The program is split into several files where it can be (:func:`in_files`);
    if the split program does not compile, it is compiled again as DaCe wrote it,
    with a warning (a defect of the split must not cost a build).
    """
    from dace.codegen import compiler

    def write_and_compile(objects: list) -> None:
        program_folder = compiler.generate_program_folder(None, objects, str(folder))
        write_hash_header(program, objects, folder)
        compiler.configure_and_compile(program_folder, program)

    with _compile_jobs():
        files = in_files(code_objects, program)
        try:
            write_and_compile(files)
        except Exception as error:
            if files is code_objects:
                raise
            log.warning("%s: compiling the program split into %d files failed; compiling it as one file "
                        "(set %s=1 to skip the split; please report): %s", program,
                        len(files) - len(code_objects) + 1, "ORCHESTRA_COMPILE_UNITS", str(error)[-2000:])
            write_and_compile(code_objects)


@contextlib.contextmanager
def _compile_jobs() -> Iterator[None]:
    """DaCe's ``compiler.build_jobs`` raised to this rank's share of its node's cores while compiling (if more)."""
    from dace.config import Config

    from orchestra.toolchain.compile_jobs import compile_jobs

    before = Config.get("compiler", "build_jobs")
    Config.set("compiler", "build_jobs", value=compile_jobs())
    try:
        yield
    finally:
        Config.set("compiler", "build_jobs", value=before)


def _vectorize_innermost_loops(sdfg: Any, code_objects: list) -> None:
    from orchestra.passes.cpu.simd import map_parameters, vectorize_innermost_loops

    maps = map_parameters(sdfg)
    for code_object in code_objects:
        if code_object.language == "cpp" and code_object.target.target_name == "cpu":
            code_object.code, marked = vectorize_innermost_loops(code_object.code, maps)
            log.debug("%s: %d innermost loops declared omp simd", code_object.name, marked)


#: Where an instrumented library writes its report, read when the report is saved (end of the program).
REPORT_FOLDER_VARIABLE = "ORCHESTRA_KERNEL_REPORT_DIR"


def _report_folder_from_environment(code_objects: list, folder: Path) -> None:
    """Make an instrumented library save its report where ``ORCHESTRA_KERNEL_REPORT_DIR`` says.

    DaCe writes the build folder's ``perf/`` into the generated code as a
    literal; orchestra builds in a staging folder that is renamed when
    published, and a cache entry may be shared and read-only. The literal is
    replaced by the variable's value when the report is saved (the current
    directory if unset); the literal must be found exactly where DaCe puts it.
    """
    literal = f'report.save("{folder / "perf"}",'
    replacement = (
        f'report.save((std::getenv("{REPORT_FOLDER_VARIABLE}") ? '
        f'std::getenv("{REPORT_FOLDER_VARIABLE}") : "."),'
    )
    for code_object in code_objects:
        if "report.save(" in code_object.code:
            if literal not in code_object.code:
                raise BuildError(f"an instrumented program saves its report elsewhere than {literal!r}: "
                                 "this DaCe version is not the one orchestra was written for")
            code_object.code = code_object.code.replace(literal, replacement)


def write_hash_header(name: str, code_objects: list, folder: Path) -> None:
    """``include/hash.h``, which the generated code includes: here the sha256 of that code."""
    import hashlib

    digest = hashlib.sha256()
    for code_object in code_objects:
        digest.update(code_object.clean_code.encode())
    header = folder / "include" / "hash.h"
    header.parent.mkdir(parents=True, exist_ok=True)
    header.write_text(f'#define __HASH_{name} "{digest.hexdigest()}"\n')
