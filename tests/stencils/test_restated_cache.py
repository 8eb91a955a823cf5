"""A stencil's SDFG restated for a call is kept beside gt4py's frozen SDFG: a later build reads it, unchanged.

:mod:`orchestra.stencils.restated`: the restated SDFG is keyed by everything
restating reads (the frozen file, origin, domain, argument data, what the call
passes for parameters the frozen SDFG lacks); a build that finds it neither
loads gt4py's frozen SDFG nor restates, and nests the same SDFG as a cold parse.
Processes and ranks that lower stencils ahead then restate them too (``restate_ahead``), for
calls that pass nothing the frozen SDFG lacks.
"""

from __future__ import annotations

import gzip
import logging
import shutil

import dace
import numpy as np
from gt4py.cartesian import config as gt_config
from gt4py.cartesian.backend import dace_backend
from gt4py.cartesian.gtscript import PARALLEL, I, Field, computation, horizontal, interval, region

from orchestra import FrozenStencil
from orchestra.observe.program_text import program_text
from orchestra.stencils import restated

FloatField = Field[np.float64]


def smooth(q: FloatField, out: FloatField, far: FloatField, c: float, unused: float):
    # parameters not in alphabetical order: gt4py's argument data, computed or read back, lists them in other orders
    with computation(PARALLEL), interval(...):
        out = 0.25 * (q[-1, 0, 0] + 2.0 * q + q[1, 0, 0]) + c
        with horizontal(region[I[0] - 2, :]):  # outside the domain: far is never read, gt4py drops it
            out = far


def scale(a: FloatField, b: FloatField, c: float):
    with computation(PARALLEL), interval(...):
        b = c * a[1, 0, 0]


def smoothing() -> FrozenStencil:
    return FrozenStencil(smooth, backend="dace:cpu", origin={"_all_": (1, 1, 0), "far": (0, 0, 0)}, domain=(5, 4, 3))


def scaling() -> FrozenStencil:
    return FrozenStencil(scale, backend="dace:cpu", origin=(0, 0, 0), domain=(5, 4, 3))


def field() -> dace.data.Array:
    return dace.data.Array(dace.float64, (7, 6, 3))


def smoothing_call(unused=3.0) -> tuple:
    return field(), field(), field(), 0.5, unused  # far and unused: parameters the frozen SDFG lacks


def counted_restating(monkeypatch) -> list:
    """Each restating from here on, as a list of its frozen files; a new process (gt4py's memory empty)."""
    calls = []
    original = restated.restate

    def counting(frozen, call):
        calls.append(call.frozen_path)
        return original(frozen, call)

    monkeypatch.setattr(restated, "restate", counting)
    monkeypatch.setattr(dace_backend.SDFGManager, "_loaded_sdfgs", {})
    return calls


def entries(gt_cache) -> list:
    return sorted(gt_cache.rglob("*.restated/*.sdfgz"))


def test_a_later_build_reads_the_restated_sdfg_without_loading_the_frozen_one(gt_cache, monkeypatch):
    cold = program_text(smoothing().__sdfg__(*smoothing_call()))
    assert len(entries(gt_cache)) == 1
    calls = counted_restating(monkeypatch)

    def not_loaded(*args, **kwargs):
        raise AssertionError("gt4py's frozen SDFG was loaded")

    monkeypatch.setattr(dace_backend.SDFGManager, "_frozen_sdfg", not_loaded)
    assert program_text(smoothing().__sdfg__(*smoothing_call())) == cold
    assert calls == []


def test_a_call_passing_other_extras_is_restated_for_itself(gt_cache, monkeypatch):
    as_float = program_text(smoothing().__sdfg__(*smoothing_call(3.0)))
    calls = counted_restating(monkeypatch)
    as_int = smoothing().__sdfg__(*smoothing_call(3))  # the dropped scalar comes back as an int
    assert len(calls) == 1 and len(entries(gt_cache)) == 2
    assert "int64" in program_text(as_int) and program_text(as_int) != as_float
    assert program_text(smoothing().__sdfg__(*smoothing_call(3.0))) == as_float and len(calls) == 1


def test_a_frozen_sdfg_written_again_is_restated_again_and_a_copied_cache_is_read(gt_cache, tmp_path, monkeypatch):
    cold = program_text(smoothing().__sdfg__(*smoothing_call()))
    (frozen,) = {path for path in gt_cache.rglob("*.sdfgz") if path.with_name(path.name + ".restated").is_dir()}
    copied = tmp_path / "copied"
    shutil.copytree(gt_cache, copied)  # new modification times, same bytes
    monkeypatch.setitem(gt_config.cache_settings, "root_path", str(copied))
    calls = counted_restating(monkeypatch)
    assert program_text(smoothing().__sdfg__(*smoothing_call())) == cold and calls == []

    monkeypatch.setitem(gt_config.cache_settings, "root_path", str(gt_cache))
    frozen.write_bytes(gzip.compress(gzip.decompress(frozen.read_bytes()), mtime=12345))  # written again: other bytes
    monkeypatch.setattr(dace_backend.SDFGManager, "_loaded_sdfgs", {})
    assert program_text(smoothing().__sdfg__(*smoothing_call())) == cold
    assert calls == [frozen]


def test_a_damaged_restated_sdfg_is_restated_again_with_a_warning(gt_cache, monkeypatch, caplog):
    cold = program_text(smoothing().__sdfg__(*smoothing_call()))
    (entry,) = entries(gt_cache)
    entry.write_bytes(entry.read_bytes()[:50])
    calls = counted_restating(monkeypatch)
    with caplog.at_level(logging.WARNING, logger="orchestra"):
        assert program_text(smoothing().__sdfg__(*smoothing_call())) == cold
    assert len(calls) == 1 and any("does not load" in record.getMessage() for record in caplog.records)
    dace.SDFG.from_file(str(entry))  # written again, whole


def test_a_cache_that_cannot_be_written_gives_the_same_sdfg(gt_cache, tmp_path, monkeypatch):
    cold = program_text(smoothing().__sdfg__(*smoothing_call()))
    monkeypatch.setitem(gt_config.cache_settings, "root_path", str(tmp_path / "read_only"))

    def refused(*args, **kwargs):
        raise PermissionError("read-only file system")

    monkeypatch.setattr(restated, "_save", refused)
    assert program_text(smoothing().__sdfg__(*smoothing_call())) == cold
    assert entries(tmp_path / "read_only") == []


def test_restating_ahead_leaves_a_build_only_reading(gt_cache, tmp_path, monkeypatch):
    call = (field(), field(), 2.0)  # every parameter in the frozen SDFG: no extras
    cold = program_text(scaling().__sdfg__(*call))
    monkeypatch.setitem(gt_config.cache_settings, "root_path", str(tmp_path / "ahead"))
    assert scaling().lower_ahead() is True
    assert entries(tmp_path / "ahead") == []  # lowering alone restates nothing
    assert scaling().restate_ahead() is True
    assert scaling().restate_ahead() is False and scaling().lower_ahead() is False  # nothing left to do
    assert len(entries(tmp_path / "ahead")) == 1
    calls = counted_restating(monkeypatch)
    assert program_text(scaling().__sdfg__(*call)) == cold
    assert calls == []
