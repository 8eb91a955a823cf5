"""Which loops of DaCe's generated code ``simd_innermost_loops`` declares ``omp simd``, and which it leaves.

Results with the pass are compared bitwise in ``test_cpu_passes.py`` (and by
every orchestrated test, since the pass is on by default).
"""

from __future__ import annotations

from orchestra.passes.cpu.simd import vectorize_innermost_loops

#: the parameters of the program's parallel maps, as the SDFG gives them
MAPS = {("__i", "__j"), ("__m", "__i", "__j")}

MAP_2D = """#pragma omp parallel for
for (int __i = 0; __i < 24; __i += 1) {
    for (int __j = 0; __j < 24; __j += 1) {
        BODY
    }
}"""


def test_the_innermost_loop_of_a_two_dimensional_parallel_map_is_declared_simd():
    code, marked = vectorize_innermost_loops(MAP_2D.replace("BODY", "b[__j] = a[__j];"), MAPS)
    lines = code.splitlines()
    assert marked == 1 and lines[2].strip() == "#pragma omp simd" and lines[3].strip().startswith("for (int __j")


def test_a_map_of_three_dimensions_gets_it_on_its_last_loop_not_on_a_loop_inside_its_body():
    code = """#pragma omp parallel for
for (int __m = 0; __m < 2; __m += 1) {
    for (int __i = 0; __i < 24; __i += 1) {
        for (int __j = 0; __j < 24; __j += 1) {
            for (int __k = 0; __k < 8; __k += 1) {
                b[__k] = a[__k];
            }
        }
    }
}"""
    marked_code, marked = vectorize_innermost_loops(code, {("__m", "__i", "__j")})
    lines = marked_code.splitlines()
    assert marked == 1 and lines[3].strip() == "#pragma omp simd" and lines[4].strip().startswith("for (int __j")
    # a chain that more than one map could be, (__m, __i) or (__m, __i, __j), is left alone; one that
    # is no map's (a loop inside a body, a sweep with an order of its own) too
    assert vectorize_innermost_loops(code, {("__m", "__i"), ("__m", "__i", "__j")})[1] == 0
    assert vectorize_innermost_loops(code, {("__i", "__j")})[1] == 0


def test_a_sequential_map_inside_a_parallel_one_gets_it_too():
    code = "#pragma omp parallel for\nfor (int __k = 0; __k < 8; __k += 1) {\n{\n" + MAP_2D.replace(
        "#pragma omp parallel for\n", "").replace("BODY", "b[__j] = a[__j];") + "\n}\n}"
    marked_code, marked = vectorize_innermost_loops(code, MAPS)
    lines = marked_code.splitlines()
    assert marked == 1 and lines[lines.index("    #pragma omp simd") + 1].strip().startswith("for (int __j")


def test_one_dimensional_maps_collapsed_nests_and_loops_of_no_map_are_left_alone():
    one_d = "#pragma omp parallel for\nfor (int __i = 0; __i < 24; __i += 1) {\n b[__i] = a[__i];\n}"
    collapsed = MAP_2D.replace("parallel for", "parallel for collapse(2)").replace("BODY", "b[__j] = a[__j];")
    no_map = MAP_2D.replace("BODY", "b[__j] = a[__j];").replace("__j", "__n")
    for code in (one_d, collapsed, no_map):
        assert vectorize_innermost_loops(code, MAPS) == (code, 0)


def test_a_map_writing_through_atomics_here_or_in_a_function_it_calls_is_left_alone():
    atomic = MAP_2D.replace("BODY", "dace::wcr_fixed<dace::ReductionType::Sum, double>::reduce_atomic(s, a[__j]);")
    assert vectorize_innermost_loops(atomic, MAPS)[1] == 0
    nested = (
        "inline void nested_sdfg_1(state_t *__state, double* s, int __j) {\n"
        "    #pragma omp atomic\n    s[0] += 1.0;\n}\n"
        + MAP_2D.replace("BODY", "nested_sdfg_1(__state, s, __j);")
    )
    assert vectorize_innermost_loops(nested, MAPS)[1] == 0
    clean = nested.replace("    #pragma omp atomic\n", "")
    assert vectorize_innermost_loops(clean, MAPS)[1] == 1


def test_daces_source_map_markers_are_kept():
    code = "\n".join(line + "////__DACE:0:1:2" for line in MAP_2D.replace("BODY", "b[__j] = a[__j];").splitlines())
    marked_code, marked = vectorize_innermost_loops(code, MAPS)
    assert marked == 1 and marked_code.count("////__DACE:0:1:2") == code.count("////__DACE:0:1:2")
