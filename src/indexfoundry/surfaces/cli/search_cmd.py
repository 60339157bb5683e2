"""``indexfoundry search``: one query, or a file of queries answered with the model loaded once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from typer.core import TyperCommand

from indexfoundry import api
from indexfoundry.errors import ConfigInvalid, NotFound
from indexfoundry.models.ids import LATEST
from indexfoundry.surfaces.cli.options import Json, RunsDir
from indexfoundry.surfaces.cli.output import print_json

if TYPE_CHECKING:
    from indexfoundry.models.retrieval import SearchFilter, SearchMode, SearchRequest, SearchResponse

MODES: tuple[str, ...] = ("semantic", "keyword", "hybrid")


class _FilterTriples(TyperCommand):
    """Typer has no list-of-tuples option: make ``--filter`` take three values, kept as given."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for param in self.params:
            if param.name == "filters":
                param.nargs = 3
                param.metavar = "FIELD OP VALUE"
                param.process_value = lambda ctx, value: [tuple(v) for v in value or ()]  # type: ignore[method-assign]


def parse_filter(field: str, op: str, raw: str) -> SearchFilter:
    """``FIELD OP VALUE`` → filter; VALUE is JSON when it parses as JSON (numbers, lists), else a string."""
    from indexfoundry.models.retrieval import SearchFilter

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


def response_json(response: SearchResponse, query: str | None = None) -> dict[str, Any]:
    """The JSON form of a response (one line per query with --queries)."""
    out: dict[str, Any] = {} if query is None else {"query": query}
    out.update(
        {
            "results": [r.model_dump(mode="json", exclude_none=True) for r in response.results],
            "run_id": response.run_id,
            "mode": response.mode,
            "indexed_at": response.indexed_at,
            "score_meaning": response.score_meaning,
        }
    )
    for name in ("reranker", "next_cursor", "tokens", "token_counter"):
        value = getattr(response, name)
        if value is not None:
            out[name] = value
    if response.warnings:
        out["warnings"] = response.warnings
    return out


def render_results(response: SearchResponse) -> None:
    if not response.results:
        typer.echo("no results")
        return
    typer.echo(f"{response.mode} search; scores: {response.score_meaning}", err=True)
    for rank, result in enumerate(response.results, start=1):
        where = result.source.uri + (f"#{result.source.record_id}" if result.source.record_id else "")
        if result.position.page is not None:
            where += f" p.{result.position.page}"
        crumb = f"  [{result.breadcrumb}]" if result.breadcrumb else ""
        typer.echo(f"{rank:>2}. {result.score:.3f}  {where}{crumb}")
        snippet = " ".join(result.text.split())
        typer.echo(f"    {snippet[:200]}{'…' if len(snippet) > 200 else ''}")
    for warning in response.warnings:
        typer.echo(f"warning: {warning}", err=True)
    if response.next_cursor:
        typer.echo(f"more: --cursor {response.next_cursor}")


def read_query_lines(path: Path) -> list[str]:
    """One query per non-empty line."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise NotFound(f"queries file {path} does not exist", suggestion="Check the path") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigInvalid(f"cannot read queries file {path}: {exc}", suggestion="Use a UTF-8 text file") from None
    return [line.strip() for line in text.splitlines() if line.strip()]


def _request(
    query: str,
    top_k: int,
    mode: SearchMode,
    filters: list[SearchFilter],
    offset: int,
    max_tokens: int | None = None,
    cursor: str | None = None,
    expand: str = "none",
) -> SearchRequest:
    from pydantic import ValidationError

    from indexfoundry.models.retrieval import SearchRequest
    from indexfoundry.models.validation import validation_error

    try:
        return SearchRequest.model_validate(
            {
                "query": query,
                "top_k": top_k,
                "mode": mode,
                "filters": filters,
                "offset": offset,
                "max_tokens": max_tokens,
                "cursor": cursor,
                "expand": expand,
            }
        )
    except ValidationError as exc:
        raise validation_error(exc, "search request") from None


def register(app: typer.Typer) -> None:
    @app.command("search", cls=_FilterTriples)
    def search(
        query: str | None = typer.Argument(None, help="What to search for (or use --queries).", show_default=False),
        run_id: str = typer.Option(
            LATEST,
            "--run-id",
            help="Run to search: an id, 'latest' (the newest completed run) or 'latest:PIPELINE' "
            "(that pipeline's, when the runs folder holds several).",
        ),
        runs_dir: Path | None = RunsDir,
        top_k: int | None = typer.Option(
            None, "--top-k", min=1, max=1000, help="Number of results (default: the run profile's default_top_k)."
        ),
        max_tokens: int | None = typer.Option(
            None,
            "--max-tokens",
            min=100,
            help="Token budget (embedding tokenizer, else chars/4): whole results as fit, then a next_cursor.",
            show_default=False,
        ),
        cursor: str | None = typer.Option(
            None, "--cursor", help="next_cursor of the previous page of the same search.", show_default=False
        ),
        expand: str = typer.Option(
            "none", "--expand", help="none | neighbors | section: widen each hit (adjacent hits merged)."
        ),
        offset: int = typer.Option(0, "--offset", min=0, max=1000, help="Results to skip (paging)."),
        mode: str = typer.Option(
            "hybrid", "--mode", help="hybrid (meaning and keywords fused) | semantic (meaning) | keyword (BM25)"
        ),
        filters: list[str] = typer.Option(
            [],
            "--filter",
            help="FIELD OP VALUE, e.g. --filter source.type eq markdown; OP: eq neq gt gte lt lte in contains; "
            'VALUE is JSON when it parses (2, ["a","b"]). Repeatable; filters are ANDed.',
        ),
        queries_file: Path | None = typer.Option(
            None,
            "--queries",
            help="File with one query per line: prints one JSON line per query, in order (model loaded once).",
        ),
        json_out: bool = Json,
    ) -> None:
        """Search a run; best result first."""
        if mode not in MODES:
            raise ConfigInvalid(f"unknown mode '{mode}'", suggestion="Use semantic, keyword or hybrid")
        if (query is None) == (queries_file is None):
            raise ConfigInvalid("give a query or --queries FILE (one of them)", suggestion="indexfoundry search --help")
        if query is not None and not query.strip():
            raise ConfigInvalid(
                "the search query is empty", suggestion='Give words to search for: indexfoundry search "install"'
            )
        parsed = [parse_filter(*triple) for triple in filters]
        mode_value: SearchMode = mode  # type: ignore[assignment]
        with api.open_run(run_id, runs_dir) as run:
            k = top_k or run.profile.retrieval_config.default_top_k
            if queries_file is not None:
                texts = read_query_lines(queries_file)
                requests = [_request(text, k, mode_value, parsed, offset, expand=expand) for text in texts]
                for request in requests:
                    run.check(request)  # refuse a bad mode or filter before any output
                for request in requests:
                    answer = response_json(run.search_request(request), request.query)
                    typer.echo(json.dumps(answer, ensure_ascii=False))
                return
            assert query is not None
            response = run.search_request(_request(query, k, mode_value, parsed, offset, max_tokens, cursor, expand))
        if json_out:
            print_json(response_json(response))
        else:
            render_results(response)
