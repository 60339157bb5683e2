"""The benchmark and research scripts in ``bench/`` are not run by the suite, so a module moved in
``src`` would break them silently. Every name they import from IndexFoundry (or from each other) must
exist where they import it from; checked statically, without running the scripts or importing the
peers' libraries some of them need."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
BENCH = REPO / "bench"
OURS = ("indexfoundry", "bench")


def imported_names(path: Path) -> list[tuple[str, str | None, int]]:
    """(module, name or None for a plain ``import``, line) for every import of IndexFoundry or of
    another bench module, at any depth of the file (imports inside functions included)."""
    found: list[tuple[str, str | None, int]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] in OURS:
                found.extend((node.module, alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.Import):
            found.extend((a.name, None, node.lineno) for a in node.names if a.name.split(".")[0] in OURS)
    return found


def unresolved(path: Path) -> list[str]:
    """The imports of ``path`` that name a module or an attribute that does not exist."""
    missing: list[str] = []
    for module_name, name, line in imported_names(path):
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if (exc.name or "").split(".")[0] in OURS:
                missing.append(f"{path.name}:{line}: no module {module_name}")
            continue  # a third-party library this script needs and this environment lacks
        if name is None or name == "*" or hasattr(module, name):
            continue
        try:
            importlib.import_module(f"{module_name}.{name}")
        except ModuleNotFoundError:
            missing.append(f"{path.name}:{line}: {module_name} has no {name}")
    return missing


SCRIPTS = sorted(BENCH.rglob("*.py"))


@pytest.mark.parametrize("script", SCRIPTS, ids=[str(p.relative_to(BENCH)) for p in SCRIPTS])
def test_every_bench_script_imports_names_that_exist(script: Path):
    assert unresolved(script) == []


def test_the_check_finds_a_name_that_moved(tmp_path: Path):
    script = tmp_path / "moved.py"
    script.write_text(
        "def main():\n"
        "    from indexfoundry.retrieval.fusion import not_a_function\n"
        "    from indexfoundry.no_such_room import anything\n",
        encoding="utf-8",
    )
    assert unresolved(script) == [
        "moved.py:2: indexfoundry.retrieval.fusion has no not_a_function",
        "moved.py:3: no module indexfoundry.no_such_room",
    ]
