"""gt4py's stencil SDFGs restated for DaCe 2: a scalar of another type is converted on entry, as float() would.

DaCe 2.0.0b1 takes a nested SDFG's scalar to be the caller's container: an
``int64`` program argument given to a stencil's ``float`` parameter had its
bytes reinterpreted (the build failed: ``cannot convert 'double*' to 'const
int64_t*'``). gt4py refuses such a call stencil by stencil, so the reference
is Python mode given the converted value.
"""

from __future__ import annotations

import numpy as np
import pytest
from gt4py import storage
from gt4py.cartesian.gtscript import PARALLEL, Field, computation, interval

from orchestra import DaceConfig, FrozenStencil, orchestrate_function

BACKEND = "dace:cpu"
SHAPE = (6, 5, 3)


def scale_and_shift(q: Field[np.float64], factor: float, shift: np.int64):
    with computation(PARALLEL), interval(...):
        q = q * factor + shift


def program(config: DaceConfig):
    stencil = FrozenStencil(scale_and_shift, backend=BACKEND, origin=(0, 0, 0), domain=SHAPE)

    def step(q, factor, shift):  # no annotations: the arguments keep the types they are given
        stencil(q, factor, shift)
        stencil(q, factor, shift)

    return orchestrate_function(config)(step)


def test_the_stencils_sdfg_receives_the_given_type_and_converts_it_in_its_first_state():
    import dace

    stencil = FrozenStencil(scale_and_shift, backend=BACKEND, origin=(0, 0, 0), domain=SHAPE)
    field = dace.data.Array(dace.float64, SHAPE)
    sdfg = stencil.__sdfg__(field, dace.data.Scalar(dace.int64), dace.data.Scalar(dace.int64))
    assert sdfg.arrays["factor"].dtype == dace.int64 and not sdfg.arrays["factor"].transient
    assert sdfg.arrays["factor_as_float64"].transient and sdfg.arrays["factor_as_float64"].dtype == dace.float64
    assert sdfg.start_block.label == "cast_factor"
    assert sdfg.arrays["shift"].dtype == dace.int64  # already its type: untouched
    untouched = stencil.__sdfg__(field, dace.data.Scalar(dace.float64), dace.data.Scalar(dace.int64))
    assert "factor_as_float64" not in untouched.arrays


@pytest.mark.parametrize(
    "factor, shift",
    [(3, np.int64(2)), (np.float32(0.1), np.int64(-1)), (True, np.int64(0)), (0.25, np.int32(4)), (2, True)],
    ids=["int", "float32", "bool", "int32-shift", "bool-shift"],
)
def test_a_converted_scalar_computes_what_python_mode_computes_with_the_converted_value(tmp_path, factor, shift):
    orchestrated = program(DaceConfig(None, backend=BACKEND, orchestration="BuildAndRun", cache_root=tmp_path))
    reference = program(DaceConfig(None, backend=BACKEND, orchestration="Python"))
    start = np.random.default_rng(0).uniform(-1, 1, SHAPE)
    q, q_ref = (storage.from_array(start, backend=BACKEND) for _ in range(2))
    orchestrated(q, factor, shift)
    reference(q_ref, np.float64(float(factor)), np.int64(int(shift)))
    assert np.array_equal(np.asarray(q), np.asarray(q_ref))


def test_the_stencils_computation_addresses_the_callers_fields_not_windows_of_them():
    """gt4py nests the computation with windows from the origin on; DaCe 2 would read them as whole fields."""
    import dace
    from dace.sdfg import nodes
    from dace.sdfg.dealias import windowed_connectors

    stencil = FrozenStencil(scale_and_shift, backend=BACKEND, origin=(1, 1, 1), domain=(4, 3, 2))
    field = dace.data.Array(dace.float64, SHAPE)
    sdfg = stencil.__sdfg__(field, dace.data.Scalar(dace.float64), dace.data.Scalar(dace.int64))
    computations = [node for node, _ in sdfg.all_nodes_recursive() if isinstance(node, nodes.NestedSDFG)]
    assert computations and all(not windowed_connectors(node.sdfg) for node in computations)
