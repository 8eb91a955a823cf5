"""The parse audit catches a hole in the cache key at build time.

Each test makes a hole on purpose (an input taken out of the key, or keyed
with another value) and checks that the audit of a real parse names the
unkeyed input; unmodified keys of the same models pass. The last test builds
for real with a call-tree node missing from the key: without the audit that
build would succeed and be published.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Callable

import pytest

from orchestra import BuildError
from orchestra.cache.store import BuildStore
from orchestra.key.call_tree import function_name
from orchestra.examples.diffusion import DiffusionModel, initial_state
from orchestra.pipeline.audit import ParseRecorder, audit_parse
from orchestra.pipeline.stages import parse
from orchestra.toolchain import dace_settings
from tests.cache.model_variants import BACKEND, MODEL_FILE, config, key_of, load_model_module, state

INNER = "Middle.__call__/Inner.__call__"
HELPER = "Middle.__call__/Helper.apply"


class Parsed:
    """One model's key inputs, and what a real parse of it used."""

    def __init__(self, model: Any, *args: Any) -> None:
        self.program = model.__orchestra_programs__["__call__"]
        _, self.inputs = key_of(model, *args)
        dace_program = self.program.dace_program(args)
        with dace_settings(), ParseRecorder() as recorder:
            self.sdfg = parse(dace_program, args, {}).sdfg
        self.records = recorder.records
        self.closure = dace_program.resolver

    def audit(self, inputs: dict[str, Any]) -> None:
        audit_parse(self.records, self.sdfg, self.closure, inputs, function_name(self.program.function),
                    self.program.label)


@pytest.fixture(scope="module")
def three_levels(tmp_path_factory) -> Parsed:
    module = load_model_module(MODEL_FILE.read_text(), tmp_path_factory.mktemp("model"))
    return Parsed(module.Outer(config()), state(module))


@pytest.fixture(scope="module")
def diffusion() -> Parsed:
    shape = (12, 10, 3)
    model = DiffusionModel(config(), shape)
    return Parsed(model, *initial_state(shape, BACKEND))


def test_the_recorder_sees_every_function_parsed_at_every_depth(three_levels):
    parsed = {record.function.removeprefix("call_tree_model_variant.") for record in three_levels.records}
    assert {"Outer.__call__", "Middle.__call__", "Inner.__call__", "Helper.apply", "twice", "once"} <= parsed
    inner = [record for record in three_levels.records if record.function.endswith("Inner.__call__")]
    assert inner and all(record.constants == {"self.k": "1.5"} for record in inner)


def test_unmodified_keys_pass_the_audit(three_levels, diffusion):
    three_levels.audit(three_levels.inputs)
    diffusion.audit(diffusion.inputs)


def test_an_audit_that_saw_no_parse_fails_instead_of_passing(three_levels):
    """If a DaCe upgrade bypassed the recorder, the audit would see nothing: that must not pass."""
    with pytest.raises(BuildError, match=r"saw DaCe preprocess no function .*Outer\.__call__"):
        audit_parse([], three_levels.sdfg, three_levels.closure, three_levels.inputs,
                    function_name(three_levels.program.function), three_levels.program.label)


def _drop_node(inputs: dict) -> None:
    del inputs["call_tree"][INNER]


def _other_stencil_id(inputs: dict) -> None:
    (identity,) = inputs["call_tree"][INNER]["callees"].values()
    identity["gt_id"] = "0000000000"


def _other_domain(inputs: dict) -> None:
    (identity,) = [callee for callee in inputs["call_tree"][HELPER]["callees"].values() if "domain" in callee]
    identity["domain"] = [4, 4, 2]


def _other_scalar(inputs: dict) -> None:
    inputs["call_tree"][HELPER]["scalars"]["self.offset"] = 0.5


def _no_source(inputs: dict) -> None:
    del inputs["source"]["call_tree_model_variant.once"]


def _other_source(inputs: dict) -> None:
    inputs["source"]["call_tree_model_variant.twice"] = "0" * 64


def _no_top_scalar(inputs: dict) -> None:
    del inputs["scalars"]["self.b"]


def _no_callback(inputs: dict) -> None:
    inputs["callbacks"].remove("self.halo.update")


def _other_closure_array(inputs: dict) -> None:
    (description,) = inputs["closure_arrays"].values()
    description["shape"] = [13, 10, 3]


def _no_closure_array(inputs: dict) -> None:
    inputs["closure_arrays"].clear()


HOLES: list[tuple[str, Callable[[dict], None], str]] = [
    ("three_levels", _drop_node, r"Inner\.__call__ \(no node of the key\) used the folded constant self\.k = 1\.5"),
    ("three_levels", _other_stencil_id,
     r"Inner\.__call__ \(call_tree\['Middle.__call__/Inner.__call__'\]\) used the callee FrozenStencil\(scale"),
    ("three_levels", _other_domain, r"Helper\.apply .* used the callee FrozenStencil\(shift.*\"domain\":\[5,4,2\]"),
    ("three_levels", _other_scalar, r"Helper\.apply .* used the folded constant self\.offset = 0\.75 \(keyed: 0\.5\)"),
    ("three_levels", _no_source, r"the function call_tree_model_variant\.once, whose source the key does not hold"),
    ("three_levels", _other_source, r"another source of call_tree_model_variant\.twice"),
    ("three_levels", _no_top_scalar,
     r"Outer\.__call__ \(top level\) used the folded constant self\.b = 2\.0 \(keyed: nothing\)"),
    ("diffusion", _no_callback, r"DiffusionModel\.__call__ \(top level\) used the callback self\.halo\.update"),
    ("diffusion", _other_closure_array, r"the parse read the array .*lap.*\[12,10,3\].*keyed: .*\[13,10,3\]"),
    ("diffusion", _no_closure_array, r"the parse read the array .*lap.* \(keyed: nothing\)"),
]


@pytest.mark.parametrize("model, hole, message", HOLES, ids=[hole.__name__[1:] for _, hole, _ in HOLES])
def test_a_hole_in_the_key_is_named(request, model, hole, message):
    parsed: Parsed = request.getfixturevalue(model)
    inputs = copy.deepcopy(parsed.inputs)
    hole(inputs)
    with pytest.raises(BuildError, match=message) as caught:
        parsed.audit(inputs)
    assert "hole in orchestra's cache key" in str(caught.value)


def test_a_build_whose_key_misses_a_node_fails_and_publishes_nothing(tmp_path, monkeypatch):
    """Every build is audited: a key that forgets a nested component is caught, not published."""
    import orchestra.key.inputs

    describe = orchestra.key.inputs.describe_call_tree

    def forgetting_inner(closure: Any, describe_value: Any) -> dict:
        nodes = describe(closure, describe_value)
        del nodes[INNER]
        return nodes

    monkeypatch.setattr(orchestra.key.inputs, "describe_call_tree", forgetting_inner)
    module = load_model_module(MODEL_FILE.read_text(), tmp_path / "model")
    cache = tmp_path / "cache"
    with pytest.raises(BuildError, match=r"Outer\.__call__: the parse of .*Inner\.__call__ .*self\.k = 1\.5"):
        module.Outer(config("BuildAndRun", cache))(state(module))
    assert BuildStore(Path(cache)).entries() == []
