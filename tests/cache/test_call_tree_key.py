"""The cache key covers the whole call tree: mutate every input at every depth, in turn.

The mutations are generated from the model's own structure: every scalar and
stencil reachable from the orchestrated object (attribute mutations), and
every float literal of the model's source file (source mutations: stencil
bodies, methods, functions called by functions, constructors). Each must
change the key, except those that cannot change the program (an unused
attribute, a comment, a blank line). One mutation one call level down is
then built for real: ``Run`` refuses it naming the changed input, and
``BuildAndRun`` rebuilds and matches ``Python`` mode.
"""

from __future__ import annotations

import io
import sys
import tokenize
from typing import Any, Iterator

import numpy as np
import pytest

from orchestra import DaceConfig, FrozenStencil, MissingBuildError
from tests.cache.model_variants import BACKEND, MODEL_FILE, MODULE, config, key_of, load_model_module, state


# ------------------------------------------------------------ attribute mutations
def reachable(obj: Any, path: str = "", seen: set | None = None) -> Iterator[tuple[str, Any, str, Any]]:
    """(path, owner, attribute, value) for every scalar and stencil reachable from ``obj``."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return
    seen.add(id(obj))
    for name, value in vars(obj).items():
        if name.startswith("_") or isinstance(value, DaceConfig):
            continue
        where = f"{path}.{name}" if path else name
        if isinstance(value, (float, int)) and not isinstance(value, bool):
            yield where, obj, name, value
        elif isinstance(value, FrozenStencil):
            yield where, obj, name, value
        elif type(value).__module__ == type(obj).__module__:  # a component or helper of the model
            yield from reachable(value, where, seen)


def mutations_of(value: Any, module: Any) -> Iterator[tuple[str, Any]]:
    if isinstance(value, FrozenStencil):
        other = module.shift if value.definition.__name__ == "scale" else module.scale
        origin, domain = tuple(value.origin), tuple(value.domain)
        yield "domain", FrozenStencil(value.definition, backend=BACKEND, origin=origin, domain=(domain[0] - 1, *domain[1:]))
        yield "origin", FrozenStencil(value.definition, backend=BACKEND, origin=(origin[0] + 1, *origin[1:]),
                                      domain=(domain[0] - 1, *domain[1:]))
        yield "definition", FrozenStencil(other, backend=BACKEND, origin=origin, domain=domain)
    else:
        yield "value", value + 1


def test_every_reachable_scalar_and_stencil_enters_the_key(tmp_path):
    module = load_model_module(MODEL_FILE.read_text(), tmp_path / "base")
    q = state(module)
    base_key, base_inputs = key_of(module.Outer(config()), q)
    assert "Middle.__call__/Inner.__call__" in base_inputs["call_tree"]  # two levels down
    paths = [path for path, *_ in reachable(module.Outer(config()))]
    assert {"middle.inner.k", "middle.inner.scale", "middle.helper.offset", "middle.a", "b"} <= set(paths)
    tried = 0
    for index, (path, _, _, value) in enumerate(reachable(module.Outer(config()))):
        for what, mutated in mutations_of(value, module):
            model = module.Outer(config())  # a fresh model, then the one mutation
            owner, name = dict((p, (o, n)) for p, o, n, _ in reachable(model))[path]
            setattr(owner, name, mutated)
            key, _ = key_of(model, q)
            if path.rsplit(".", 1)[-1].startswith("unused"):
                assert key == base_key, f"{path} ({what}) is not read by the program but changed the key"
            else:
                assert key != base_key, f"{path} ({what}) changed, the key did not"
            tried += 1
    assert tried >= 15


# --------------------------------------------------------------- source mutations
def float_literals(text: str) -> list[tuple[int, int, str]]:
    """(line, column, literal) of every float literal in ``text``."""
    tokens = tokenize.generate_tokens(io.StringIO(text).readline)
    return [(t.start[0], t.start[1], t.string) for t in tokens if t.type == tokenize.NUMBER and "." in t.string]


def replace_at(text: str, line: int, column: int, old: str, new: str) -> str:
    lines = text.splitlines(keepends=True)
    assert lines[line - 1][column : column + len(old)] == old
    lines[line - 1] = lines[line - 1][:column] + new + lines[line - 1][column + len(old) :]
    return "".join(lines)


def test_every_literal_of_the_model_source_enters_the_key_and_comments_do_not(tmp_path):
    text = MODEL_FILE.read_text()
    q = state(load_model_module(text, tmp_path / "base"))
    base_key, _ = key_of(sys.modules[MODULE].Outer(config()), q)
    literals = float_literals(text)
    assert len(literals) >= 7
    for index, (line, column, literal) in enumerate(literals):
        module = load_model_module(replace_at(text, line, column, literal, literal + "1"), tmp_path / f"v{index}")
        key, _ = key_of(module.Outer(config()), q)
        unused = "unused" in text.splitlines()[line - 1]
        assert (key == base_key) == unused, f"line {line}: {text.splitlines()[line - 1].strip()!r}, {literal} -> {literal}1"
    # what cannot change the program: a comment and a blank line inside every function
    lines = text.splitlines(keepends=True)
    bodies = [i for i, l in enumerate(lines) if l.lstrip().startswith(("def ", "with computation"))]
    for number, index in enumerate(bodies):
        indent = " " * (len(lines[index + 1]) - len(lines[index + 1].lstrip()))
        variant = "".join(lines[: index + 1] + [f"{indent}# a comment\n", "\n"] + lines[index + 1 :])
        module = load_model_module(variant, tmp_path / f"c{number}")
        assert key_of(module.Outer(config()), q)[0] == base_key, f"a comment in {lines[index].strip()!r} changed the key"


# ------------------------------------------- which component an edit is in (split_at edited)
#: Where each literal of the model sits (its top-level def or class) -> the classes an edited split
#: rebuilds for it (None: the whole program, as Outer's own body or scalar, or a stencil Outer calls too).
EDITED_CLASSES = {
    "scale": None, "shift": {"Middle"}, "twice": {"Middle"}, "once": {"Middle"}, "Helper": {"Middle"},
    "Inner": {"Inner"}, "Middle": {"Middle"}, "Outer": None,
}


def enclosing_definition(text: str, line: int) -> str:
    """The name of the top-level ``def`` or ``class`` holding ``line`` of ``text``."""
    for number in range(line, 0, -1):
        current = text.splitlines()[number - 1]
        if current.startswith(("def ", "class ")):
            return current.split()[1].split("(")[0].rstrip(":")
    raise AssertionError(f"line {line} is outside every definition")


def test_every_literal_edit_is_attributed_to_the_components_holding_it(tmp_path):
    """What ``split_at=("edited",)`` would rebuild for each literal of the model, at every depth."""
    from orchestra.pipeline.split_builds import edited_classes, orchestrated_classes

    text = MODEL_FILE.read_text()
    base = load_model_module(text, tmp_path / "base")
    q = state(base)
    classes = orchestrated_classes(base.Outer(config()))
    _, base_inputs = key_of(base.Outer(config()), q)
    checked = set()
    for index, (line, column, literal) in enumerate(float_literals(text)):
        if "unused" in text.splitlines()[line - 1]:
            continue
        module = load_model_module(replace_at(text, line, column, literal, literal + "1"), tmp_path / f"v{index}")
        _, inputs = key_of(module.Outer(config()), q)
        where = enclosing_definition(text, line)
        expected = EDITED_CLASSES[where]
        found = edited_classes(inputs, base_inputs, classes)
        assert found == (None if expected is None else frozenset(expected)), f"line {line} (in {where}): {found}"
        checked.add(where)
    assert checked == set(EDITED_CLASSES)  # every kind of place was edited


# ------------------------------------------------- a nested edit, built for real
def test_nested_stencil_edit_is_refused_in_run_and_rebuilt_in_build_and_run(tmp_path, capsys):
    """The reported bug: an edited stencil one level down silently reloaded the old build."""
    from orchestra.cli import main as orchestra_command

    cache = tmp_path / "cache"
    text = MODEL_FILE.read_text()
    base = load_model_module(text, tmp_path / "base")
    base.Outer(config("BuildAndRun", cache))(state(base))

    edited_text = text.replace("q = q * factor + 0.125", "q = q * factor + 50.0")
    assert edited_text != text
    edited = load_model_module(edited_text, tmp_path / "edited")
    with pytest.raises(MissingBuildError, match=r"the code of stencil \S*scale \(called in \S*Inner\.__call__\)"):
        edited.Outer(config("Run", cache))(state(edited))
    # `orchestra cache explain` names the nested difference by its call path, too
    capsys.readouterr()
    assert orchestra_command(["cache", "explain", "--root", str(cache), "Outer.__call__"]) == 0
    explained = capsys.readouterr().out
    assert "miss" in explained, explained
    changed = [line for line in explained.splitlines() if "gt_id" in line]
    assert any("call_tree['Middle.__call__/Inner.__call__'].callees" in line for line in changed), explained

    orchestrated = edited.Outer(config("BuildAndRun", cache))
    q = state(edited)
    orchestrated(q)
    assert orchestrated.__orchestra_programs__["__call__"].built_here
    reference = state(edited)
    edited.Outer(DaceConfig(None, backend=BACKEND, orchestration="Python"))(reference)
    assert np.array_equal(np.asarray(q), np.asarray(reference))
