"""Vertical merging (``merge_vertical_maps``): which maps merge, which must not, and bitwise results.

``ChainModel`` runs, between two callbacks, a chain of ``PARALLEL`` stencils
over all levels that the plane condition allows to merge (a Laplacian read
with horizontal offsets and updated in place, a stencil on an extended
domain), one that reads the level above of a field the chain writes (must
stay separate: merged, iteration ``k`` would read level ``k + 1`` before
iteration ``k + 1`` wrote it),
and a ``FORWARD`` sweep (no vertical map at all). The merged program must
equal ``Python`` mode bit for bit.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
from gt4py.cartesian.gtscript import FORWARD, PARALLEL, Field, computation, interval

from orchestra import DaceConfig, FrozenStencil, dace_inhibitor, orchestrate
from orchestra.passes.cpu import DEFAULT_CPU_PASSES
from orchestra.passes.fusion import FUSION_PASSES, merge_vertical_maps
from orchestra.passes.fusion.planes import plane_of

FloatField = Field[np.float64]
HALO = 2
SHAPE = (12, 11, 5)


def laplacian(q: FloatField, lap: FloatField):
    with computation(PARALLEL), interval(...):
        lap = q[1, 0, 0] + q[-1, 0, 0] + q[0, 1, 0] + q[0, -1, 0] - 4.0 * q


def update(q: FloatField, lap: FloatField, c: float):
    with computation(PARALLEL), interval(...):
        q = q + c * lap


def smooth(q: FloatField, out: FloatField):
    with computation(PARALLEL), interval(...):
        out = 0.5 * q + 0.125 * (q[1, 0, 0] + q[-1, 0, 0] + q[0, 1, 0] + q[0, -1, 0])


def above(out: FloatField, lap: FloatField):
    with computation(PARALLEL), interval(...):
        lap = out - 0.25 * out[0, 0, 1]


def column(lap: FloatField, total: FloatField):
    with computation(FORWARD):
        with interval(0, 1):
            total = lap
        with interval(1, None):
            total = total[0, 0, -1] + lap


class ChainModel:
    """laplacian -> update -> smooth (extended domain) | above (reads k + 1) | column (FORWARD)."""

    def __init__(self, config: DaceConfig) -> None:
        nx, ny, nz = SHAPE[0] - 2 * HALO, SHAPE[1] - 2 * HALO, SHAPE[2] - 1  # above reads k + 1
        origin, domain = (HALO, HALO, 0), (nx, ny, nz)
        wide_origin, wide_domain = (HALO - 1, HALO - 1, 0), (nx + 2, ny + 2, nz)
        backend = config.backend
        self.laplacian = FrozenStencil(laplacian, backend=backend, origin=origin, domain=domain)
        self.update = FrozenStencil(update, backend=backend, origin=origin, domain=domain)
        self.smooth = FrozenStencil(smooth, backend=backend, origin=wide_origin, domain=wide_domain)
        self.above = FrozenStencil(above, backend=backend, origin=origin, domain=domain)
        self.column = FrozenStencil(column, backend=backend, origin=origin, domain=domain)
        self.factor = 0.1
        orchestrate(obj=self, config=config)

    @dace_inhibitor
    def coefficient(self) -> float:
        self.factor = 0.9 * self.factor
        return self.factor

    def __call__(self, q, lap, out, total):
        c: float = self.coefficient()
        self.laplacian(q, lap)
        self.update(q, lap, c)
        self.smooth(q, out)
        self.above(out, lap)
        self.column(lap, total)


def _fields(backend: str) -> list:
    import gt4py.storage as gt_storage

    rng = np.random.default_rng(11)
    return [gt_storage.from_array(rng.uniform(-1, 1, SHAPE), backend=backend) for _ in range(4)]


def _run(config: DaceConfig) -> list[np.ndarray]:
    model = ChainModel(config)
    fields = _fields(config.backend)
    for _ in range(2):
        model(*fields)
    return [np.asarray(field).copy() for field in fields]


def _vertical_maps(sdfg) -> list:
    from dace.sdfg import nodes

    found = []
    for state in sdfg.all_states():
        scopes = state.scope_dict()
        for node in state.nodes():
            if isinstance(node, nodes.MapEntry) and scopes[node] is None and len(node.map.params) == 1:
                found.append(node)
    return found


@pytest.fixture(scope="module")
def expanded(tmp_path_factory):
    """The model's SDFG after the optimize stage's simplification, before any CPU pass."""
    from orchestra.pipeline.stages import OptimizeOptions, ParsedProgram, optimize, parse
    from orchestra.toolchain import dace_settings

    cache = tmp_path_factory.mktemp("merge_cache")
    model = ChainModel(DaceConfig(None, backend="dace:cpu", orchestration="BuildAndRun", cache_root=cache))
    args = tuple(_fields("dace:cpu"))
    with dace_settings():
        program = model.__orchestra_programs__["__call__"].dace_program(args)
        parsed = parse(program, args, {})
        return optimize(ParsedProgram(parsed.sdfg, 0.0), OptimizeOptions(cpu_passes=())).sdfg


def test_the_chain_merges_and_the_level_above_stays_separate(expanded):
    sdfg = copy.deepcopy(expanded)
    before = _vertical_maps(sdfg)
    # laplacian, update, smooth, above over the same levels (column is a FORWARD loop)
    assert len(before) == 4
    assert merge_vertical_maps(sdfg) == 2
    sdfg.validate()
    after = _vertical_maps(sdfg)
    labels = sorted(entry.map.label.split("__")[0] for entry in after)
    assert labels == ["above", "laplacian"]  # above reads out[k + 1], which smooth writes
    assert merge_vertical_maps(sdfg) == 0  # nothing left


@pytest.mark.parametrize(
    "subset,expected",
    [
        ("0:10, 1:9, k", (2, 0)),
        ("0:10, 1:9, k - 1", (2, -1)),
        ("i, j + 1, k + 2", (2, 2)),
        ("0:10, 1:9, 0:k + 1", None),  # a boundary memlet's over-approximation
        ("0:10, 1:9", None),  # no vertical dimension: every iteration writes it
        ("k, 0:3, k", None),  # two dimensions follow k
    ],
)
def test_plane_of_a_subset(subset, expected):
    from dace import subsets

    plane = plane_of(subsets.Range.from_string(subset), "k")
    assert (plane if plane is None else (plane[0], int(plane[1]))) == expected


def test_merged_program_equals_python_mode_bitwise(tmp_path):
    reference = _run(DaceConfig(None, backend="dace:cpu", orchestration="Python", cache_root=tmp_path))
    unfused = _run(DaceConfig(None, backend="dace:cpu", orchestration="BuildAndRun", cache_root=tmp_path))
    fused = _run(
        DaceConfig(
            None, backend="dace:cpu", orchestration="BuildAndRun", cache_root=tmp_path,
            cpu_passes=FUSION_PASSES + DEFAULT_CPU_PASSES,
        )
    )
    for name, expected, got, without in zip(("q", "lap", "out", "total"), reference, fused, unfused):
        assert np.array_equal(expected.view(np.uint8), got.view(np.uint8)), name
        assert np.array_equal(expected.view(np.uint8), without.view(np.uint8)), name
    assert not np.array_equal(reference[3], _fields("numpy")[3])  # the program changed the fields


def test_describe_fusion_names_the_fused_kernel_and_why_above_stays_apart(expanded):
    from orchestra.passes.fusion.vertical import describe_fusion

    sdfg = copy.deepcopy(expanded)
    merge_vertical_maps(sdfg)
    described = describe_fusion(sdfg)
    assert ["laplacian", "update", "smooth"] in described["fused"]
    (pair,) = described["not_fused"]
    assert pair["first"].startswith("laplacian") and pair["second"].startswith("above")
    assert pair["why"] == "out is accessed outside one plane"
