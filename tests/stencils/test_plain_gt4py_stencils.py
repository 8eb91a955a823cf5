"""Plain gt4py stencil objects called directly in orchestrated code compute what Python mode computes (issue 54).

``gtscript.stencil(backend="dace:cpu", definition=...)`` called with
``origin=``/``domain=`` as gt4py's docs teach, not through ``FrozenStencil``:
gt4py nests such a stencil's computation with windowed connectors (DaCe 1's
contract), which DaCe 2.0.0b1 reads without the window (wrong values and
writes past the array until every nested SDFG was restated after the parse,
:mod:`orchestra.pipeline.nested_contract`). The model holds horizontal regions
at both ends of I and J, offsets, a FORWARD sweep, several levels, a domain
smaller than the array, calls in a loop, in a branch and in a nested
component; results must equal ``Python`` mode's bit for bit.
"""

from __future__ import annotations

import numpy as np
import pytest
from gt4py import storage
from gt4py.cartesian import gtscript
from gt4py.cartesian.gtscript import FORWARD, PARALLEL, Field, I, J, computation, horizontal, interval, region

from orchestra import DaceConfig, DaCeOrchestration, orchestrate

BACKEND = "dace:cpu"
SHAPE = (12, 11, 4)
ORIGIN, DOMAIN = (2, 2, 0), (8, 7, 4)


def smooth(q: Field[float], out: Field[float]):
    with computation(PARALLEL), interval(...):
        out = 0.5 * q + 0.125 * (q[1, 0, 0] + q[-1, 0, 0] + q[0, 1, 0] + q[0, -1, 0])
        with horizontal(region[I[0], :]):
            out = q + 0.5 * (q[1, 0, 0] - q)
        with horizontal(region[:, J[-1]]):
            out = q - 0.25 * (q[0, -1, 0] - q)


def accumulate(q: Field[float], out: Field[float], weight: float):
    with computation(FORWARD):
        with interval(0, 1):
            out = weight * q
        with interval(1, None):
            out = out[0, 0, -1] + weight * q
    with computation(PARALLEL), interval(...):
        with horizontal(region[I[-1], J[0]]):
            out = -out


class Column:
    """A nested component calling a plain gt4py stencil with a FORWARD sweep."""

    def __init__(self, config: DaceConfig) -> None:
        self.accumulate = gtscript.stencil(backend=BACKEND, definition=accumulate)
        orchestrate(obj=self, config=config)

    def __call__(self, q, out, weight: float):
        self.accumulate(q, out, weight, origin=ORIGIN, domain=DOMAIN)


class Model:
    def __init__(self, config: DaceConfig) -> None:
        self.smooth = gtscript.stencil(backend=BACKEND, definition=smooth)
        self.column = Column(config)
        orchestrate(obj=self, config=config)

    def __call__(self, q, tmp, out, n: int, flag: bool):
        for _ in range(n):
            self.smooth(q, tmp, origin=ORIGIN, domain=DOMAIN)
            self.smooth(tmp, q, origin=(3, 3, 1), domain=(6, 5, 2))
        if flag:
            self.column(q, out, 0.75)
        self.smooth(out, tmp, origin=ORIGIN, domain=DOMAIN)


def run(mode: DaCeOrchestration, cache) -> list[np.ndarray]:
    model = Model(DaceConfig(None, backend=BACKEND, orchestration=mode, cache_root=cache))
    arrays = [storage.zeros(SHAPE, dtype=np.float64, backend=BACKEND) for _ in range(3)]
    arrays[0][...] = np.arange(np.prod(SHAPE), dtype=float).reshape(SHAPE) % 7 - 3.0
    arrays[2][...] = 1.5
    model(*arrays, 2, True)
    model(*arrays, 1, False)
    return [np.array(array) for array in arrays]


@pytest.mark.parametrize("mode", [DaCeOrchestration.BuildAndRun, DaCeOrchestration.Run])
def test_plain_stencils_with_regions_and_sweeps_are_bitwise(tmp_path_factory, mode, python_results, cache):
    got = run(mode, cache)
    for name, expected, array in zip(("q", "tmp", "out"), python_results, got):
        different = int((expected != array).sum())
        assert different == 0, f"{name}: {different} values differ from Python mode"


@pytest.fixture(scope="module")
def python_results() -> list[np.ndarray]:
    return run(DaCeOrchestration.Python, None)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


def test_python_modes_stencil_extensions_carry_no_debug_information(python_results):
    """orchestra adds ``-g0`` after Python's ``-g`` (the same machine code, a quarter less compile time),
    unless the user's ``GT4PY_EXTRA_COMPILE_ARGS`` asks for debug information."""
    import os
    from pathlib import Path

    from orchestra.toolchain import gt4py_cxx_flags

    model = Model(DaceConfig(None, backend=BACKEND, orchestration=DaCeOrchestration.Python))
    for stencil in (model.smooth, model.column.accumulate):  # compiled by python_results, found in gt4py's cache
        name = f"m_{type(stencil).__name__.split('__')[0]}__dacecpu_{type(stencil)._gt_id_}_pyext"
        (extension,) = [path for path in Path(os.environ["GT_CACHE_ROOT"]).rglob(f"{name}*.so")
                        if "_BUILD" not in str(path.parent)]  # not gt4py's build folder's copy
        assert b".debug_info" not in extension.read_bytes(), f"{extension} holds debug information"
    assert "-g0" in gt4py_cxx_flags("") and "-g0" in gt4py_cxx_flags("-O2 -g0")
    assert "-g0" not in gt4py_cxx_flags("-O2 -ggdb") and "-g0" not in gt4py_cxx_flags("-g")
