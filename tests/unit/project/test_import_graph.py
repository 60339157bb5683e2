"""No import cycles between packages, nor between modules of different layers, counting every
import (function-level and TYPE_CHECKING too).

import-linter's layers contract (pyproject.toml, run by .ci/run, with no ignored imports) checks
the direction of imports between the layers; this test checks the finer grain: between any two
packages of ``src/`` (a top-level module such as ``api.py`` counts as its own package) there is no
cycle, and no cycle of modules reaches across two layers, including the ones that imports inside
functions hide from Python at import time.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[3] / "src"
ROOT = "indexfoundry"


def _modules() -> dict[str, Path]:
    modules: dict[str, Path] = {}
    for path in sorted((SRC / ROOT).rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        modules[name] = path
    return modules


def _node(module: str, modules: dict[str, Path]) -> str:
    """The package a module belongs to (a module directly under the root is its own node)."""
    path = modules[module]
    if path.name == "__init__.py":
        return module
    package = module.rsplit(".", 1)[0]
    return module if package == ROOT else package


def _imports(module: str, path: Path, modules: dict[str, Path]) -> set[str]:
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            # ``from pkg import submodule`` imports the submodule.
            targets = [f"{source}.{a.name}" if f"{source}.{a.name}" in modules else source for a in node.names]
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target.startswith(ROOT):
                found.add(target)
    return found


def package_graph() -> dict[str, set[str]]:
    """Edges between packages: P -> Q when a module of P imports a module of Q."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        source = _node(module, modules)
        for target in _imports(module, path, modules):
            dest = _node(target, modules)
            if dest != source and dest != ROOT:
                graph.setdefault(source, set()).add(dest)
    return graph


def module_graph() -> dict[str, set[str]]:
    """Edges between modules: M -> N when M imports N (the root package, the version, left out)."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        if module == ROOT:
            continue
        for target in _imports(module, path, modules):
            if target not in (module, ROOT):
                graph.setdefault(module, set()).add(target)
    return graph


def layer_of(module: str) -> str:
    """The layer a module belongs to: the first name under the root (``indexfoundry.app.runs``: app)."""
    return module.split(".")[1]


def cross_layer_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The cycles of ``graph`` whose modules belong to more than one layer."""
    return [component for component in cycles(graph) if len({layer_of(m) for m in component}) > 1]


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component: list[str] = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycle_between_packages_counting_function_level_imports() -> None:
    assert cycles(package_graph()) == []


def test_no_import_cycle_between_modules_of_different_layers() -> None:
    assert cross_layer_cycles(module_graph()) == []


def test_the_cycle_check_finds_a_cycle_hidden_in_a_function() -> None:
    # The checker itself must be able to fail: a two-package loop and a three-package loop.
    assert cycles({"a": {"b"}, "b": {"a"}}) == [["a", "b"]]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_layer_check_finds_a_cycle_across_layers_and_lets_one_inside_a_layer_pass() -> None:
    across = {
        "indexfoundry.app.a": {"indexfoundry.surfaces.http.b"},
        "indexfoundry.surfaces.http.b": {"indexfoundry.api"},
    }
    across["indexfoundry.api"] = {"indexfoundry.app.a"}
    assert cross_layer_cycles(across) == [["indexfoundry.api", "indexfoundry.app.a", "indexfoundry.surfaces.http.b"]]
    inside = {
        "indexfoundry.phases.x": {"indexfoundry.phases.x.y"},
        "indexfoundry.phases.x.y": {"indexfoundry.phases.x"},
    }
    assert cross_layer_cycles(inside) == []


def test_the_graph_sees_imports_inside_functions() -> None:
    graph = package_graph()
    # phases/base.py reads the manifest through an import inside a function.
    assert "indexfoundry.storage" in graph["indexfoundry.phases"]
