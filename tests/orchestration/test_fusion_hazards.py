"""DaCe's state fusion keeps a write after the read it must follow (orchestra's guard around StateFusion).

The program below reads two elements of ``x`` and writes each from the
other's value. DaCe's simplify alone fuses its states into one in which the
second write comes before the first read (the premise, measured here); with
the guard, the result equals NumPy's.
"""


import dace
import numpy as np

from orchestra.passes.simplify import simplify


@dace.program
def _cross_update(x: dace.float64[5, 4, 3]):
    a: dace.float64 = x[1, 1, 1]
    b: dace.float64 = x[2, 2, 2]
    x[1, 1, 1] = b * 2.0
    x[2, 2, 2] = a * 3.0


def _expected(x: np.ndarray) -> np.ndarray:
    x = x.copy()
    a, b = x[1, 1, 1], x[2, 2, 2]
    x[1, 1, 1], x[2, 2, 2] = b * 2.0, a * 3.0
    return x


def _run(sdfg) -> tuple[np.ndarray, np.ndarray]:
    x = np.random.default_rng(0).random((5, 4, 3))
    got = x.copy()
    sdfg(x=got)
    return got, _expected(x)


def test_dace_alone_fuses_the_write_before_the_read():
    sdfg = _cross_update.to_sdfg(simplify=False)
    sdfg.simplify()
    got, expected = _run(sdfg)
    assert sdfg.num_states() == 1 and not np.array_equal(got, expected)


def test_with_the_guard_the_states_keep_their_order():
    sdfg = _cross_update.to_sdfg(simplify=False)
    simplify(sdfg)
    got, expected = _run(sdfg)
    assert sdfg.num_states() > 1 and np.array_equal(got, expected)


def test_the_guard_is_removed_after_simplify():
    from dace.transformation.interstate.state_fusion import StateFusion

    before = StateFusion.can_be_applied
    simplify(_cross_update.to_sdfg(simplify=False))
    assert StateFusion.can_be_applied is before
