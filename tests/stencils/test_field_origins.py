"""A FrozenStencil's origin given per field, as gt4py takes it, works in every mode.

``origin={"_all_": (1, 1, 0), "edge": (0, 0), "profile": (1,)}`` starts the
IJ field ``edge`` at (0, 0), the K field ``profile`` at 1 and every other
field at (1, 1, 0) along the axes it has. Before, construction failed in
every mode (``int('_all_')``); the parse-time argument check and the bound
tightening assumed one (i, j, k) for all fields. Here both modes compute the
same bits, and the numbers are those of the per-field origins (a numpy
reference), not those "_all_" alone would give.
"""

from __future__ import annotations

import numpy as np
import pytest
from gt4py.cartesian import gtscript
from gt4py.cartesian.gtscript import PARALLEL, Field, computation, interval

from orchestra import DaceConfig, FrozenStencil, orchestrate
from orchestra.errors import ConfigurationError, StencilArgumentError

Float = Field[np.float64]
FloatIJ = Field[gtscript.IJ, np.float64]
FloatK = Field[gtscript.K, np.float64]

DOMAIN = (3, 3, 2)
SHAPE = (5, 5, 2)  # 3-D fields: origin (1, 1, 0) plus one point read past the domain along J
EDGE_SHAPE = (4, 5)  # the IJ field, read at origin (0, 0) (and one past along J)
PROFILE_SHAPE = (3,)  # the K field, read from 1
ORIGIN = {"_all_": (1, 1, 0), "edge": (0, 0), "profile": (1,)}
#: no "_all_": a field not named starts at zero (gt4py's rule)
PARTIAL_ORIGIN = {"x": (1, 1, 0), "y": (1, 1, 0), "edge": (1, 0)}


def weigh(x: Float, edge: FloatIJ, profile: FloatK, y: Float):
    with computation(PARALLEL), interval(...):
        y = x * edge[0, 1] + profile


class Model:
    def __init__(self, config: DaceConfig, origin=ORIGIN, edge_origin=None) -> None:
        origin = dict(origin, **({"edge": edge_origin} if edge_origin is not None else {}))
        self.weigh = FrozenStencil(weigh, backend=config.backend, origin=origin, domain=DOMAIN)
        self.weigh_partial = FrozenStencil(weigh, backend=config.backend, origin=PARTIAL_ORIGIN, domain=DOMAIN)
        orchestrate(obj=self, config=config)

    def __call__(self, x, edge, profile, y, z):
        self.weigh(x, edge, profile, y)
        self.weigh_partial(x, edge, profile, z)


def _config(mode: str, cache) -> DaceConfig:
    return DaceConfig(None, backend="dace:cpu", orchestration=mode, cache_root=cache, exit_after_build=False)


def _storage(shape, seed):
    import gt4py.storage as gt_storage

    values = np.random.default_rng(seed).uniform(-1, 1, shape)
    return gt_storage.from_array(values, dtype=np.float64, backend="dace:cpu")


def _arguments(edge_shape=EDGE_SHAPE):
    shapes = [SHAPE, edge_shape, PROFILE_SHAPE, SHAPE, SHAPE]  # x, edge, profile, y, z
    return [_storage(shape, seed) for seed, shape in enumerate(shapes, start=1)]


def _reference(x, edge, profile, y, origin, edge_origin, profile_start) -> np.ndarray:
    """``y`` after ``weigh`` with 3-D fields at ``origin`` and the others at their own starts."""
    (i, j, k), (ni, nj, nk) = origin, DOMAIN
    (ei, ej), expected = edge_origin, np.array(y, copy=True)
    weight = np.asarray(edge)[ei : ei + ni, ej + 1 : ej + 1 + nj, None]
    added = np.asarray(profile)[None, None, profile_start : profile_start + nk]
    expected[i : i + ni, j : j + nj, k : k + nk] = np.asarray(x)[i : i + ni, j : j + nj, k : k + nk] * weight + added
    return expected


def test_per_field_origins_compute_the_same_bits_in_both_modes(tmp_path):
    results, initial = [], [np.asarray(a).copy() for a in _arguments()]
    for mode in ("Python", "BuildAndRun"):
        arguments = _arguments()
        Model(_config(mode, tmp_path))(*arguments)
        results.append([np.asarray(arguments[3]).copy(), np.asarray(arguments[4]).copy()])
    for python, orchestrated in zip(*results):
        assert np.array_equal(python.view(np.uint8), orchestrated.view(np.uint8))
    x, edge, profile, y, z = initial
    expected_y = _reference(x, edge, profile, y, (1, 1, 0), edge_origin=(0, 0), profile_start=1)
    expected_z = _reference(x, edge, profile, z, (1, 1, 0), edge_origin=(1, 0), profile_start=0)
    assert np.array_equal(results[1][0], expected_y) and np.array_equal(results[1][1], expected_z)
    # "_all_" alone (edge at (1, 1), profile at 0) would have computed something else
    assert not np.allclose(results[1][0], _reference(x, edge, profile, y, (1, 1, 0), (1, 1), 0))


def test_an_array_too_small_for_its_own_origin_is_refused_at_parse(tmp_path):
    arguments = _arguments(edge_shape=(4, 5))
    with pytest.raises(StencilArgumentError, match=r"'weigh'.*field 'edge' has shape \(4, 5\).*at least \(5, 5\)"):
        Model(_config("BuildAndRun", tmp_path), edge_origin=(2, 1))(*arguments)
    assert not list(tmp_path.glob("Model.__call__/*/COMPLETE"))


def test_an_origin_of_the_wrong_length_for_its_field_is_refused_at_parse(tmp_path):
    words = r"'weigh'.*origin \(0, 0, 0\) given for field 'edge' has 3 entries.*give 2"
    with pytest.raises(StencilArgumentError, match=words):
        Model(_config("BuildAndRun", tmp_path), edge_origin=(0, 0, 0))(*_arguments())


def test_the_build_identity_keys_each_field_origin_canonically():
    def frozen(origin):
        return FrozenStencil(weigh, backend="dace:cpu", origin=origin, domain=DOMAIN)

    base = frozen(ORIGIN).build_identity()
    assert base["origin"] == {"_all_": [1, 1, 0], "edge": [0, 0], "profile": [1]}
    reordered = frozen({"profile": [1], "edge": np.array([0, 0]), "_all_": (1, 1, 0)}).build_identity()
    assert reordered == base  # order and sequence type do not matter
    assert frozen(dict(ORIGIN, edge=(0, 1))).build_identity() != base  # one field's origin does
    assert frozen((1, 1, 0)).build_identity()["origin"] == [1, 1, 0]
    assert "'edge': (0, 0)" in repr(frozen(ORIGIN))


@pytest.mark.parametrize(
    "origin, words",
    [
        ({"_all_": (1, 1, 0), "edge": 3}, r"origin\['edge'\] must be a sequence of integers, got 3"),
        ({"_all_": (1, 1, 0), "edge": "00"}, r"origin\['edge'\] must be a sequence of integers"),
        ({"_all_": (1, 1, 0), "edge": (0, "a")}, r"origin\['edge'\] must be a sequence of integers"),
        ({0: (1, 1, 0)}, r"origin key 0 is not a field name"),
        ({"_all_": (1, 1)}, r"origin\['_all_'\] is \(1, 1\); it needs three entries"),
        ("_all_", r"origin must be a sequence of integers"),
    ],
)
def test_a_malformed_origin_is_a_clear_error_naming_the_stencil(origin, words):
    with pytest.raises(ConfigurationError, match=r"stencil 'weigh': " + words):
        FrozenStencil(weigh, backend="dace:cpu", origin=origin, domain=DOMAIN)
