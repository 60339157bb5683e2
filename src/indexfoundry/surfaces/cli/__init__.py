"""The ``indexfoundry`` command line: thin typer commands over ``indexfoundry.api``.

Errors become one line on stderr (``CODE: message — suggestion``) and an exit code:
2 for invalid input, 3 for an unknown run, 4 for a locked run, 1 otherwise. With
``--json`` the ToolError shape is also printed on stdout.
"""

from __future__ import annotations

import json
import sys
from typing import NoReturn

import typer

from indexfoundry import __version__
from indexfoundry.errors import ConfigInvalid, IndexFoundryError, storage_full
from indexfoundry.surfaces.cli import (
    config_cmd,
    connect_cmd,
    eval_cmd,
    export_cmd,
    extract_cmd,
    index_cmd,
    mcp_cmd,
    normalize_cmd,
    pipeline_cmd,
    runs_cmd,
    search_cmd,
    serve_cmd,
)
from indexfoundry.surfaces.cli.output import as_invoked

app = typer.Typer(
    name="indexfoundry",
    help="Turn content sources into a searchable vector index through a deterministic five-phase pipeline.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"indexfoundry {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Show the version."),
) -> None:
    """IndexFoundry: connect → extract → normalize → index → serve."""


app.add_typer(pipeline_cmd.app, name="pipeline")
app.add_typer(runs_cmd.app, name="run")
app.add_typer(config_cmd.app, name="config")
app.add_typer(connect_cmd.app, name="connect")
app.add_typer(extract_cmd.app, name="extract")
app.add_typer(normalize_cmd.app, name="normalize")
app.add_typer(index_cmd.app, name="index")
app.add_typer(serve_cmd.app, name="serve")
app.add_typer(export_cmd.app, name="export")
search_cmd.register(app)
eval_cmd.register(app)
mcp_cmd.register(app)


def _fail(error: IndexFoundryError) -> NoReturn:
    """One line on stderr (and the ToolError shape on stdout with --json), then the exit code."""
    if "--json" in sys.argv[1:]:
        from indexfoundry.models.manifests import ToolError

        typer.echo(json.dumps(ToolError.from_error(error).model_dump(mode="json", exclude_none=True)))
    typer.echo(as_invoked(error.one_line()), err=True)
    sys.exit(error.exit_code)


def usage_error(exc: typer.TyperException) -> ConfigInvalid:
    """typer's own argument errors (bad option value, unknown option, missing argument) as CONFIG_INVALID."""
    ctx = getattr(exc, "ctx", None)
    command = ctx.command_path if ctx is not None else "indexfoundry"
    format_message = getattr(exc, "format_message", None)
    message = format_message() if callable(format_message) else str(exc)
    return ConfigInvalid(f"{command}: {' '.join(str(message).split())}", suggestion=f"See '{command} --help'")


def main() -> None:
    """Console entry point: run the CLI, mapping every error to one line and an exit code."""
    try:
        code = app(standalone_mode=False)
    except IndexFoundryError as error:
        _fail(error)
    except typer.TyperException as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":  # a bare group: its help, as typer shows it
            exc.show()  # type: ignore[attr-defined]
            sys.exit(2)
        _fail(usage_error(exc))
    except (KeyboardInterrupt, typer.Abort):
        typer.echo("interrupted", err=True)
        sys.exit(130)
    except OSError as exc:  # a full disk outside a phase (manifest, lock, logs): one line, no traceback
        full = storage_full(exc)
        if full is None:
            raise
        _fail(full)
    sys.exit(code if isinstance(code, int) else 0)
