"""A scratch array handed between the bodies of a merged vertical map lives one level at a time, bitwise.

:mod:`orchestra.passes.fusion.scratch_planes` gives a transient that one merged
map writes and then reads, level ``k`` only, a buffer of one level, and the
map runs its levels in order. Each model here declares its intermediates ``orchestra.Scratch``
and is built with the fusion passes; the buffer must appear exactly where the
pass's conditions hold, and every array Python sees must be bit for bit what
``Python`` mode computes, over several calls.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dace
import numpy as np
import pytest
from gt4py.cartesian.gtscript import FORWARD, PARALLEL, Field, computation, interval

from orchestra import DaceConfig, FrozenStencil, Scratch, dace_inhibitor, orchestrate
from orchestra.passes.cpu import DEFAULT_CPU_PASSES
from orchestra.passes.fusion import FUSION_PASSES
from tests.orchestration.test_scratch_arrays import laplacian, smooth

F = Field[np.float64]
SHAPE = (9, 8, 5)
DOMAIN = (7, 8, 5)


def smooth_from_below(q: F, lap: F, out: F):
    with computation(PARALLEL), interval(1, None):
        out = q + 0.125 * lap[0, 0, -1]


def clip(q: F, out: F):
    with computation(PARALLEL), interval(...):
        if q > 0.0:
            out = q


def accumulate(q: F, out: F):
    with computation(FORWARD):
        with interval(0, 1):
            out = q
        with interval(1, None):
            out = out[0, 0, -1] + q


class Model:
    """``tmp`` is handed from one stencil to the next; ``kind`` says how (see the cases below)."""

    def __init__(self, config: DaceConfig, kind: str) -> None:
        import gt4py.storage as gt_storage

        backend = config.backend
        self.kind = kind
        self.tmp = Scratch(gt_storage.zeros(SHAPE, np.float64, backend=backend))
        self.laplacian = FrozenStencil(laplacian, backend=backend, origin=(1, 0, 0), domain=DOMAIN)
        self.smooth = FrozenStencil(smooth, backend=backend, origin=(1, 0, 0), domain=DOMAIN)
        self.from_below = FrozenStencil(smooth_from_below, backend=backend, origin=(1, 0, 0), domain=DOMAIN)
        self.clip = FrozenStencil(clip, backend=backend, origin=(1, 0, 0), domain=DOMAIN)
        self.accumulate = FrozenStencil(accumulate, backend=backend, origin=(1, 0, 0), domain=DOMAIN)
        orchestrate(obj=self, config=config)

    @dace_inhibitor
    def exchange(self) -> None:
        pass  # a callback between two stencils: a state boundary

    def __call__(self, q, out):
        if self.kind == "handed over":
            self.laplacian(q, self.tmp)
            self.smooth(q, self.tmp, out)
            self.laplacian(out, self.tmp)
            self.smooth(out, self.tmp, q)
        elif self.kind == "read a level below":
            self.laplacian(q, self.tmp)
            self.from_below(q, self.tmp, out)
        elif self.kind == "read after a callback":
            self.laplacian(q, self.tmp)
            self.exchange()
            self.smooth(q, self.tmp, out)
        elif self.kind == "written conditionally":
            self.laplacian(q, self.tmp)
            self.clip(q, self.tmp)
            self.smooth(q, self.tmp, out)
        elif self.kind == "overwritten after a callback":
            self.laplacian(q, self.tmp)  # never read: the next call of laplacian overwrites it
            self.exchange()
            self.laplacian(out, self.tmp)
            self.smooth(q, self.tmp, out)
        elif self.kind == "written by a sweep":
            self.accumulate(q, self.tmp)
            self.smooth(q, self.tmp, out)


#: case -> whether the pass gives ``tmp`` one-level buffers
CASES = {
    "handed over": True,
    "read a level below": False,  # iteration k reads level k - 1: not one level per iteration
    "read after a callback": False,  # written in one state, read in another
    "written conditionally": None,  # the clip's write is conditional; the laplacian's covers: either is sound
    "written by a sweep": False,  # a FORWARD sweep is not a map over k: nothing merges
    # a state writing tmp without reading it (random scratch program 20: the pass left that map's exit
    # without edges, an invalid SDFG): refused, since every state using tmp must hand it over in planes
    "overwritten after a callback": False,
}


def _fields() -> tuple[Any, Any]:
    import gt4py.storage as gt_storage

    rng = np.random.default_rng(11)
    return tuple(gt_storage.from_array(rng.uniform(-1, 1, SHAPE), backend="dace:cpu") for _ in range(2))


def _run(mode: str, kind: str, cache) -> tuple[list[np.ndarray], Any]:
    config = DaceConfig(None, backend="dace:cpu", orchestration=mode, cache_root=cache,
                        cpu_passes=FUSION_PASSES + DEFAULT_CPU_PASSES)
    model, (q, out) = Model(config, kind), _fields()
    seen = []
    for _ in range(3):
        model(q, out)
        seen += [np.array(q), np.array(out)]
    return seen, model


@pytest.mark.parametrize("kind", list(CASES))
def test_scratch_planes_where_sound_and_results_bitwise(tmp_path, kind):
    reference, _ = _run("Python", kind, tmp_path)
    orchestrated, model = _run("BuildAndRun", kind, tmp_path)
    for expected, got in zip(reference, orchestrated):
        assert np.array_equal(expected, got) and np.array_equal(np.signbit(expected), np.signbit(got)), kind
    program = model.__dict__["__orchestra_programs__"]["__call__"]
    entry = program.fast_caller.origin["entry"]
    sdfg = dace.SDFG.from_file(f"{entry}/program.sdfgz")
    planes = [name for name in sdfg.arrays if "self_tmp" in name and "_plane" in name]
    expected = CASES[kind]
    if expected is not None:
        assert bool(planes) is expected, (kind, sorted(sdfg.arrays))
    for name in planes:  # a buffer of one level: stride 0 along k, the size of one level, allocated once
        desc = sdfg.arrays[name]
        assert desc.strides[-1] == 0 and desc.total_size == SHAPE[0] * SHAPE[1]
        assert desc.lifetime == dace.AllocationLifetime.Persistent


#: Random scratch programs built in CI (tests/fusion/scratch_programs.py; scripts/fuzz_programs.py --scratch runs
#: more), seed -> what it must hold: 6 has several write/read rounds on two scratch arrays, a read of the level
#: below and a FORWARD sweep; 9 hands a scratch array over inside a merged map, so its build has planes (most
#: seeds do not: a callback or a write-after-read between two stencils keeps them in separate states).
SCRATCH_SEEDS = {6: ("make_", "use_", "below_", "sweep_", "Scratch("), 9: ("make_", "use_", "_plane")}


@pytest.mark.parametrize("seed", sorted(SCRATCH_SEEDS))
def test_a_random_scratch_program_equals_python_mode_bitwise(tmp_path, seed):
    from tests.fusion.random_programs import check_program
    from tests.fusion.scratch_programs import generate
    from tests.fusion.variants import VARIANTS

    program = generate(seed)
    outcome = check_program(program, tmp_path / "programs", tmp_path / "cache", VARIANTS)
    assert not outcome.errors, outcome.errors
    assert all(not fields for fields in outcome.differing.values()), outcome.differing
    built = [dace.SDFG.from_file(str(path)) for path in sorted((tmp_path / "cache").rglob("program.sdfgz"))]
    arrays = " ".join(name for sdfg in built for name in sdfg.arrays)
    for construct in SCRATCH_SEEDS[seed]:
        assert construct in (arrays if construct == "_plane" else program.source), construct


def test_planes_serve_a_call_from_another_thread(tmp_path, caplog):
    """The default passes give ``tmp`` planes; a call from a Python thread other than the one
    that loaded the library runs on another OpenMP team, whose threads allocate their planes on
    first use (orchestra.passes.fusion.plane_allocation; without it: a segmentation fault)."""
    import threading

    reference, _ = _run("Python", "handed over", tmp_path)
    config = DaceConfig(None, backend="dace:cpu", orchestration="BuildAndRun", cache_root=tmp_path / "default")
    model, (q, out) = Model(config, "handed over"), _fields()
    with caplog.at_level("INFO", logger="orchestra"):
        model(q, out)  # built and loaded on this thread
    # the build log says what fusion did: 4 stencils in one vertical map, tmp through a plane in it
    assert "(fusion: 3 vertical map(s) merged into the one before, 1 scratch hand-over(s) through planes)" in caplog.text
    seen = [np.array(q), np.array(out)]

    def two_more_calls() -> None:
        for _ in range(2):
            model(q, out)
            seen.extend([np.array(q), np.array(out)])

    caller = threading.Thread(target=two_more_calls)
    caller.start()
    caller.join()
    assert len(seen) == len(reference)
    for expected, got in zip(reference, seen):
        assert np.array_equal(expected, got)
    entry = model.__dict__["__orchestra_programs__"]["__call__"].fast_caller.origin["entry"]
    assert any("_plane" in name for name in dace.SDFG.from_file(f"{entry}/program.sdfgz").arrays)
    code = "\n".join(path.read_text() for path in Path(entry).glob("src/cpu/*.cpp"))
    assert "_plane == nullptr)" in code
