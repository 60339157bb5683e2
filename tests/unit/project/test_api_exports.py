"""``indexfoundry.api`` imports what it re-exports on first use: every name it declares for the
type checker exists at runtime, and no api function uses a name that exists only for the checker."""

from __future__ import annotations

import ast
import builtins
import subprocess
import sys
from pathlib import Path

import indexfoundry.api as api

SOURCE = Path(api.__file__).read_text(encoding="utf-8")
TREE = ast.parse(SOURCE)


def _type_checking_reexports() -> set[str]:
    """Names imported as ``from x import name as name`` under ``if TYPE_CHECKING:`` (plus annotations)."""
    names: set[str] = set()
    for node in TREE.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for inner in node.body:
                if isinstance(inner, ast.ImportFrom):
                    names.update(a.name for a in inner.names if a.asname == a.name)
                elif isinstance(inner, ast.AnnAssign) and isinstance(inner.target, ast.Name):
                    names.add(inner.target.id)
    return names


def _runtime_globals() -> set[str]:
    names = set(dir(builtins))
    for node in TREE.body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names


def test_every_name_api_declares_for_the_type_checker_is_there_at_runtime():
    declared = _type_checking_reexports()
    assert declared, "no re-exports found: the test no longer reads api.py's shape"
    missing = sorted(name for name in declared if not hasattr(api, name))
    assert missing == []


def test_no_api_function_uses_a_name_imported_only_for_the_type_checker():
    runtime = _runtime_globals()
    offenders = []
    for fn in (n for n in TREE.body if isinstance(n, ast.FunctionDef)):
        local = {a.arg for a in [*fn.args.args, *fn.args.kwonlyargs]}
        local |= {a.arg for a in (fn.args.vararg, fn.args.kwarg) if a is not None}
        for node in ast.walk(fn):
            if isinstance(node, ast.Import | ast.ImportFrom):
                local.update((a.asname or a.name).split(".")[0] for a in node.names)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                local.add(node.id)
        for statement in fn.body:  # annotations are strings (from __future__ import annotations)
            for node in ast.walk(statement):
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in local | runtime:
                    offenders.append(f"{fn.name}: {node.id} (line {node.lineno})")
    assert offenders == []


def test_importing_api_imports_no_run_handle_pipeline_or_model_config():
    code = (
        "import sys, indexfoundry.api; "
        "print(sorted(m for m in ('indexfoundry.app.handles', 'indexfoundry.pipeline.runner', "
        "'indexfoundry.models.config') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
    # ... and the first use imports it.
    assert api.Run.__module__ == "indexfoundry.app.handles"


def test_api_re_exports_no_retrieval_internal_a_surface_would_page_with():
    """Budgets, cursors and paging are decided in ``app``; surfaces get app results, not the tools."""
    below_app = sorted(
        name for name, (module, _) in api._EXPORTS.items() if module.startswith("indexfoundry.retrieval")
    )
    assert below_app == []
