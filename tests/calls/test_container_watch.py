"""A container's wrapped array, replaced between calls, is always noticed; cheaply where provable.

:mod:`orchestra.calls.container_watch` compares the forwarded array by
identity only for a class whose interface property is provably
``return self.<path>.<interface>`` reaching a numpy array; every other
container is compared by its data token. Both must notice a replaced array,
and an orchestrated model holding either kind must compute what ``Python``
mode computes after the swap.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from gt4py.cartesian.gtscript import PARALLEL, Field, computation, interval

from orchestra import DaceConfig, FrozenStencil, orchestrate
from orchestra.calls.container_watch import ContainerWatch, forwarded_path
from tests.idioms.ndsl_style.infrastructure import Quantity

SHAPE = (4, 3, 2)


class Forwarding(Quantity):
    """NDSL's pattern (the tests' NDSL-like ``Quantity``): the interface is the wrapped array's, read through ``_data``."""

    def __init__(self, data: np.ndarray) -> None:
        super().__init__(data, ("x", "y", "z"), (0, 0, 0), data.shape)


class ThroughProperty(Forwarding):
    """Forwards through a property (``self.data`` returning ``self._data``): still a plain attribute chain."""

    @property
    def __array_interface__(self) -> dict:
        return self.data.__array_interface__  # ``data``: a property returning ``self._data``


class FreshView(Forwarding):
    """Forwards a view made on every read: a chain of reads, but never the same object twice."""

    @property
    def whole(self) -> np.ndarray:
        return self._data[...]

    @property
    def __array_interface__(self) -> dict:
        return self.whole.__array_interface__


class Computed(Forwarding):
    """Builds the interface itself: nothing to prove, watched by the data token."""

    @property
    def __array_interface__(self) -> dict:
        interface = dict(self._data.__array_interface__)
        return interface


def test_only_a_plain_attribute_chain_is_read_as_forwarding():
    assert forwarded_path(Forwarding, "__array_interface__") == ("_data",)
    assert forwarded_path(ThroughProperty, "__array_interface__") == ("data",)
    assert forwarded_path(FreshView, "__array_interface__") == ("whole",)
    assert forwarded_path(Computed, "__array_interface__") is None

    class Subscripted(Forwarding):
        @property
        def __array_interface__(self) -> dict:
            return self._data[1:].__array_interface__

    class FromGlobal(Forwarding):
        @property
        def __array_interface__(self) -> dict:
            return SOURCE.__array_interface__

    assert forwarded_path(Subscripted, "__array_interface__") is None
    assert forwarded_path(FromGlobal, "__array_interface__") is None


SOURCE = np.zeros(SHAPE)


@pytest.mark.parametrize("kind", [Forwarding, ThroughProperty, FreshView, Computed], ids=lambda k: k.__name__)
def test_a_replaced_array_is_noticed_and_an_untouched_one_is_not(kind):
    container, array = kind(np.zeros(SHAPE)), np.zeros(SHAPE)
    watch = ContainerWatch([1.0, array, container])  # only the container is watched: a plain array cannot move
    assert watch and not watch.moved([1.0, array, container]) and not watch.moved([1.0, array, container])
    container._data = np.zeros(SHAPE)  # same layout, new memory
    assert watch.moved([1.0, array, container])
    container._data = np.zeros((2, 3, 2))
    assert watch.moved([1.0, array, container])
    del container._data
    assert watch.moved([1.0, array, container])
    assert not ContainerWatch([1.0, array])


def test_identity_is_the_test_only_where_the_class_provably_forwards():
    """A new view of the same memory: the identity watch marshals again (harmless), the token watch does not."""
    array = np.zeros(SHAPE)
    for kind, by_identity in ((Forwarding, True), (ThroughProperty, True), (FreshView, False), (Computed, False)):
        container = kind(array)
        watch = ContainerWatch([container])
        container._data = array[...]  # another object, same pointer, shape and strides
        assert watch.moved([container]) is by_identity, kind.__name__


def test_an_array_subclass_with_its_own_interface_is_watched_by_token():
    class Odd(np.ndarray):
        @property
        def __array_interface__(self) -> dict:
            return np.asarray(self).__array_interface__

    array = np.zeros(SHAPE)
    container = Forwarding(array.view(Odd))
    watch = ContainerWatch([container])
    container._data = array.view(Odd)  # a new object over the same memory: the token is equal
    assert not watch.moved([container])


def scale(q: Field[np.float64], out: Field[np.float64]):
    with computation(PARALLEL), interval(...):
        out = 2.0 * q + out


class Model:
    def __init__(self, config: DaceConfig, q: Any, out: Any) -> None:
        self.q, self.out = q, out
        self.scale = FrozenStencil(scale, backend=config.backend, origin=(0, 0, 0), domain=SHAPE)
        orchestrate(obj=self, config=config)

    def __call__(self):
        self.scale(self.q, self.out)


@pytest.mark.parametrize("kind", [Forwarding, FreshView, Computed], ids=lambda k: k.__name__)
def test_a_model_holding_containers_computes_what_python_mode_computes_after_swaps(tmp_path, kind):
    import gt4py.storage as gt_storage

    def run(mode: str) -> list[np.ndarray]:
        config = DaceConfig(None, backend="dace:cpu", orchestration=mode, cache_root=tmp_path / "cache")
        rng = np.random.default_rng(0)

        def storage() -> np.ndarray:
            return gt_storage.from_array(rng.uniform(-1, 1, SHAPE), backend="dace:cpu")

        model = Model(config, kind(storage()), kind(storage()))
        seen = []
        for swap in (None, "q", None, "out", "q"):
            if swap:
                getattr(model, swap)._data = storage()
            model()
            seen += [np.array(model.q._data), np.array(model.out._data)]
        return seen

    for orchestrated, reference in zip(run("BuildAndRun"), run("Python")):
        assert np.array_equal(orchestrated, reference)
