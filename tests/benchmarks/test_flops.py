"""The benchmark's compute bound: flops counted in an SDFG, and the measured multiply-add peak.

Every count here is exact and worked out by hand from the program, so a
counter that forgot a map range, a loop trip count, the rows a horizontal
region runs on, or a nested SDFG fails.
"""

import copy
import sys
from pathlib import Path

import dace
import numpy as np
import pytest
from gt4py.cartesian.gtscript import FORWARD, PARALLEL, I, Field, computation, horizontal, interval, region

from orchestra import DaceConfig, FrozenStencil, orchestrate

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

from bench_lib.arithmetic import code_cost  # noqa: E402
from bench_lib.flops import count_flops  # noqa: E402

FloatField = Field[np.float64]


@pytest.mark.parametrize(
    "code,expected",
    [
        ("out = a * b + c / d - e", {"add_sub": 2, "mul": 1, "div": 1}),
        ("out = (double(7.0) / double(12.0)) * (a + b)", {"add_sub": 1, "mul": 1}),  # folded by the compiler
        ("out = min(a, b, c) + abs(-d)", {"add_sub": 1, "min_max_abs": 3}),
        ("out = math.sqrt(a) + x ** 2 + y ** 0.5", {"add_sub": 2, "mul": 1, "math": 2}),
        ("out = dace.float64(a)\nout += b", {"add_sub": 1}),
        ("out = b if a > 0.0 else -b", {}),
    ],
)
def test_operations_of_tasklet_code(code, expected):
    cost = code_cost(code)
    assert dict(+cost.ops) == expected and cost.bounded == 0


def test_a_data_dependent_branch_counts_its_costlier_side():
    cost = code_cost("if a > 0.0:\n    out = a * b * c\nelse:\n    out = a")
    assert dict(+cost.ops) == {"mul": 2} and cost.bounded == 1
    assert dict(+code_cost("out = a * b + c;", python=False).ops) == {"mul": 1, "add_sub": 1}


# --------------------------------------------------------------------------- DaCe programs
N, M = 7, 5


@dace.program
def known(a: dace.float64[N, M], b: dace.float64[N, M]):
    for _ in range(3):
        for i, j in dace.map[0:N, 1:M]:
            b[i, j] = a[i, j] * 2.0 + b[i, j] / 3.0  # 3 flops on N x (M - 1)
        for i, j in dace.map[0:N, 0:M]:
            if i == 0:
                b[i, j] = b[i, j] - 1.0  # 1 flop on 1 x M


@dace.program
def data_branch(a: dace.float64[N, M], b: dace.float64[N, M]):
    for i, j in dace.map[0:N, 0:M]:
        if a[i, j] > 0.0:
            b[i, j] = b[i, j] * a[i, j] * a[i, j]
        else:
            b[i, j] = 0.0


def test_maps_loops_and_symbol_conditions_multiply():
    count = count_flops(known.to_sdfg(simplify=True))
    assert count.by_kind == {"add_sub": 3 * (N * 4 + M), "mul": 3 * N * 4, "div": 3 * N * 4,
                             "min_max_abs": 0, "math": 0}
    assert count.flops == 3 * (3 * N * (M - 1) + M) == 267 and count.upper_bound_branches == 0


def test_a_condition_on_data_counts_the_costlier_branch_everywhere():
    count = count_flops(data_branch.to_sdfg(simplify=True))
    assert count.flops == 2 * N * M and count.upper_bound_branches == 1


def test_a_loop_in_a_state_machine_is_raised_and_multiplies():
    sdfg = dace.SDFG("guarded_loop")
    sdfg.add_array("x", [10], dace.float64)
    init, guard = sdfg.add_state("init", is_start_block=True), sdfg.add_state("guard")
    body, end = sdfg.add_state("body"), sdfg.add_state("end")
    sdfg.add_edge(init, guard, dace.InterstateEdge(assignments={"k": "0"}))
    sdfg.add_edge(guard, body, dace.InterstateEdge(condition="k < 4"))
    sdfg.add_edge(guard, end, dace.InterstateEdge(condition="not (k < 4)"))
    sdfg.add_edge(body, guard, dace.InterstateEdge(assignments={"k": "k + 1"}))
    body.add_mapped_tasklet("t", {"i": "0:10"}, {"a": dace.Memlet("x[i]")}, "b = a * a + 1.0",
                            {"b": dace.Memlet("x[i]")}, external_edges=True)
    assert count_flops(sdfg).flops == 4 * 10 * 2
    assert len(list(sdfg.all_control_flow_regions(recursive=True))) == 1  # the caller's SDFG is left alone


# --------------------------------------------------------------------------- an orchestrated stencil
HALO = 2
SHAPE = (12, 11, 4)
NX, NY, NZ = SHAPE[0] - 2 * HALO, SHAPE[1] - 2 * HALO, SHAPE[2]
CALLS = 3


def known_ops(q: FloatField, out: FloatField):
    with computation(PARALLEL), interval(...):
        out = 0.5 * (q[-1, 0, 0] + q[1, 0, 0]) - q / 3.0  # 2 add_sub, 1 mul, 1 div everywhere
        with horizontal(region[I[0], :]):
            out = out * 2.0  # 1 mul on the first column only
    with computation(FORWARD), interval(1, None):
        out = out + out[0, 0, -1]  # 1 add_sub on levels 1..NZ-1


class KnownModel:
    """``known_ops`` called ``CALLS`` times on the compute domain."""

    def __init__(self, config: DaceConfig) -> None:
        domain = (NX, NY, NZ)
        self.stencil = FrozenStencil(known_ops, backend=config.backend, origin=(HALO, HALO, 0), domain=domain)
        orchestrate(obj=self, config=config)

    def __call__(self, q, out):
        for _ in range(CALLS):
            self.stencil(q, out)


def test_orchestrated_stencil_counts_exactly(tmp_path):
    import gt4py.storage as gt_storage

    from orchestra.pipeline.stages import OptimizeOptions, ParsedProgram, optimize, parse
    from orchestra.toolchain import dace_settings

    config = DaceConfig(None, backend="dace:cpu", orchestration="BuildAndRun", cache_root=tmp_path)
    model = KnownModel(config)
    args = tuple(gt_storage.zeros(SHAPE, np.float64, backend="dace:cpu") for _ in range(2))
    with dace_settings():
        parsed = parse(model.__orchestra_programs__["__call__"].dace_program(args), args, {})
        sdfg = optimize(ParsedProgram(copy.deepcopy(parsed.sdfg), 0.0), OptimizeOptions()).sdfg
    cells = NX * NY * NZ
    expected = {
        "add_sub": CALLS * (2 * cells + NX * NY * (NZ - 1)),
        "mul": CALLS * (cells + NY * NZ),
        "div": CALLS * cells,
        "min_max_abs": 0,
        "math": 0,
    }
    count = count_flops(sdfg)
    assert count.by_kind == expected, count
    assert count.flops == 3276 and count.upper_bound_branches == 0
    # per kernel, as the kernel profile's timers name them: every operation lies in an outermost map
    # of the program's states, and the stencil's maps carry its name
    from orchestra.passes.kernel_timers import kernel_traffic

    assert sum(count.per_kernel.values()) == count.flops and "" not in count.per_kernel
    assert set(count.per_kernel) <= set(kernel_traffic(sdfg)) | {n.label for n, _ in sdfg.all_nodes_recursive()}
    assert all(label.startswith("known_ops") for label in count.per_kernel), count.per_kernel


# --------------------------------------------------------------------------- the peak
def test_peak_kernel_measures_a_plausible_rate():
    from bench_lib.peak import measure_peak, peak_flags

    assert "-ffp-contract=off" in peak_flags() and "-march=native" in peak_flags()
    (result,) = measure_peak(threads=(1,), elements=512, sweeps=2000, repeats=3)
    assert result.flops_per_repeat == 512 * 2000 * 8
    assert 0.1 < result.best_gflops < 10_000 and result.best_gflops >= result.median_gflops
