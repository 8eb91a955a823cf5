"""The C++ compile of one built program, as one file and split into several (orchestra.toolchain.translation_units).

Usage::

    python scripts/compile_units.py BUILD_FOLDER [UNITS ...]

``BUILD_FOLDER`` is a build's cache folder (``<cache>/<Program>/<key>``, with
``src/cpu/<program>.cpp`` as orchestra wrote it). For each number of files
(default ``1 2``) the folder is copied, the program file split, and DaCe's
build (CMake, Ninja, ``compiler.build_jobs`` = that number) run on the copy
with DaCe's command cache off; prints the wall and CPU seconds of each build
and the load. The libraries' results are compared by the tests
(``tests/pipeline/test_translation_units.py``), not here.
"""

from __future__ import annotations

import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    import dace
    from dace.codegen import codegen, compiler  # noqa: F401 (codegen registers DaCe's targets)

    from orchestra.toolchain.translation_units import split_code

    folder, counts = Path(sys.argv[1]), [int(n) for n in sys.argv[2:]] or [1, 2]
    (source,) = [path for path in (folder / "src" / "cpu").glob("*.cpp") if "_part" not in path.stem]
    program = source.stem
    code = source.read_text()
    print(f"{program}: {code.count(chr(10))} lines; load {os.getloadavg()}", flush=True)
    for units in counts:
        with tempfile.TemporaryDirectory(prefix="compile_units_") as scratch:
            copy = Path(scratch) / "program"
            shutil.copytree(folder, copy, ignore=shutil.ignore_patterns("build", "perf", "stages", "*.sdfgz"))
            files = [f"cpu,,{program}.cpp"]
            if units > 1:
                split = split_code(code, program, units)
                if split is None:
                    print(f"{units} files: the program is not split", flush=True)
                    continue
                main_text, parts = split
                (copy / "src" / "cpu" / f"{program}.cpp").write_text(main_text)
                for index, text in enumerate(parts, start=1):
                    (copy / "src" / "cpu" / f"{program}_part{index}.cpp").write_text(text)
                    files.append(f"cpu,,{program}_part{index}.cpp")
            (copy / "dace_files.csv").write_text("\n".join(files))
            with dace.config.temporary_config():
                dace.Config.set("compiler", "build_jobs", value=str(max(1, units)))
                dace.Config.set("compiler", "command_cache", value=False)
                cpu, start = _children_cpu(), time.perf_counter()
                compiler.configure_and_compile(str(copy), program)
                wall, cpu = time.perf_counter() - start, _children_cpu() - cpu
        print(f"{units} file(s): {wall:.1f} s wall, {cpu:.1f} s CPU; load {os.getloadavg()}", flush=True)


if __name__ == "__main__":
    main()
