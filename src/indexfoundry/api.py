"""The library's entry points. The CLI, the HTTP API and the MCP server all call these."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from indexfoundry.app.export import LlmsTxtOutput
from indexfoundry.app.freshness import FreshnessReport as FreshnessReport
from indexfoundry.app.handles import Page as Page
from indexfoundry.app.handles import PageSection as PageSection
from indexfoundry.app.handles import Run as Run
from indexfoundry.app.handles import RunPool as RunPool
from indexfoundry.app.handles import open_run as open_run
from indexfoundry.app.runs import cleanup as cleanup
from indexfoundry.app.runs import diff as diff
from indexfoundry.app.runs import load_config as load_config
from indexfoundry.app.runs import pipeline_run as pipeline_run
from indexfoundry.app.runs import resolve_run_id as resolve_run_id
from indexfoundry.app.runs import run_phase as run_phase
from indexfoundry.app.runs import runs as runs
from indexfoundry.app.runs import runs_dir_for as runs_dir_for
from indexfoundry.app.runs import serve_openapi as serve_openapi
from indexfoundry.app.runs import serve_start as serve_start
from indexfoundry.app.runs import status as status
from indexfoundry.app.runs import validate_config as validate_config
from indexfoundry.app.runs import with_execution as with_execution
from indexfoundry.models.config import (
    pipeline_config_schema,
)
from indexfoundry.models.retrieval import SearchFilter, SearchMode, SearchResponse
from indexfoundry.storage.layout import RunLayout

if TYPE_CHECKING:
    from indexfoundry.app.eval import EvalResult
    from indexfoundry.models.config import RateLimitConfig
    from indexfoundry.models.serve import ServerStatus, ServeStopOutput
    from indexfoundry.retrieval.service import SearchService


def search(
    query: str,
    run_id: str,
    *,
    runs_dir: str | Path | None = None,
    top_k: int = 10,
    mode: SearchMode = "hybrid",
    filters: list[SearchFilter] | None = None,
    offset: int = 0,
    embedder: Any = None,
) -> SearchResponse:
    """Search one run (opens and closes a ``Run``; hold one from ``open_run`` for many queries)."""
    with open_run(run_id, runs_dir, embedder=embedder) as run:
        return run.search(query, top_k=top_k, mode=mode, filters=filters, offset=offset)


def search_service(run_id: str, *, runs_dir: str | Path | None = None, embedder: Any = None) -> SearchService:
    """The run's ``SearchService`` itself (evaluation and tests; surfaces hold a ``Run``)."""
    from indexfoundry.retrieval.service import open_service

    root = runs_dir_for(runs_dir)
    layout = RunLayout.existing(root, resolve_run_id(root, run_id))
    return open_service(layout, embedder)


def evaluate(
    *,
    beir_dir: str | Path | None = None,
    split: str = "test",
    run_id: str | None = None,
    queries: str | Path | None = None,
    qrels: str | Path | None = None,
    mode: Literal["semantic", "keyword", "hybrid", "all"] = "all",
    runs_dir: str | Path | None = None,
    embedding_model: str = "local",
    progress: Any = None,
    embedder: Any = None,
    reranker: str | None = None,
    top_k_to_rerank: int = 50,
) -> EvalResult:
    """nDCG@10 / recall@100 / MRR@10 per mode: index a BEIR folder through the pipeline, or use a run.

    ``reranker`` (``cross-encoder:<folder>``, ``cohere:<model>``, ``http:<url>``) reranks the top
    ``top_k_to_rerank`` candidates of every mode.
    """
    from indexfoundry.app.eval import evaluate as run_evaluation

    return run_evaluation(
        beir_dir=Path(beir_dir) if beir_dir is not None else None,
        split=split,
        run_id=run_id,
        queries=Path(queries) if queries is not None else None,
        qrels=Path(qrels) if qrels is not None else None,
        mode=mode,
        runs_dir=runs_dir_for(runs_dir),
        embedding_model=embedding_model,
        progress=progress,
        embedder=embedder,
        reranker=reranker,
        top_k_to_rerank=top_k_to_rerank,
    )


def check_freshness(
    run_id: str,
    *,
    runs_dir: str | Path | None = None,
    uris: list[str] | None = None,
    sample: float | None = None,
    max_seconds: float = 30.0,
    local_only: bool = False,
) -> FreshnessReport:
    """Which sources of a run changed since it read them: files by hash, URLs by conditional GET."""
    from indexfoundry.app.freshness import check_freshness as check

    root = runs_dir_for(runs_dir)
    return check(
        RunLayout.existing(root, resolve_run_id(root, run_id)),
        uris=uris,
        sample=sample,
        max_seconds=max_seconds,
        local_only=local_only,
    )


def config_schema() -> dict[str, Any]:
    """JSON Schema of the pipeline config file."""
    return pipeline_config_schema()


def export_llms_txt(
    run_id: str, *, runs_dir: str | Path | None = None, out_dir: str | Path | None = None, title: str | None = None
) -> LlmsTxtOutput:
    """Write llms.txt, llms-full.txt and their pages for a run (default folder: its served/)."""
    from indexfoundry.app.export import export_llms_txt as export

    root = runs_dir_for(runs_dir)
    layout = RunLayout.existing(root, resolve_run_id(root, run_id))
    return export(layout, Path(out_dir) if out_dir is not None else None, title)


# ---------------------------------------------------------------- serve (HTTP API)
def serve_foreground(
    run_id: str,
    *,
    runs_dir: str | Path | None = None,
    host: str = "127.0.0.1",
    port: int = 8080,
    cors_origins: list[str] | None = None,
    rate_limit: RateLimitConfig | None = None,
    log_requests: bool | None = None,
) -> None:
    """Run the HTTP API in this process until SIGINT/SIGTERM (graceful shutdown)."""
    from indexfoundry.app import serving as control

    settings = control.http_settings(
        runs_dir_for(runs_dir),
        run_id,
        host=host,
        port=port,
        cors_origins=cors_origins,
        rate_limit=rate_limit,
        log_requests=log_requests,
    )
    control.run_server(settings)


def serve_libraries(
    libraries: list[str],
    libraries_file: str | Path | None = None,
    *,
    runs_dir: str | Path | None = None,
    host: str = "127.0.0.1",
    port: int = 8080,
    embedding_model: str = "local",
    refresh_interval_s: float = 3600.0,
    cors_origins: list[str] | None = None,
    rate_limit: RateLimitConfig | None = None,
    require_auth: bool = False,
) -> None:
    """Serve many libraries and versions over HTTP in this process (``NAME@VERSION=RUN_OR_CONFIG``
    flags and/or a ``libraries.yaml``), until SIGINT/SIGTERM; see ``app.libraries``."""
    from indexfoundry.app import serving as control

    control.serve_libraries(
        runs_dir_for(runs_dir),
        libraries,
        Path(libraries_file).expanduser().resolve() if libraries_file is not None else None,
        host=host,
        port=port,
        embedding_model=embedding_model,
        refresh_interval_s=refresh_interval_s,
        cors_origins=cors_origins,
        rate_limit=rate_limit,
        require_auth=require_auth,
    )


def serve_status(*, runs_dir: str | Path | None = None) -> list[ServerStatus]:
    """HTTP servers running for this runs folder."""
    from indexfoundry.app.serving import server_status

    return server_status(runs_dir_for(runs_dir))


def serve_stop(*, runs_dir: str | Path | None = None, port: int | None = None) -> ServeStopOutput:
    """Stop the server on ``port`` (default: all servers of this runs folder)."""
    from indexfoundry.app.serving import stop_servers

    return stop_servers(runs_dir_for(runs_dir), port)
