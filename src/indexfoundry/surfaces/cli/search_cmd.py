"""``indexfoundry search``."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from indexfoundry import api
from indexfoundry.errors import ConfigInvalid
from indexfoundry.models.retrieval import SearchFilter, SearchMode, SearchResponse
from indexfoundry.surfaces.cli.options import Json, RunsDir
from indexfoundry.surfaces.cli.output import print_json


def parse_filter(values: list[str]) -> SearchFilter:
    """``FIELD OP VALUE`` → filter; VALUE is JSON when it parses as JSON, else a string."""
    field, op, raw = values
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    try:
        return SearchFilter.model_validate({"field": field, "op": op, "value": value})
    except ValueError:
        raise ConfigInvalid(
            f"bad filter '{field} {op} {raw}'", suggestion="OP is one of eq neq gt gte lt lte in contains"
        ) from None


def render_results(response: SearchResponse) -> None:
    if not response.results:
        typer.echo("no results")
    for rank, result in enumerate(response.results, start=1):
        crumb = result.metadata.heading_path or result.position.section or ""
        typer.echo(f"{rank:>2}. {result.score:.3f}  {result.source.uri}" + (f"  [{crumb}]" if crumb else ""))
        snippet = " ".join(result.text.split())
        typer.echo(f"    {snippet[:200]}{'…' if len(snippet) > 200 else ''}")


def register(app: typer.Typer) -> None:
    @app.command("search")
    def search(
        query: str = typer.Argument(..., help="What to search for.", show_default=False),
        run_id: str = typer.Option("latest", "--run-id", help="Run to search ('latest': newest completed)."),
        runs_dir: Path | None = RunsDir,
        top_k: int = typer.Option(10, "--top-k", min=1, max=100, help="Number of results."),
        mode: str = typer.Option("semantic", "--mode", help="semantic | keyword | hybrid"),
        filters: list[str] = typer.Option(
            [],
            "--filter",
            help="FIELD OP VALUE, e.g. --filter source.type eq markdown (repeatable).",
        ),
        json_out: bool = Json,
    ) -> None:
        """Search a run; best result first."""
        if mode not in ("semantic", "keyword", "hybrid"):
            raise ConfigInvalid(f"unknown mode '{mode}'", suggestion="Use semantic, keyword or hybrid")
        parsed = [parse_filter(f.split(" ", 2)) if f.count(" ") >= 2 else _bad_filter(f) for f in filters]
        mode_value: SearchMode = mode  # type: ignore[assignment]
        response = api.search(query, run_id, runs_dir=runs_dir, top_k=top_k, mode=mode_value, filters=parsed)
        if json_out:
            print_json(
                {
                    "results": [r.model_dump(mode="json", exclude_none=True) for r in response.results],
                    "run_id": response.run_id,
                    "mode": response.mode,
                    "indexed_at": response.indexed_at,
                }
            )
        else:
            render_results(response)


def _bad_filter(value: str) -> SearchFilter:
    raise ConfigInvalid(f"bad filter '{value}'", suggestion="Use --filter 'FIELD OP VALUE'")
