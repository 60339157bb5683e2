"""The unit tests mirror the package file by file: the tests of ``src/indexfoundry/<pkg>/<module>.py``
are in ``tests/unit/<pkg>/test_<module>.py`` (a package's own ``__init__.py`` is tested as its module,
``tests/unit/<parent>/test_<package>.py``). Checks about the repository as a whole live here, in
``tests/unit/project/``; every other file under ``tests/unit`` is a package marker, a ``conftest.py``
or the tests of one module, so a module's tests are found by its name alone."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
SRC = REPO / "src" / "indexfoundry"
UNIT = REPO / "tests" / "unit"
CROSS_CUTTING = "project"
MARKERS = {"__init__.py", "conftest.py"}


def misplaced(unit: Path, src: Path) -> list[str]:
    """Files under ``unit`` (outside its cross-cutting folder) that are not named after a module of
    ``src`` at the same package path, and test folders without an ``__init__.py``."""
    found: list[str] = []
    for path in sorted(unit.rglob("*")):
        rel = path.relative_to(unit)
        if "__pycache__" in rel.parts or rel.parts[0] == CROSS_CUTTING:
            continue
        if path.is_dir():
            if not (path / "__init__.py").is_file():
                found.append(f"{rel}/: a test folder without __init__.py")
            continue
        if path.name in MARKERS:
            continue
        module = path.name.removeprefix("test_").removesuffix(".py")
        package = src / rel.parent
        named = path.name.startswith("test_") and path.suffix == ".py"
        if not named or not ((package / f"{module}.py").is_file() or (package / module / "__init__.py").is_file()):
            found.append(f"{rel}: no module {rel.parent / module} in src/indexfoundry (name it test_<module>.py)")
    return found


def test_every_unit_test_file_is_named_after_a_module_of_the_same_package_path():
    assert misplaced(UNIT, SRC) == []


def test_a_file_named_after_a_topic_or_a_module_of_another_package_is_reported(tmp_path: Path):
    src, unit = tmp_path / "src", tmp_path / "unit"
    for module in ("storage/__init__.py", "storage/layout.py", "phases/__init__.py", "phases/extract/__init__.py"):
        (src / module).parent.mkdir(parents=True, exist_ok=True)
        (src / module).write_text("")
    for test in (
        "__init__.py",
        "storage/__init__.py",
        "storage/conftest.py",
        "storage/test_layout.py",
        "test_storage.py",
        "phases/__init__.py",
        "phases/test_extract.py",
        "project/__init__.py",
        "project/test_import_graph.py",
    ):
        (unit / test).parent.mkdir(parents=True, exist_ok=True)
        (unit / test).write_text("")
    assert misplaced(unit, src) == []
    (unit / "storage" / "test_layout_paths.py").write_text("")
    (unit / "storage" / "helpers.py").write_text("")
    (unit / "phases" / "test_layout.py").write_text("")
    (unit / "phases" / "extract").mkdir()
    (unit / "phases" / "extract" / "test_nothing.py").write_text("")
    assert [line.split(":")[0] for line in misplaced(unit, src)] == [
        "phases/extract/",
        "phases/extract/test_nothing.py",
        "phases/test_layout.py",
        "storage/helpers.py",
        "storage/test_layout_paths.py",
    ]
