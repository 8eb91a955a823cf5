"""Cache keys: deterministic across processes, sensitive to every input, blind to noise."""

from __future__ import annotations

import dataclasses
import enum
import http
import json
import subprocess
import sys

import numpy as np
import pytest

from orchestra.cache.fingerprint import CACHE_FORMAT_VERSION, KEY_METADATA, canonical, fingerprint

# The package re-exports the function ``fingerprint`` under the module's name.
fingerprint_module = sys.modules["orchestra.cache.fingerprint"]


class Mode(enum.Enum):
    BUILD = 1
    RUN = 2


class Level(enum.IntEnum):
    ONE = 1


@dataclasses.dataclass(frozen=True)
class Options:
    passes: tuple[str, ...]
    nan_checks: bool
    log_label: str = dataclasses.field(default="", metadata={KEY_METADATA: False})


class Stencil:
    """An object that states its own identity."""

    def __init__(self, name: str, origin: tuple[int, int, int]) -> None:
        self.name, self.origin = name, origin

    def __fingerprint__(self) -> dict:
        return {"name": self.name, "origin": self.origin}


class Foo:
    pass


def nested(da_min: float = 1.2e6, order: tuple = (1, 2, 3)) -> dict:
    return {
        "backend": "dace:cpu",
        "scalars": {"da_min": da_min, "n_split": 3},
        "layout": {"order": order, "tags": {"halo", "regions", "tile-edges"}},
    }


# Inputs whose canonical text must not depend on the process (set order follows PYTHONHASHSEED).
CROSS_PROCESS_SOURCE = """
import http, json, sys
import numpy as np
from orchestra.cache.fingerprint import fingerprint
inputs = {
    "z": {"b": 1, "a": [1.5, 2, None, True]},
    "tags": {"halo", "regions", "tile-edges", "nan-check", "x", "y"},
    "dtype": np.dtype("float32"),
    "status": http.HTTPStatus.OK,
    "scalar": np.float32(0.1),
    "text": "h\\u00e9llo",
}
print(fingerprint(inputs))
"""


def test_same_key_across_processes(child_env):
    keys = set()
    for seed in ("0", "1", "12345"):
        env = dict(child_env, PYTHONHASHSEED=seed)
        result = subprocess.run(
            [sys.executable, "-c", CROSS_PROCESS_SOURCE],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        keys.add(result.stdout.strip())
    here = {}
    exec(
        CROSS_PROCESS_SOURCE.replace("print(fingerprint(inputs))", "key = fingerprint(inputs)"),
        here,
    )
    assert keys == {here["key"]}
    assert len(here["key"]) == 64


def test_insensitive_to_dict_insertion_order():
    first = {"a": 1, "b": {"x": 1.0, "y": [1, 2]}, "c": None}
    second = {"c": None, "b": {"y": [1, 2], "x": 1.0}, "a": 1}
    assert fingerprint(first) == fingerprint(second)


@pytest.mark.parametrize(
    "changed",
    [
        nested(da_min=1.2e6 + 1e-4),
        nested(order=(1, 3, 2)),
        {**nested(), "backend": "dace:gpu"},
        {**nested(), "extra": None},
    ],
)
def test_key_changes_when_any_nested_value_changes(changed):
    assert fingerprint(nested()) != fingerprint(changed)


@pytest.mark.parametrize(
    "left, right",
    [
        (1.0, 1.0000000001),
        (1, 1.0),
        (True, 1),
        (0.0, -0.0),
        ((1, 2), (2, 1)),
        (None, "None"),
        ("1", 1),
        (float("inf"), float("-inf")),
        (np.float32(1.5), 1.5),
        (np.int32(3), 3),
        (np.dtype("float32"), np.dtype("float64")),
        (Mode.BUILD, 1),
        (Level.ONE, 1),
        (Mode.BUILD, Mode.RUN),
        ({"a": 1}, [("a", 1)]),
        ({1, 2}, [1, 2]),
    ],
)
def test_distinct_values_give_distinct_keys(left, right):
    assert fingerprint({"v": left}) != fingerprint({"v": right})


@pytest.mark.parametrize(
    "left, right",
    [
        ((1, 2), [1, 2]),
        (np.float64(2.5), 2.5),
        (np.int64(7), 7),
        (np.bool_(True), True),
        (np.float64, np.dtype("float64")),
        (float, np.dtype("float64")),
        ({3, 1, 2}, frozenset({1, 2, 3})),
        (float("nan"), np.float64("nan")),
    ],
)
def test_equivalent_values_give_equal_keys(left, right):
    assert fingerprint({"v": left}) == fingerprint({"v": right})


def test_dataclass_fields_enter_the_key_unless_excluded():
    base = Options(passes=("simplify",), nan_checks=True, log_label="a")
    assert fingerprint({"o": base}) == fingerprint({"o": dataclasses.replace(base, log_label="b")})
    assert fingerprint({"o": base}) != fingerprint(
        {"o": dataclasses.replace(base, nan_checks=False)}
    )
    assert canonical(base)["fields"] == {"nan_checks": True, "passes": ["simplify"]}


def test_objects_with_fingerprint_method():
    assert fingerprint({"s": Stencil("a", (3, 3, 0))}) == fingerprint(
        {"s": Stencil("a", (3, 3, 0))}
    )
    assert fingerprint({"s": Stencil("a", (3, 3, 0))}) != fingerprint(
        {"s": Stencil("a", (0, 0, 0))}
    )


def test_enum_by_qualified_name_and_value():
    assert canonical(Mode.RUN) == {"$enum": f"{__name__}.Mode", "name": "RUN", "value": 2}
    assert canonical(http.HTTPStatus.OK)["$enum"] == "http.HTTPStatus"


@pytest.mark.parametrize(
    "inputs, message",
    [
        (
            {"scalars": {"da_min": Foo()}},
            "inputs['scalars']['da_min']: cannot fingerprint object of type",
        ),
        (
            {"f": len},
            "inputs['f']: cannot fingerprint object of type builtins.builtin_function_or_method",
        ),
        ({"f": lambda: 0}, "inputs['f']: cannot fingerprint object of type builtins.function"),
        ({"l": [1, object()]}, "inputs['l'][1]: cannot fingerprint"),
        (
            {"o": Options(passes=(Foo(),), nan_checks=True)},
            "inputs['o'].passes[0]: cannot fingerprint",
        ),
        ({"a": np.zeros(3)}, "inputs['a']: cannot fingerprint object of type numpy.ndarray"),
        ({"d": {1: "x"}}, "inputs['d']: dict keys must be str"),
        ({"d": {"$enum": "x"}}, "reserved"),
        ({"t": Foo}, "cannot fingerprint object of type builtins.type"),
    ],
)
def test_unfingerprintable_values_name_their_path(inputs, message):
    with pytest.raises(TypeError) as raised:
        fingerprint(inputs)
    assert message in str(raised.value)


def test_foo_is_named_in_the_message():
    with pytest.raises(
        TypeError, match=r"inputs\['scalars'\]\['da_min'\]: cannot fingerprint object of type .*Foo"
    ):
        fingerprint({"scalars": {"da_min": Foo()}})


def test_canonical_form_is_its_own_canonical_form_and_survives_json():
    inputs = {
        "mode": Mode.RUN,
        "options": Options(passes=("a", "b"), nan_checks=False),
        "tags": {"x", "y"},
        "nan": float("nan"),
        "dtype": np.dtype("int32"),
        "f32": np.float32(0.25),
        "stencil": Stencil("s", (1, 2, 3)),
        "raw": b"\x00\x01",
    }
    once = canonical(inputs)
    assert canonical(once) == once
    reloaded = json.loads(json.dumps(once))
    assert fingerprint(reloaded) == fingerprint(inputs)


def test_format_version_salts_the_key(monkeypatch):
    before = fingerprint({"a": 1})
    monkeypatch.setattr(fingerprint_module, "CACHE_FORMAT_VERSION", CACHE_FORMAT_VERSION + "-next")
    assert fingerprint_module.fingerprint({"a": 1}) != before


def test_inputs_must_be_a_mapping():
    with pytest.raises(TypeError, match="expected a mapping"):
        fingerprint([("a", 1)])  # type: ignore[arg-type]
