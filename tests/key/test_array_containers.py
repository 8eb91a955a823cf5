"""Array containers (NDSL's ``Quantity`` and the like) are arrays everywhere in orchestra.

Model code written for NDSL holds its arrays in containers that reach DaCe
through DaCe's array protocol: ``__descriptor__()``, ``__array_interface__``
forwarding to the wrapped array, and ``shape``; older ones have no ``dtype``,
none has ``strides``. Such a container, held in ``self`` (a closure array) or
passed as an argument, must compute bit for bit what ``Python`` mode computes,
on every call, also after the array it wraps was replaced; the cache key must
describe its layout (another shape is another key), and two containers of
one layout must share one program. :mod:`orchestra.key.array_like` is the one
place that recognises and describes them.
"""

from __future__ import annotations

from typing import Any

import dace
import numpy as np
import pytest
from gt4py.cartesian.gtscript import PARALLEL, Field, computation, interval

from orchestra import DaceConfig, FrozenStencil, StaleArgumentsError, orchestrate
from orchestra.key.array_like import array_layout, is_array_like, is_container
from orchestra.calls.arguments import folded_identity
from orchestra.key.inputs import collect_build_inputs, describe_array
from orchestra.cache.fingerprint import fingerprint
from orchestra.cache.store import BuildStore
from orchestra.calls.fast_path import check_no_aliasing
from orchestra.toolchain import dace_settings

BACKEND = "dace:cpu"
SHAPE = (5, 4, 2)
FloatField = Field[np.float64]


class Container:
    """A minimal Quantity-like container: DaCe's array protocol and ``shape``; no ``dtype``, no ``strides``."""

    def __init__(self, data: Any) -> None:
        self.data = data

    def __descriptor__(self) -> Any:
        return dace.data.create_datadescriptor(self.data)

    @property
    def __array_interface__(self) -> dict:
        return self.data.__array_interface__

    @property
    def shape(self) -> tuple:
        return self.data.shape


class TypedContainer(Container):
    """A newer container: ``dtype`` too, still no ``strides``."""

    @property
    def dtype(self) -> np.dtype:
        return self.data.dtype


CONTAINERS = [Container, TypedContainer]


def axpy(x: FloatField, y: FloatField, a: float):
    with computation(PARALLEL), interval(...):
        y = y + a * x


class Model:
    """Holds one container (``self.q``, a closure array), receives another (``x``)."""

    def __init__(self, config: DaceConfig, q: Any) -> None:
        self.axpy = FrozenStencil(axpy, backend=config.backend, origin=(0, 0, 0), domain=SHAPE)
        self.q = q
        orchestrate(obj=self, config=config)

    def __call__(self, x):
        self.axpy(x, self.q, 0.5)
        self.axpy(self.q, x, -0.25)


def _config(mode: str, cache) -> DaceConfig:
    return DaceConfig(None, backend=BACKEND, orchestration=mode, cache_root=cache, exit_after_build=False)


def _storage(seed: int, shape: tuple = SHAPE) -> Any:
    import gt4py.storage as gt_storage

    values = np.random.default_rng(seed).uniform(-1, 1, shape)
    return gt_storage.from_array(values, backend=BACKEND)


def _copy_into_new_storage(container: Container) -> None:
    """Replace the wrapped array by a new one of the same layout and values (``quantity.data = ...``)."""
    replacement = _storage(0)
    replacement[...] = container.data
    container.data = replacement


def _run(config: DaceConfig, kind: type) -> tuple[list[np.ndarray], Model]:
    """Several calls: as built, again, after replacing each wrapped array, with a new argument container."""
    q, x = kind(_storage(1)), kind(_storage(2))
    model = Model(config, q)
    results = []

    def call(argument: Any) -> None:
        model(argument)
        results.extend([np.asarray(argument.data).copy(), np.asarray(model.q.data).copy()])

    call(x)
    call(x)
    _copy_into_new_storage(x)  # the argument container wraps a new array
    call(x)
    _copy_into_new_storage(model.q)  # the container held in self wraps a new array
    call(x)
    other = kind(_storage(3))  # another container object of the same layout
    call(other)
    call(x)
    return results, model


@pytest.mark.parametrize("kind", CONTAINERS, ids=lambda kind: kind.__name__)
def test_containers_compute_what_python_mode_computes(tmp_path, kind):
    reference, _ = _run(_config("Python", tmp_path), kind)
    orchestrated, model = _run(_config("BuildAndRun", tmp_path), kind)
    assert len(reference) == len(orchestrated)
    for expected, got in zip(reference, orchestrated):
        np.testing.assert_array_equal(got, expected)
        assert got.tobytes() == expected.tobytes()
    program = model.__orchestra_programs__["__call__"]
    assert "x" not in program.dace_program().constant_args  # a run-time argument, not folded in
    # as built, new x data, new q data, another x container, x again: re-marshalled each time
    assert program.fast_caller.marshal_count == 5
    assert len(BuildStore(tmp_path).entries()) == 1  # one layout, one program (folded_identity)
    assert len(program._callers) == 1


@pytest.mark.parametrize("kind", CONTAINERS, ids=lambda kind: kind.__name__)
def test_the_key_describes_the_container_layout(tmp_path, kind):
    x, q = _storage(2), _storage(1)
    Model(_config("BuildAndRun", tmp_path), kind(q))(kind(x))
    (entry,) = BuildStore(tmp_path).entries()
    inputs = entry.manifest.inputs
    expected = {"dtype": "<f8", "shape": list(SHAPE), "strides": [s // 8 for s in x.strides], "storage": "cpu"}
    assert inputs["arguments"]["x"] == expected == describe_array(x)
    assert inputs["closure_arrays"]["self.q"] == describe_array(q) == describe_array(kind(q))


def _key(model: Model, *args: Any) -> str:
    program = model.__orchestra_programs__["__call__"]
    with dace_settings():
        inputs = collect_build_inputs(program.dace_program(args), program.function, args, {}, backend=BACKEND,
                                      pipeline={})
    return fingerprint(inputs)


@pytest.mark.parametrize("kind", CONTAINERS, ids=lambda kind: kind.__name__)
def test_another_layout_is_another_key(kind):
    config = _config("BuildAndRun", "/nonexistent")
    model = Model(config, kind(_storage(1)))
    base = _key(model, kind(_storage(2)))
    assert _key(model, kind(_storage(4))) == base  # other data, same layout: same key
    assert _key(model, kind(_storage(2, (6, 4, 2)))) != base  # argument of another shape
    assert _key(model, kind(_storage(2).astype(np.float32))) != base  # another dtype
    model.q = kind(_storage(1, (5, 4, 3)))
    assert _key(model, kind(_storage(2))) != base  # closure container of another shape


@pytest.mark.parametrize("kind", CONTAINERS, ids=lambda kind: kind.__name__)
def test_another_shape_never_runs_the_build_for_the_first(tmp_path, kind):
    """A container of another shape (passed, held, or wrapped anew) raises or gets its own program."""
    model = Model(_config("BuildAndRun", tmp_path), kind(_storage(1)))
    x = kind(_storage(2))
    model(x)
    larger = (6, 4, 2)

    def replace_argument() -> None:
        model(kind(_storage(5, larger)))

    def replace_wrapped_argument() -> None:
        x.data = _storage(5, larger)
        model(x)

    def replace_held() -> None:
        model.q = kind(_storage(5, larger))
        model(kind(_storage(2)))

    for change in (replace_argument, replace_wrapped_argument, replace_held):
        with pytest.raises(StaleArgumentsError, match="shape"):
            change()
        x.data, model.q = _storage(2), kind(_storage(1))  # back to the built layout
        model(x)


def test_folded_identity_is_the_layout_not_the_object():
    first, second = Container(_storage(1)), TypedContainer(_storage(2))
    assert folded_identity(frozenset(), ["x"], (first,), {}) == folded_identity(frozenset(), ["x"], (second,), {})
    assert folded_identity(frozenset(), ["x"], (first,), {}) == folded_identity(frozenset(), ["x"], (_storage(3),), {})


def test_array_layout_reads_every_protocol():
    storage = _storage(1)
    direct = array_layout(storage)
    assert array_layout(Container(storage)) == direct == array_layout(TypedContainer(storage))
    assert direct.strides == tuple(s // 8 for s in storage.strides) and direct.storage == "cpu"
    assert is_array_like(Container(storage)) and is_container(Container(storage)) and not is_container(storage)
    for scalar in (np.float64(1.0), 1.0, 3, None, "q"):
        assert not is_array_like(scalar) and array_layout(scalar) is None

    class DescriptorOnly:  # neither interface: dtype, shape and strides from __descriptor__()
        def __descriptor__(self) -> Any:
            return dace.data.create_datadescriptor(storage)

    only = array_layout(DescriptorOnly())
    assert (only.pointer, only.dtype, only.shape, only.strides) == (None, direct.dtype, direct.shape, direct.strides)

    class Device:  # a CUDA interface without strides: C-contiguous, on the GPU
        __cuda_array_interface__ = {"shape": (3, 4), "typestr": "<f4", "data": (0, False), "strides": None,
                                    "version": 3}

    device = array_layout(Device())
    assert (device.dtype, device.shape, device.strides, device.storage) == (np.dtype("float32"), (3, 4), (4, 1), "gpu")
    assert device.byte_range() is None  # no data: never taken as aliasing another array


def test_two_containers_of_one_array_alias():
    storage = _storage(1)
    with pytest.raises(StaleArgumentsError, match="share memory"):
        check_no_aliasing(["a", "b"], {"a": Container(storage), "b": TypedContainer(storage[1:, :, :])})
    check_no_aliasing(["a", "b"], {"a": Container(storage), "b": Container(_storage(2))})
