"""``indexfoundry export llms-txt``: publish a run for clients without MCP."""

from __future__ import annotations

from pathlib import Path

import typer

from indexfoundry import api
from indexfoundry.models.ids import LATEST
from indexfoundry.surfaces.cli.options import Json, RunsDir
from indexfoundry.surfaces.cli.output import print_json

app = typer.Typer(help="Export a run in other formats.", no_args_is_help=True)


@app.command("llms-txt")
def llms_txt(
    run_id: str = typer.Option(
        LATEST, "--run-id", help="Run to export ('latest': newest completed; 'latest:PIPELINE': that pipeline's)."
    ),
    out: Path | None = typer.Option(None, "--out", help="Folder to write to (default: the run's served/)."),
    title: str | None = typer.Option(None, "--title", help="H1 title (default: the source names)."),
    runs_dir: Path | None = RunsDir,
    json_out: bool = Json,
) -> None:
    """Write llms.txt (llmstxt.org format), llms-full.txt and the markdown pages they link to."""
    result = api.export_llms_txt(run_id, runs_dir=runs_dir, out_dir=out, title=title)
    if json_out:
        print_json(result)
        return
    typer.echo(f"wrote {result.llms_txt} ({result.pages} pages in {result.sections} sections)")
    typer.echo(f"wrote {result.llms_full_txt}")
