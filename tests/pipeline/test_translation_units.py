"""The generated C++ split into several files compiled at once (orchestra.toolchain.translation_units)."""

from __future__ import annotations

import doctest
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from orchestra import DaceConfig
from orchestra.examples.diffusion import DiffusionModel, initial_state
from orchestra.toolchain.compile_launcher import RECORD_NAME
from orchestra.toolchain import compile_jobs
from orchestra.toolchain.compile_jobs import UNITS_VARIABLE
from orchestra.toolchain.translation_units import split_code

SHAPE = (14, 13, 5)


def _run(mode: str, cache_root, monkeypatch, units: str) -> tuple[np.ndarray, np.ndarray]:
    monkeypatch.setenv(UNITS_VARIABLE, units)
    config = DaceConfig(None, backend="dace:cpu", orchestration=mode, cache_root=str(cache_root))
    model = DiffusionModel(config, SHAPE)
    q, total = initial_state(SHAPE, config.backend)
    model(q, total)
    model(q, total)
    return np.asarray(q).copy(), np.asarray(total).copy()


def _libraries(build: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in build.glob("lib*.so")}


def test_the_example_model_split_in_three_files_equals_one_file_and_python_mode(tmp_path, monkeypatch):
    python = _run("Python", tmp_path / "python", monkeypatch, "1")
    one = _run("BuildAndRun", tmp_path / "one", monkeypatch, "1")
    split = _run("BuildAndRun", tmp_path / "split", monkeypatch, "3")
    (first,) = (tmp_path / "split").glob(f"DiffusionModel.__call__/*/build/{RECORD_NAME}")
    compiled, library = first.read_text().split(), _libraries(first.parent)
    shutil.rmtree(first.parent.parent.parent)  # the build gone, its objects kept: built again, every file reused
    again = _run("BuildAndRun", tmp_path / "split", monkeypatch, "3")
    (second,) = (tmp_path / "split").glob(f"DiffusionModel.__call__/*/build/{RECORD_NAME}")
    for names, outcome in ((compiled, "compiled"), (second.read_text().split(), "reused")):
        assert names[0::2] == [outcome] * len(names[0::2]) and len(names) >= 2 * 3, names
    assert _libraries(second.parent) == library  # linked from reused objects: the same library, byte for byte
    for got in (one, split, again):
        assert all(np.array_equal(a, b) for a, b in zip(got, python))
    (one_file,) = (tmp_path / "one").glob("DiffusionModel.__call__/*/src/cpu/*.cpp")
    files = sorted((tmp_path / "split").glob("DiffusionModel.__call__/*/src/cpu/*.cpp"))
    assert len(files) == 3, files
    main = next(path for path in files if not path.stem.endswith(("_part1", "_part2"))).read_text()
    moved = re.findall(r"^\s*(__orchestra_\w+_block_\d+)\(", main, re.MULTILINE)
    assert moved, "no block of the program was moved out of its main file"
    defined = "".join(path.read_text() for path in files if path.stem.endswith(("_part1", "_part2")))
    assert all(f"void {name}(" in defined for name in moved)
    assert len(main) < len(one_file.read_text())


_PROGRAM = """#include <dace/dace.h>
struct p_state_t {
    double * __restrict__ buffer;
};
inline void nested_sdfg_1(p_state_t *__state, double* __restrict__ a, int __i) {
    a[__i] = a[__i] * 2.0;
}
void __program_p_internal(p_state_t*__state, double * __restrict__ a, double (*f)(double), int n)
{
    double x;
    double table[4];
    int64_t k;
%(body)s
}
DACE_EXPORTED void __program_p(p_state_t *__state, double * __restrict__ a, double (*f)(double), int n)
{
    __program_p_internal(__state, a, f, n);
}
"""

_STATE = """    {
        x = f(x) + table[1];
        for (auto __i = 0; __i < n; __i += 1) {
            nested_sdfg_1(__state, &a[0], __i);
        }
    }"""


def test_a_moved_block_gets_what_it_uses_scalars_copied_in_and_out_arrays_by_reference():
    main, (part,) = split_code(_PROGRAM % {"body": "\n".join([_STATE] * 4)}, "p", 2)
    calls = re.findall(r"^    (__orchestra_p_block_\d+)\(__state, a, f, n, x, table\);$", main, re.MULTILINE)
    assert len(calls) == 2  # two of the four blocks moved, k (unused) not passed
    for name in calls:
        definition = part.split(f"void {name}(", 1)[1].split("\n}\n", 1)[0]
        assert definition.startswith("p_state_t*__state, double * __restrict__ a, double (*f)(double), int n, "
                                     "double &x__outer, double (&table)[4])")
        assert "double x = x__outer;" in definition and definition.rstrip().endswith("x__outer = x;")
    assert "inline void nested_sdfg_1(" in part  # the per-point function its blocks call, inlined there
    assert main.count("x = f(x) + table[1];") == 2 and part.count("x = f(x) + table[1];") == 2


@pytest.mark.parametrize("body, why", [
    ("    {\n        goto __state_exit;\n    }\n    __state_exit:;", "a goto leaves the block"),
    ("    for (k = 0; k < 2; k = k + 1) {\n        {\n            break;\n        }\n    }", "break"),
    ("    {\n        return;\n    }", "return"),
    ("    #pragma omp parallel\n    {\n        x = 1.0;\n    }", "the body of a pragma (every thread would run the call)"),
    ("    if (n > 0)\n    {\n        x = 1.0;\n    }", "the body of an if"),
    ("#if 0\n    {\n        x = 1.0;\n    }\n#endif", "preprocessor conditions"),
])
def test_blocks_that_leave_by_a_jump_stay_in_place(body, why):
    assert split_code(_PROGRAM % {"body": body}, "p", 2) is None, why


def test_a_file_with_anything_but_functions_and_the_state_struct_at_file_scope_is_not_split():
    program = _PROGRAM % {"body": "\n".join([_STATE] * 4)}
    assert split_code(program, "p", 2) is not None
    assert split_code("static double counter = 0;\n" + program, "p", 2) is None
    scratch = "double *plane;\n#pragma omp threadprivate(plane)\n"  # measured slower when shared between files
    assert split_code(program.replace("inline void", scratch + "inline void", 1), "p", 2) is None
    assert split_code(program.replace("inline void", "inline void __attribute__((unused))", 1), "p", 2) is None


_PARALLEL_STATE = """    {
        #pragma omp parallel for
        for (int __k = 0; __k < n; __k += 1) {
            {
                x = x + a[__k];
            }
            {
                #pragma omp simd
                for (int __i = 0; __i < n; __i += 1) {
                    {
                        a[__i] = a[__i] * 2.0 + __k;
                    }
                }
            }
        }
    }"""


def test_blocks_inside_a_map_stay_there():
    """A map's loops keep their bodies (measured: blocks moved out of the dycore's parallel vertical loop cost
    3.4x per step); the state block holding the map moves whole."""
    main, parts = split_code(_PROGRAM % {"body": "\n".join([_PARALLEL_STATE] * 2)}, "p", 4)
    assert "#pragma omp parallel for" not in main and "int &__k" not in "\n".join(parts)
    assert sum(part.count("#pragma omp parallel for") for part in parts) == 2


def test_a_block_inside_an_openmp_parallel_block_takes_the_shared_variables_by_reference():
    body = "    #pragma omp parallel\n    {\n" + "\n".join(["        {\n            x = x + 1.0;\n        }"] * 3) + "\n    }"
    main, parts = split_code(_PROGRAM % {"body": body}, "p", 4)
    assert "#pragma omp parallel" in main
    assert "double &x)" in "\n".join(parts) and "__outer" not in "\n".join(parts)


def test_a_build_compiles_on_its_share_of_the_node_and_never_fewer_than_dace_asks():
    result = doctest.testmod(compile_jobs)
    assert result.failed == 0 and result.attempted == 3
