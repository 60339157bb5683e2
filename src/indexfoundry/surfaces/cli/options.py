"""Options shared by several commands."""

from __future__ import annotations

from pathlib import Path

import typer

RunsDir = typer.Option(
    None,
    "--runs-dir",
    help="Runs folder (default: $INDEXFOUNDRY_RUNS_DIR, the global config, or ./runs).",
    show_default=False,
)
RunId = typer.Option(..., "--run-id", help="Run to work on (it must exist; 'latest' for the newest).")
Json = typer.Option(False, "--json", help="Print machine-readable JSON on stdout.")
Force = typer.Option(False, "--force", help="Rerun even if inputs did not change.")
AllowShrink = typer.Option(
    False,
    "--allow-shrink",
    help="Let the run lose more than max_shrink (default 50 %) of its base run's documents or chunks.",
)


def runs_dir_arg(value: Path | None) -> Path | None:
    return value
