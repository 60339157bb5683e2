"""The CLI starts light: ``indexfoundry --help`` and commands that read no index import no vector
store, model runtime, server framework or MCP SDK (each command imports what it uses, when it runs)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

# Modules that cost seconds to import on a cold start and that --help / run list never use.
HEAVY = (
    "chromadb",
    "torch",
    "onnxruntime",
    "sentence_transformers",
    "tokenizers",
    "numpy",
    "bm25s",
    "fastapi",
    "uvicorn",
    "mcp",
    "httpx",
)

# Runs the CLI's entry point in a fresh interpreter (after importing argv[2], if any) and prints,
# at exit, the heavy modules loaded.
PROBE = """
import atexit, importlib, json, sys
heavy = json.loads(sys.argv[1])
atexit.register(lambda: print("LOADED " + json.dumps(sorted(m for m in heavy if m in sys.modules))))
if sys.argv[2]:
    importlib.import_module(sys.argv[2])
sys.argv = ["indexfoundry", *sys.argv[3:]]
from indexfoundry.surfaces.cli import main
main()
"""


def _loaded(*args: str, preload: str = "") -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(HEAVY), preload, *args], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    line = next(line for line in done.stdout.splitlines() if line.startswith("LOADED "))
    return list(json.loads(line.removeprefix("LOADED ")))


@pytest.mark.parametrize("command", [["--help"], ["run", "list", "--json"]])
def test_a_command_that_reads_no_index_imports_no_heavy_library(command: list[str], tmp_path: Path):
    args = [*command, "--runs-dir", str(tmp_path)] if command[0] == "run" else command
    assert _loaded(*args) == []


def test_the_probe_reports_a_heavy_library_that_was_imported():
    assert _loaded("--help", preload="numpy") == ["numpy"]
