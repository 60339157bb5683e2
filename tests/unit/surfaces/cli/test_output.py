"""The CLI's output helpers (``surfaces/cli/output.py``): progress bars fit an 80-column terminal
(a long label is cut, the count stays on the line), and the commands it prints work as printed."""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

import pytest
from rich.console import Console

from indexfoundry.surfaces.cli.output import RichProgress, as_invoked, program


def test_a_long_embed_label_is_cut_and_the_count_stays_within_80_columns():
    out = io.StringIO()
    console = Console(file=out, width=80, force_terminal=True, color_system=None, legacy_windows=False)
    progress = RichProgress(enabled=True, console=console).progress()
    task = progress.add_task("embed (local:all-MiniLM-L6-v2@53aa51172d14)", total=123_456)
    progress.update(task, completed=98_765)
    with console.capture() as captured:
        console.print(progress.make_tasks_table(progress.tasks))
    lines = [line for line in captured.get().splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert len(lines[0]) <= 80 and "98765/123456" in lines[0]
    assert lines[0].startswith("embed (local:all-MiniLM")


def _script(folder: Path) -> Path:
    folder.mkdir(parents=True)
    script = folder / "indexfoundry"
    script.write_text("#!/bin/sh\n", encoding="utf-8")
    script.chmod(0o755)
    return script


def test_a_cli_not_on_path_prints_its_commands_as_it_was_started(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    _script(tmp_path / ".venv" / "bin")
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.setattr(sys, "argv", [".venv/bin/indexfoundry", "pipeline", "run"])
    assert program() == ".venv/bin/indexfoundry"
    hint = "Run 'indexfoundry pipeline run CONFIG'; pip install 'indexfoundry[ray]'; indexfoundry_run_list"
    assert as_invoked(hint) == (
        "Run '.venv/bin/indexfoundry pipeline run CONFIG'; pip install 'indexfoundry[ray]'; indexfoundry_run_list"
    )


def test_a_cli_on_path_prints_the_bare_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    script = _script(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{script.parent}{os.pathsep}/usr/bin")
    monkeypatch.setattr(sys, "argv", [str(script), "search"])
    assert program() == "indexfoundry"
    assert as_invoked("indexfoundry search --help") == "indexfoundry search --help"
    monkeypatch.setattr(sys, "argv", ["/x/indexfoundry/__main__.py"])  # python -m indexfoundry
    assert program() == "indexfoundry"
