"""Manifests read back exactly or fail as CorruptEntry; differences read like a diff."""

from __future__ import annotations

import dataclasses
import enum
import json

import pytest

from orchestra.cache import CorruptEntry, Manifest, describe_differences, fingerprint
from orchestra.cache.manifest import describe_inputs


class Mode(enum.Enum):
    BUILD = 1
    RUN = 2


@dataclasses.dataclass(frozen=True)
class Checks:
    nan: bool
    negative: bool


@pytest.fixture
def manifest(example_inputs) -> Manifest:
    inputs = example_inputs()
    return Manifest.new(
        fingerprint(inputs), "DynamicalCore.__call__", inputs, "build/lib.so", 12.5, "0.1.0"
    )


def test_json_roundtrip(manifest):
    full = manifest.with_checksum("ab" * 32)
    assert Manifest.from_json(full.to_json()) == full
    assert full.inputs["per_rank_domain"] == [24, 24, 4]  # canonical form
    assert full.host and full.created.endswith("+00:00")


def test_stage_seconds_roundtrip_and_a_manifest_written_before_them_is_valid(manifest):
    timed = dataclasses.replace(manifest, stage_seconds={"parse": 1.5, "optimize": 2, "compile": 3.25})
    assert Manifest.from_json(timed.to_json()).stage_seconds == {"parse": 1.5, "optimize": 2.0, "compile": 3.25}
    older = {k: v for k, v in json.loads(manifest.to_json()).items() if k != "stage_seconds"}
    assert Manifest.from_json(json.dumps(older)).stage_seconds == {}


def test_read_roundtrip(manifest, tmp_path):
    path = tmp_path / "manifest.json"
    path.write_text(manifest.to_json())
    assert Manifest.read(path) == manifest


@pytest.mark.parametrize(
    "mangle, detail",
    [
        (lambda text: text[: len(text) // 2], "not valid JSON"),
        (lambda text: "", "not valid JSON"),
        (lambda text: "[1, 2]", "not a JSON object"),
        (
            lambda text: json.dumps({k: v for k, v in json.loads(text).items() if k != "checksum"}),
            "lacks the field 'checksum'",
        ),
        (
            lambda text: json.dumps({**json.loads(text), "build_seconds": "fast"}),
            "'build_seconds' has the wrong type",
        ),
        (
            lambda text: json.dumps({**json.loads(text), "inputs": [1]}),
            "'inputs' has the wrong type",
        ),
        (lambda text: json.dumps({**json.loads(text), "inputs": {"$bad": 1}}), "not canonical"),
        (
            lambda text: json.dumps({**json.loads(text), "stage_seconds": {"parse": "slow"}}),
            "'stage_seconds' must map stage names to seconds",
        ),
    ],
)
def test_invalid_manifests_raise_corrupt_entry(manifest, tmp_path, mangle, detail):
    path = tmp_path / "manifest.json"
    path.write_text(mangle(manifest.to_json()))
    with pytest.raises(CorruptEntry, match=detail) as raised:
        Manifest.read(path)
    assert raised.value.path == path


def test_unreadable_manifests_raise_corrupt_entry(tmp_path):
    with pytest.raises(CorruptEntry, match="unreadable"):
        Manifest.read(tmp_path / "missing.json")
    binary = tmp_path / "binary.json"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(CorruptEntry):
        Manifest.read(binary)


def test_describe_differences_examples(example_inputs):
    expected = example_inputs(per_rank_domain=(48, 48, 1), debug_checks=True)
    found = example_inputs(
        per_rank_domain=(24, 24, 1),
        scalars={"da_min": 9.9e5, "n_split": 3},
        source={"Acoustics.__call__": "def __call__(self, u, v):\n    pass\n" * 4},
    )
    del found["debug_checks"]
    assert describe_differences(expected, found) == [
        "debug_checks: only in expected",
        "per_rank_domain: (48, 48, 1) vs (24, 24, 1)",
        "scalars.da_min: 1200000.0 vs 990000.0",
        "source['Acoustics.__call__'] changed",
    ]


def test_describe_differences_is_symmetric_in_wording(example_inputs):
    expected = example_inputs()
    found = example_inputs(extra_pass="fuse")
    assert describe_differences(expected, found) == ["extra_pass: only in found"]
    assert describe_differences(found, expected) == ["extra_pass: only in expected"]


@pytest.mark.parametrize(
    "expected, found, lines",
    [
        ({"a": 1}, {"a": 1}, []),
        ({"a": 1}, {"a": 1.0}, ["a: 1 vs 1.0"]),
        ({"a": True}, {"a": 1}, ["a: True vs 1"]),
        ({"a": {"b": [1]}}, {"a": {"b": [1.0]}}, ["a.b: (1,) vs (1.0,)"]),
        ({"mode": Mode.RUN}, {"mode": Mode.BUILD}, ["mode: Mode.RUN vs Mode.BUILD"]),
        ({"c": Checks(True, False)}, {"c": Checks(True, True)}, ["c.negative: False vs True"]),
        ({"s": [{"n": 1}, {"n": 2}]}, {"s": [{"n": 1}, {"n": 3}]}, ["s[1].n: 2 vs 3"]),
        ({"key": "ab" * 32}, {"key": "cd" * 32}, ["key changed"]),
        ({"flags": "-O3"}, {"flags": "-O2"}, ["flags: '-O3' vs '-O2'"]),
        ({"x": float("nan")}, {"x": 1.0}, ["x: float('nan') vs 1.0"]),
        ({"b": None}, {"b": {"c": 1}}, ["b: None vs {'c': 1}"]),
    ],
)
def test_describe_differences_cases(expected, found, lines):
    assert describe_differences(expected, found) == lines


def test_describe_differences_order_is_deterministic():
    expected = {"z": 1, "a": 1, "m": {"y": 1, "b": 1}}
    found = {"m": {"b": 2, "y": 2}, "a": 2, "z": 2}
    assert describe_differences(expected, found) == [
        "a: 1 vs 2",
        "m.b: 1 vs 2",
        "m.y: 1 vs 2",
        "z: 1 vs 2",
    ]


def test_describe_inputs(example_inputs):
    lines = describe_inputs(example_inputs(mode=Mode.RUN, checks=Checks(True, False)))
    assert lines[:4] == [
        "backend: 'dace:cpu'",
        "checks.nan: True",
        "checks.negative: False",
        "debug_checks: False",
    ]
    assert "mode: Mode.RUN" in lines
    assert any(
        line.startswith("source['Acoustics.__call__']: <str of 136 characters, sha256 ")
        for line in lines
    )
