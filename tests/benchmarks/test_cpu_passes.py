"""The optimize stage's CPU passes: what they change in the SDFG, and that results stay bitwise equal.

A small orchestrated function calls a stencil with horizontal regions along
both indices (edge rows and columns, a corner, the row next to an edge: the
patterns of the dycore's face fluxes and Laplacian) and a pointwise stencil.
Its SDFG goes through the optimize stage with and without the passes; both
libraries run on the same inputs and must agree bit for bit.
"""

from __future__ import annotations

import ast
import copy

import numpy as np
import pytest
from gt4py.cartesian.gtscript import PARALLEL, I, J, Field, computation, horizontal, interval, region

from orchestra import DaceConfig, FrozenStencil, orchestrate
from orchestra.errors import ConfigurationError
from orchestra.passes.cpu import CPU_PASS_ORDER, DEFAULT_CPU_PASSES, check_cpu_passes
from orchestra.passes.cpu.openmp import single_parallel_level
from orchestra.passes.cpu.regions import cut_points, dead_branches_hidden, evaluate, specialize, split_region_maps
from orchestra.pipeline.stages import OptimizeOptions

FloatField = Field[np.float64]
N_HALO = 2


def edges(q: FloatField, out: FloatField):
    with computation(PARALLEL), interval(...):
        out = 0.25 * (q[-1, 0, 0] + q[1, 0, 0] + q[0, -1, 0] + q[0, 1, 0])
        with horizontal(region[:, J[0]], region[:, J[-1]]):
            out = 0.5 * q + q[1, 0, 0] / 3.0
        with horizontal(region[:, J[0] + 1]):
            out = out + 0.1 * q[0, -1, 0]
        with horizontal(region[I[0], J[0]], region[I[-1], J[-1]]):
            out = q - 0.125 * q[0, 1, 0]
        with horizontal(region[I[-1], :]):
            out = out * 0.75


def scale(out: FloatField, q: FloatField):
    with computation(PARALLEL), interval(...):
        q = 1.5 * out - q / 7.0


class EdgeModel:
    """Two sub-steps of ``edges`` then ``scale`` on the compute domain."""

    def __init__(self, config: DaceConfig, shape: tuple[int, int, int]) -> None:
        origin = (N_HALO, N_HALO, 0)
        domain = (shape[0] - 2 * N_HALO, shape[1] - 2 * N_HALO, shape[2])
        self.edges = FrozenStencil(edges, backend=config.backend, origin=origin, domain=domain)
        self.scale = FrozenStencil(scale, backend=config.backend, origin=origin, domain=domain)
        orchestrate(obj=self, config=config)

    def __call__(self, q, out):
        for _ in range(2):
            self.edges(q, out)
            self.scale(out, q)


def _inputs(shape):
    import gt4py.storage as gt_storage

    rng = np.random.default_rng(7)
    q = gt_storage.from_array(rng.random(shape), backend="dace:cpu")
    out = gt_storage.zeros(shape, np.float64, backend="dace:cpu")
    return q, out


def _parsed(tmp_path_factory, shape):
    from orchestra.pipeline.stages import parse
    from orchestra.toolchain import dace_settings

    cache = tmp_path_factory.mktemp("cpu_passes_cache")
    model = EdgeModel(DaceConfig(None, backend="dace:cpu", orchestration="BuildAndRun", cache_root=cache), shape)
    args = _inputs(shape)
    with dace_settings():
        program = model.__orchestra_programs__["__call__"].dace_program(args)
        return parse(program, args, {}).sdfg


def _optimized(parsed, **options):
    from orchestra.pipeline.stages import ParsedProgram, optimize
    from orchestra.toolchain import dace_settings

    with dace_settings():
        return optimize(ParsedProgram(copy.deepcopy(parsed), 0.0), OptimizeOptions(**options))


@pytest.fixture(scope="module")
def parsed(tmp_path_factory):
    return _parsed(tmp_path_factory, (12, 11, 4))


# --------------------------------------------------------------------------- conditions
def _expr(text):
    return ast.parse(text, mode="eval").body


@pytest.mark.parametrize(
    "text,low,high,expected",
    [
        ("(j >= 1) and (j < 2)", 1, 1, True),
        ("(j >= 1) and (j < 2)", 2, 9, False),
        ("(j >= 1) and (j < 2)", 0, 1, None),
        ("(j >= (25 + (- 2))) and (j < (25 + (- 1)))", 23, 23, True),
        ("(i >= 0) and (i < 1) and (j >= 0) and (j < 1)", 2, 9, False),
        ("(i >= 0) and (i < 1) and (j >= 0) and (j < 1)", 0, 0, None),
        ("(j == 3) or (j > 7)", 4, 6, False),
        ("not (j <= 4)", 5, 9, True),
        ("j + 1 < 3", 0, 9, None),  # not a plain comparison: left alone
    ],
)
def test_conditions_are_evaluated_over_a_piece(text, low, high, expected):
    assert evaluate(_expr(text), "j", low, high) is expected


def test_unknown_pass_names_are_refused_with_the_choices():
    with pytest.raises(ConfigurationError, match="split_region_maps"):
        OptimizeOptions(cpu_passes=("fuse_everything",))
    assert check_cpu_passes(reversed(CPU_PASS_ORDER)) == CPU_PASS_ORDER


def test_passes_enter_the_cache_key_on_cpu_only():
    with_passes, without = OptimizeOptions().as_key(), OptimizeOptions(cpu_passes=()).as_key()
    assert with_passes != without and with_passes["cpu_passes"] == list(DEFAULT_CPU_PASSES)
    assert OptimizeOptions(on_gpu=True).as_key() == OptimizeOptions(on_gpu=True, cpu_passes=()).as_key()


# --------------------------------------------------------------------------- SDFG structure
def _maps(sdfg):
    from dace.sdfg import nodes

    return [(state, node) for sd in sdfg.all_sdfgs_recursive() for state in sd.states()
            for node in state.nodes() if isinstance(node, nodes.MapEntry)]


def _region_nested_sdfgs(sdfg):
    from dace.sdfg import nodes

    return [node for state, entry in _maps(sdfg) for node in state.scope_children()[entry]
            if isinstance(node, nodes.NestedSDFG)]


def _j_range(nested) -> tuple[int, int]:
    begin, end, _ = nested.sdfg.parent.entry_node(nested).map.range[-1]
    return int(begin), int(end)


def test_region_maps_are_split_into_branch_free_bulk_pieces(parsed):
    from dace.sdfg.state import ConditionalBlock

    sdfg = _optimized(parsed, cpu_passes=()).sdfg
    (nested,) = _region_nested_sdfgs(sdfg)
    symbol = [name for name, value in nested.symbol_mapping.items() if str(value) == "__j"][0]
    assert sorted(cut_points(nested.sdfg, symbol)) == [0, 1, 2, 6, 7]
    assert split_region_maps(sdfg) == 1
    outer_splits = split_region_maps(sdfg, -2)
    sdfg.validate()
    pieces = _region_nested_sdfgs(sdfg)
    # j in 0..6: edge, next to edge, bulk, edge; then each of those along i where regions on i remain
    assert sorted({_j_range(node) for node in pieces}) == [(0, 0), (1, 1), (2, 5), (6, 6)]
    assert outer_splits > 0 and len(pieces) > 4

    def conditions(node):
        return [c for b in node.sdfg.all_control_flow_blocks() if isinstance(b, ConditionalBlock) for c, _ in b.branches]

    bulk = [node for node in pieces if _j_range(node) == (2, 5)]
    # the bulk of the bulk (inside along i too) has no branch left: its innermost loop can be vectorized
    assert any(not conditions(node) for node in bulk)
    assert split_region_maps(sdfg) == 0 and split_region_maps(sdfg, -2) == 0  # nothing left to split


def test_a_piece_copied_with_its_dead_branches_hidden_equals_a_whole_copy_specialized(parsed):
    from dace.sdfg.state import ConditionalBlock

    from orchestra.observe.program_text import program_text

    def branches(sdfg) -> int:
        return sum(len(b.branches) for b in sdfg.all_control_flow_blocks() if isinstance(b, ConditionalBlock))

    sdfg = _optimized(parsed, cpu_passes=()).sdfg
    (nested,) = _region_nested_sdfgs(sdfg)
    before, copied = program_text(nested.sdfg), []
    for name in ["__j", "__i"]:
        symbol = [key for key, value in nested.symbol_mapping.items() if str(value) == name][0]
        bounds = [0, *sorted(cut_points(nested.sdfg, symbol)), 9]
        for low, high in [(a, b - 1) for a, b in zip(bounds, bounds[1:]) if a < b]:
            whole = copy.deepcopy(nested)
            changed = specialize(whole.sdfg, symbol, low, high)
            with dead_branches_hidden(nested.sdfg, symbol, low, high):
                piece = copy.deepcopy(nested)
            assert program_text(nested.sdfg) == before  # the original is given back whole
            copied.append(branches(piece.sdfg))
            assert specialize(piece.sdfg, symbol, low, high) == changed
            assert program_text(piece.sdfg) == program_text(whole.sdfg), (name, low, high)
    # the pieces' copies left dead branches behind (else this test would prove nothing)
    assert min(copied) < branches(nested.sdfg) and len(copied) >= 6


def test_one_openmp_level(parsed):
    import dace

    sdfg = _optimized(parsed, cpu_passes=()).sdfg
    changed = single_parallel_level(sdfg)
    assert changed > 0
    for state, entry in _maps(sdfg):
        scope, chain = state.scope_dict()[entry], []
        while scope is not None:
            chain.append(scope.map.schedule)
            scope = state.scope_dict()[scope]
        if entry.map.schedule == dace.ScheduleType.CPU_Multicore:
            assert dace.ScheduleType.CPU_Multicore not in chain
    assert single_parallel_level(sdfg) == 0


def test_one_iteration_parallel_map_hands_threads_to_the_map_inside(tmp_path_factory):
    import dace

    sdfg = _optimized(_parsed(tmp_path_factory, (9, 9, 1)), cpu_passes=()).sdfg
    single_parallel_level(sdfg)
    schedules = {}
    for state, entry in _maps(sdfg):
        outer = state.scope_dict()[entry] is None
        schedules.setdefault(outer, set()).add(entry.map.schedule)
    assert schedules[True] == {dace.ScheduleType.Sequential}  # the nz = 1 vertical maps
    assert dace.ScheduleType.CPU_Multicore in schedules[False]


# --------------------------------------------------------------------------- bitwise results
def test_results_are_bitwise_equal_with_and_without_the_passes(parsed, tmp_path):
    from orchestra.pipeline.stages import compile_program, load
    from orchestra.toolchain import dace_settings

    shape = (12, 11, 4)
    results = {}
    for label, passes in (("with", CPU_PASS_ORDER), ("without", ())):
        optimized = _optimized(parsed, cpu_passes=passes)
        folder = tmp_path / label
        with dace_settings():
            compiled = compile_program(optimized, folder)
            program = load(compiled.folder).compiled_sdfg
            q, out = _inputs(shape)
            program(q=q, out=out)
        results[label] = (np.array(q), np.array(out))
        code = "".join(path.read_text() for path in (folder / "src" / "cpu").glob("*.cpp"))
        assert (code.count("#pragma omp simd") > 0) == (label == "with")  # simd_innermost_loops
    assert np.array_equal(results["with"][0], results["without"][0])
    assert np.array_equal(results["with"][1], results["without"][1])
    # the regions did something: edge rows differ from the interior formula
    assert not np.array_equal(results["with"][1][N_HALO:-N_HALO, N_HALO], results["with"][1][N_HALO:-N_HALO, N_HALO + 3])


def test_results_are_bitwise_equal_at_every_vector_width(parsed, tmp_path, monkeypatch):
    """``ORCHESTRA_VECTOR_WIDTH`` reaches the compiler, and the lanes it groups never change a result."""
    import json

    from orchestra.pipeline.stages import compile_program, load
    from orchestra.toolchain import VECTOR_WIDTH_VARIABLE, dace_settings, is_x86

    shape = (12, 11, 4)
    optimized = _optimized(parsed, cpu_passes=DEFAULT_CPU_PASSES)
    results = {}
    for width in ("128", "256", "512"):
        monkeypatch.setenv(VECTOR_WIDTH_VARIABLE, width)
        folder = tmp_path / width
        with dace_settings():
            compiled = compile_program(copy.deepcopy(optimized), folder)
            program = load(compiled.folder).compiled_sdfg
            q, out = _inputs(shape)
            program(q=q, out=out)
        results[width] = (np.array(q), np.array(out))
        commands = json.loads((folder / "build" / "compile_commands.json").read_text())
        if is_x86():
            assert any(f"-mprefer-vector-width={width}" in entry["command"] for entry in commands)
    for width in ("256", "512"):
        assert np.array_equal(results[width][0], results["128"][0])
        assert np.array_equal(results[width][1], results["128"][1])
