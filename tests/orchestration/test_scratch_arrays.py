"""Scratch arrays (``orchestra.Scratch``, NDSL's ``Local``): the program's own transients, checked and keyed.

A model declares an intermediate scratch: written and read inside one call,
never read by Python between calls. The compiled program then keeps it as a
transient of its own, never writing the array Python holds. Every other
array must still be bit for bit what ``Python`` mode computes; the key must
tell a scratch array from a plain one (a program built with plain arrays
drops no write); swapping one kind for the other between calls, and giving a
scratch array to a Python callback, are refused with a message that says so.
"""

from __future__ import annotations

from typing import Any

import dace
import numpy as np
import pytest
from gt4py.cartesian.gtscript import PARALLEL, Field, computation, interval

from orchestra import (
    BuildError,
    DaceConfig,
    FrozenStencil,
    MissingBuildError,
    Scratch,
    StaleArgumentsError,
    dace_inhibitor,
    orchestrate,
)
from orchestra.key.array_like import is_scratch
from tests.idioms.ndsl_style.infrastructure import Quantity

F = Field[np.float64]
SHAPE = (8, 7, 3)
DOMAIN = (6, 7, 3)


class Local(Quantity):
    """NDSL's ``Local``, in our words: a Quantity whose DaCe descriptor is a transient, filled with a sentinel."""

    def __init__(self, data: Any) -> None:
        data[...] = 123456789.0
        super().__init__(data, ("x", "y", "z"), (0, 0, 0), data.shape)

    def __descriptor__(self) -> Any:
        descriptor = dace.data.create_datadescriptor(self._data)
        descriptor.transient = True
        return descriptor


def laplacian(q: F, out: F):
    with computation(PARALLEL), interval(...):
        out = q[1, 0, 0] + q[-1, 0, 0] - 2.0 * q


def smooth(q: F, lap: F, out: F):
    with computation(PARALLEL), interval(...):
        out = q + 0.125 * lap


class Model:
    """``self.tmp`` is the intermediate: a scratch array, or a plain one (``kind`` None)."""

    def __init__(self, config: DaceConfig, kind: Any) -> None:
        import gt4py.storage as gt_storage

        storage = gt_storage.zeros(SHAPE, np.float64, backend=config.backend)
        self.tmp = kind(storage) if kind is not None else storage
        self.laplacian = FrozenStencil(laplacian, backend=config.backend, origin=(1, 0, 0), domain=DOMAIN)
        self.smooth = FrozenStencil(smooth, backend=config.backend, origin=(1, 0, 0), domain=DOMAIN)
        orchestrate(obj=self, config=config)

    def __call__(self, q, out):
        self.laplacian(q, self.tmp)
        self.smooth(q, self.tmp, out)
        self.laplacian(out, self.tmp)
        self.smooth(out, self.tmp, q)


def _config(mode: str, cache) -> DaceConfig:
    return DaceConfig(None, backend="dace:cpu", orchestration=mode, cache_root=cache)


def _fields() -> tuple[Any, Any]:
    import gt4py.storage as gt_storage

    rng = np.random.default_rng(3)
    return tuple(gt_storage.from_array(rng.uniform(-1, 1, SHAPE), backend="dace:cpu") for _ in range(2))


def _data(array: Any) -> np.ndarray:
    return np.array(getattr(array, "data", array))


@pytest.mark.parametrize("kind", [Scratch, Local], ids=["Scratch", "Local"])
def test_the_program_keeps_scratch_to_itself_and_computes_every_other_array_as_python_mode(tmp_path, kind):
    results = {}
    for mode in ("Python", "BuildAndRun"):
        model, (q, out) = Model(_config(mode, tmp_path), kind), _fields()
        before = _data(model.tmp)
        for _ in range(3):
            model(q, out)
        results[mode] = (_data(q), _data(out), before, _data(model.tmp))
    (q_py, out_py, _, tmp_py), (q_dace, out_dace, tmp_before, tmp_dace) = results["Python"], results["BuildAndRun"]
    assert np.array_equal(q_py, q_dace) and np.array_equal(out_py, out_dace)
    assert np.array_equal(tmp_before, tmp_dace, equal_nan=True)  # the array Python holds was never written
    assert not np.array_equal(tmp_py, tmp_dace, equal_nan=True)  # (Python mode did write it)
    program = model.__dict__["__orchestra_programs__"]["__call__"]
    assert "__g_self_tmp" not in program.fast_caller.compiled_sdfg.sdfg.arglist()


def test_a_build_with_a_plain_array_is_not_the_build_for_a_scratch_one(tmp_path):
    q, out = _fields()
    Model(_config("BuildAndRun", tmp_path), None)(q, out)
    with pytest.raises(MissingBuildError, match=r"closure_arrays\['self.tmp'\].scratch"):
        Model(_config("Run", tmp_path), Scratch)(q, out)


def test_swapping_a_scratch_array_for_a_plain_one_between_calls_is_refused(tmp_path):
    import gt4py.storage as gt_storage

    model, (q, out) = Model(_config("BuildAndRun", tmp_path), Scratch), _fields()
    model(q, out)
    model.tmp = gt_storage.zeros(SHAPE, np.float64, backend="dace:cpu")
    with pytest.raises(StaleArgumentsError, match="self.tmp was a scratch array when the program was built"):
        model(q, out)
    model.tmp = Scratch(gt_storage.zeros(SHAPE, np.float64, backend="dace:cpu"))  # another scratch: fine
    model(q, out)


class Reporting(Model):
    @dace_inhibitor
    def report(self, field: Any) -> None:
        self.seen = float(np.asarray(field)[2, 2, 1])

    def __call__(self, q, out):
        self.laplacian(q, self.tmp)
        self.report(self.tmp)
        self.smooth(q, self.tmp, out)


def test_a_scratch_array_given_to_a_python_callback_is_refused_with_the_line(tmp_path):
    model, (q, out) = Reporting(_config("BuildAndRun", tmp_path), Scratch), _fields()
    with pytest.raises(BuildError, match=r"test_scratch_arrays.py:\d+: .*self.report\(\.\.\.\) is given a scratch array"):
        model(q, out)
    plain = Reporting(_config("BuildAndRun", tmp_path), None)  # a plain array: the callback sees the values
    plain(q, out)
    assert np.isfinite(plain.seen)


def test_what_declares_an_array_scratch():
    storage = np.zeros(SHAPE)
    assert is_scratch(Scratch(storage)) and is_scratch(Local(np.zeros(SHAPE)))
    assert not is_scratch(storage) and not is_scratch(Quantity(storage, "xyz", (0, 0, 0), SHAPE)) and not is_scratch(1.0)
    assert np.isnan(storage).all()  # Scratch holds nothing between calls: NaN until a call writes it
    integers = Scratch(np.ones(3, dtype=np.int32))
    assert (integers.data == 1).all()  # no NaN for integers: left as they are


class ReadFirst(Model):
    def __call__(self, q, out):
        self.smooth(q, self.tmp, out)  # reads self.tmp: nothing of this call wrote it yet
        self.laplacian(q, self.tmp)


def test_reading_a_scratch_array_before_the_call_writes_it_is_refused_with_the_line(tmp_path):
    model, (q, out) = ReadFirst(_config("BuildAndRun", tmp_path), Scratch), _fields()
    with pytest.raises(BuildError, match=r"test_scratch_arrays.py:\d+: .*self.tmp is a scratch array, and the call "
                                         r"reads it here before writing any of it"):
        model(q, out)
    ReadFirst(_config("BuildAndRun", tmp_path), None)(q, out)  # a plain array may carry values between calls


def test_a_scratch_device_array_is_declared_without_touching_its_values():
    from orchestra.key.array_like import array_layout
    from orchestra.pipeline.abstract_arrays import AbstractArray

    device = Scratch(AbstractArray((4, 3, 2), np.float64))  # a build without a device: no values to fill
    assert is_scratch(device) and array_layout(device).storage == "gpu"
