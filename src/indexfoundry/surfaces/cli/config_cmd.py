"""``indexfoundry config schema|validate``."""

from __future__ import annotations

from pathlib import Path

import typer

from indexfoundry import api
from indexfoundry.surfaces.cli.options import Json
from indexfoundry.surfaces.cli.output import print_json

app = typer.Typer(help="Pipeline config tools.", no_args_is_help=True)


@app.command("schema")
def schema() -> None:
    """Print the JSON Schema of the pipeline config file (for editor validation)."""
    print_json(api.config_schema())


@app.command("validate")
def validate(
    config: Path = typer.Argument(..., help="Pipeline config file.", show_default=False),
    json_out: bool = Json,
) -> None:
    """Check a pipeline config file, including what a run would find only later (missing folders,
    unknown embedding model, a store whose extra is missing); --json prints the resolved config."""
    cfg = api.validate_config(config)
    if json_out:
        print_json(cfg)
    else:
        typer.echo(f"{config}: valid ({len(cfg.connect.sources)} source(s))")
