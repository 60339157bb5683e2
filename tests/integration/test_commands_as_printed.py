"""Commands that work as printed: after ``scripts/setup.sh`` the CLI is ``.venv/bin/indexfoundry``
and not on PATH, so every page that shows a bare ``indexfoundry`` command says how to make it
work, and the CLI started by its path prints its hints with that path (a real CLI process)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import folder_config, write_config, write_tree
from tests.figures import PAGES

COMMAND = re.compile(
    r"(^|[ `])indexfoundry (pipeline|run|search|serve|mcp|config|connect|extract|normalize|index|export|eval)\b", re.M
)
ACTIVATE = "source .venv/bin/activate"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_a_page_showing_bare_commands_says_how_to_run_them(page: Path):
    text = page.read_text(encoding="utf-8")
    if COMMAND.search(text):
        assert ACTIVATE in text and ".venv/bin/indexfoundry" in text, page


def test_the_cli_started_by_its_path_prints_its_next_steps_with_that_path(tmp_path: Path):
    venv_bin = Path(sys.executable).parent
    script = venv_bin / "indexfoundry"
    if not script.is_file():
        pytest.skip(f"no console script at {script}")
    docs = write_tree(tmp_path / "docs", {"a.md": "# A\n\nA page with enough words in it to make a chunk.\n"})
    config = write_config(tmp_path / "docs.yaml", folder_config(docs))
    env = {**os.environ, "PATH": "/usr/bin:/bin"}  # the venv is not activated
    done = subprocess.run(
        [str(script), "pipeline", "run", str(config), "--runs-dir", str(tmp_path / "runs")],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert f'next: {script} search "your question"' in done.stderr
    assert " indexfoundry " not in done.stderr.replace(str(script), "")
