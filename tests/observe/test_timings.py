"""The timing report: each call split into library, callbacks and orchestra's overhead.

A small model with two stencils and a callback that sleeps a known time
runs with timings on. Every part must be there and plausible (the callback
at least its sleep, the library and orchestra's parts positive), the parts
of each call must add up to its total within the few attribute reads between
them, the first call (the build) must be kept apart, and a program with
timings off must record nothing.
"""

from __future__ import annotations

import json
import re
import time

import numpy as np
from gt4py.cartesian.gtscript import PARALLEL, Field, computation, interval

from orchestra import DaceConfig, FrozenStencil, dace_inhibitor, orchestrate, timing_report
from orchestra.observe.timings import OVERHEAD_PARTS, summarize

FloatField = Field[np.float64]
SHAPE = (6, 5, 3)
SLEEP_S = 0.002


def axpy(x: FloatField, y: FloatField, a: float):
    with computation(PARALLEL), interval(...):
        y = y + a * x


class Exchanger:
    def __init__(self) -> None:
        self.calls = 0

    @dace_inhibitor
    def exchange(self):
        self.calls += 1
        time.sleep(SLEEP_S)


class Model:
    def __init__(self, config: DaceConfig) -> None:
        self.axpy = FrozenStencil(axpy, backend=config.backend, origin=(0, 0, 0), domain=SHAPE)
        self.halo = Exchanger()
        orchestrate(obj=self, config=config)

    def __call__(self, x, y):
        self.axpy(x, y, 0.5)
        self.halo.exchange()
        self.axpy(y, x, 0.25)


def _arrays() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(3)
    return rng.random(SHAPE), rng.random(SHAPE)


def _program(model: Model):
    return model.__dict__["__orchestra_programs__"]["__call__"]


def test_each_call_is_split_into_parts_that_add_up(tmp_path):
    model = Model(DaceConfig(backend="dace:cpu", orchestration="BuildAndRun", cache_root=tmp_path, timings=True))
    x, y = _arrays()
    n_calls = 12
    for _ in range(n_calls):
        model(x, y)
    clock = _program(model).clock
    assert clock is not None and len(clock.obtaining_calls) == 1  # the build is kept apart
    assert len(clock.calls) == n_calls - 1
    # named as written, with the line of the call
    (callback,) = [part for part in clock.calls[0] if part.startswith("callback ")]
    assert re.fullmatch(r"callback self\.halo\.exchange \(test_timings\.py:\d+\)", callback), callback
    for call in clock.calls:
        assert set(call) == {"total", "library", callback, *OVERHEAD_PARTS}, call
        assert call[callback] >= SLEEP_S
        assert all(seconds > 0 for seconds in call.values()), call
        parts = sum(seconds for name, seconds in call.items() if name != "total")
        # measured apart from the total: only the reads between the laps are in neither
        assert parts <= call["total"] + 1e-9
        assert call["total"] - parts < max(50e-6, 0.05 * call["total"]), call

    summary = timing_report(path=tmp_path / "timings.json")
    entry = summary["Model.__call__"]
    assert entry["calls"] == n_calls - 1 and entry["ranks"] == 1
    assert entry["parts"][callback]["min"] >= SLEEP_S
    written = json.loads((tmp_path / "timings.json").read_text())
    assert written["summary"]["Model.__call__"]["calls"] == n_calls - 1


def test_timings_off_records_nothing(tmp_path):
    model = Model(DaceConfig(backend="dace:cpu", orchestration="BuildAndRun", cache_root=tmp_path, timings=False))
    x, y = _arrays()
    model(x, y)
    model(x, y)
    assert _program(model).clock is None
    assert model.halo.calls == 2  # the callback runs unwrapped


def test_summary_pools_calls_over_ranks():
    rank_0 = [{"program": "P", "obtaining_calls": [2.0], "calls": [{"total": 1.0, "library": 0.5}]}]
    rank_1 = [{"program": "P", "obtaining_calls": [3.0], "calls": [{"total": 3.0, "library": 1.5}]}]
    rank_1.append({"program": "Inner", "obtaining_calls": [], "calls": []})  # only called inside P
    summary = summarize([rank_0, rank_1])
    assert list(summary) == ["P"]
    entry = summary["P"]
    assert entry["ranks"] == 2 and entry["calls"] == 2
    assert entry["parts"]["total"] == {"min": 1.0, "median": 2.0, "max": 3.0}
    assert entry["obtaining_calls"]["max"] == 3.0


def test_device_work_queued_before_a_callback_counts_as_library():
    """On a GPU the clock waits for the device before each callback and at the library's end:
    what the device still had to do is library time, not the callback's."""
    from orchestra.observe.timings import ProgramClock

    device_s = 0.05  # large against a loaded machine's oversleeping, so the bounds below hold
    waits = []

    def synchronize() -> None:  # a device with queued work: the first wait of a call takes long
        waits.append(time.perf_counter())
        if len(waits) == 1:
            time.sleep(device_s)

    clock = ProgramClock("device", synchronize)
    callback = clock.timed_callback("exchange", lambda: time.sleep(SLEEP_S))
    clock.start()
    clock.lap("marshal")
    callback()  # inside the library call
    clock.lap_library()
    clock.stop(obtained=False)
    parts = clock.calls[0]
    assert len(waits) == 2  # before the callback, at the library's end
    assert SLEEP_S <= parts["callback exchange"] < SLEEP_S + device_s / 2
    assert parts["library"] >= device_s
