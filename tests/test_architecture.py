"""The house rules that a reader relies on: no import circles in ``orchestra/`` or ``driver/``; layers kept.

Every import between orchestra's modules counts, also those inside functions
(a lazy import hides a circle from the interpreter, not from a reader); only
imports for type checkers (``if TYPE_CHECKING:``) are left out.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "orchestra"
DRIVER = Path(__file__).resolve().parents[1] / "driver"


def module_name(path: Path, package: Path = PACKAGE) -> str:
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def runtime_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node of ``tree`` except those under ``if TYPE_CHECKING:``."""
    found, stack = [], [tree]
    while stack:
        node = stack.pop()
        found.append(node)
        for child in ast.iter_child_nodes(node):
            type_only = isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test)
            if not type_only:
                stack.append(child)
    return found


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    modules = {module_name(path, package): path for path in package.rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        for node in runtime_nodes(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = name.split(".") if is_package else name.split(".")[:-1]
                    base = base[: len(base) - (node.level - 1)]
                    prefix = ".".join(base + ([node.module] if node.module else []))
                else:
                    prefix = node.module or ""
                # `from pkg import module` imports a module; `from module import name` a name.
                targets = [f"{prefix}.{alias.name}" if f"{prefix}.{alias.name}" in modules else prefix
                           for alias in node.names]
            for target in targets:
                if target in modules and target != name:
                    graph[name].add(target)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import circle as a list of modules (empty when there is none)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        path.append(node)
        for successor in sorted(graph[node]):
            if state.get(successor) == 1:
                return path[path.index(successor):] + [successor]
            if successor not in state:
                cycle = visit(successor)
                if cycle:
                    return cycle
        path.pop()
        state[node] = 2
        return []

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return []


def test_the_checker_finds_a_circle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) == []


def test_no_import_circle_in_orchestra():
    graph = import_graph()
    assert "orchestra.passes.debug.insert" in graph["orchestra.passes.debug"]  # lazy imports are seen
    cycle = find_cycle(graph)
    assert not cycle, "import circle: " + " -> ".join(cycle)


def test_no_import_circle_in_the_driver():
    cycle = find_cycle(import_graph(DRIVER))
    assert not cycle, "import circle: " + " -> ".join(cycle)


#: package -> the packages and modules it must not import (lower layers never reach up)
LAYERS = {
    "orchestra.key": ("orchestra.pipeline", "orchestra.calls", "orchestra.orchestrate", "orchestra.distributed"),
    "orchestra.cache": ("orchestra.pipeline", "orchestra.calls", "orchestra.orchestrate", "orchestra.key"),
    "orchestra.calls": ("orchestra.pipeline", "orchestra.orchestrate"),
    "orchestra.stencils": ("orchestra.pipeline", "orchestra.orchestrate"),
    "orchestra.distributed": ("orchestra.orchestrate", "orchestra.calls"),  # staging loads through pipeline.stages
    "orchestra.observe": ("orchestra.orchestrate",),
    "orchestra.pipeline": ("orchestra.orchestrate",),
}


def test_lower_layers_import_nothing_above_them():
    graph = import_graph()
    broken = [f"{module} imports {target}" for module, targets in graph.items() for target in targets
              for package, above in LAYERS.items()
              if (module == package or module.startswith(package + "."))
              and any(target == name or target.startswith(name + ".") for name in above)]
    assert not broken, broken


def test_the_top_level_holds_few_modules_and_every_package_states_its_contract():
    modules = sorted(path.name for path in PACKAGE.glob("*.py"))
    assert len(modules) <= 8, modules
    for init in PACKAGE.glob("*/__init__.py"):
        docstring = ast.get_docstring(ast.parse(init.read_text()))
        assert docstring and len(docstring.split()) >= 15, f"{init.parent.name}/__init__.py states no contract"


def test_modules_and_functions_stay_readable_in_one_sitting():
    too_long = []
    for path in PACKAGE.rglob("*.py"):
        text = path.read_text()
        if text.count("\n") > 450:
            too_long.append(f"{path.relative_to(PACKAGE)}: {text.count(chr(10))} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno >= 60:
                too_long.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {node.name}")
    assert not too_long, too_long
