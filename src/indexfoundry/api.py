"""The library's entry points. The CLI, the HTTP API and the MCP server all call these."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from indexfoundry.app.export import LlmsTxtOutput
from indexfoundry.app.freshness import FreshnessReport
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
    PipelineConfig,
    pipeline_config_schema,
)
from indexfoundry.models.manifests import RunManifest
from indexfoundry.models.records import ExtractedDocument
from indexfoundry.models.retrieval import SearchFilter, SearchMode, SearchRequest, SearchResponse
from indexfoundry.models.serve import DocumentView, StatsView
from indexfoundry.pipeline.runs import RunStatusOutput, run_status
from indexfoundry.retrieval.pages import RunView
from indexfoundry.storage.layout import RunLayout
from indexfoundry.storage.manifest import load_manifest, load_run_config

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
    """Search one run."""
    from indexfoundry.retrieval.service import close_service

    service = search_service(run_id, runs_dir=runs_dir, embedder=embedder)
    try:
        return service.search(SearchRequest(query=query, top_k=top_k, mode=mode, filters=filters or [], offset=offset))
    finally:
        close_service(service)


def search_service(run_id: str, *, runs_dir: str | Path | None = None, embedder: Any = None) -> SearchService:
    """The run's ``SearchService``: open it once to answer many queries with one loaded model."""
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


def serve_status(*, runs_dir: str | Path | None = None) -> list[ServerStatus]:
    """HTTP servers running for this runs folder."""
    from indexfoundry.app.serving import server_status

    return server_status(runs_dir_for(runs_dir))


def serve_stop(*, runs_dir: str | Path | None = None, port: int | None = None) -> ServeStopOutput:
    """Stop the server on ``port`` (default: all servers of this runs folder)."""
    from indexfoundry.app.serving import stop_servers

    return stop_servers(runs_dir_for(runs_dir), port)


# ---------------------------------------------------------------- the Run handle
@dataclass(frozen=True)
class Page:
    """One page of a run: an extracted document and its text (``Run.page``)."""

    path: str
    document: ExtractedDocument
    text: str


@dataclass(frozen=True)
class PageSection:
    """One section of a page: the heading's breadcrumb and its text (``Run.section``)."""

    path: str
    breadcrumb: str
    text: str
    other_matches: list[str]


class Run:
    """A typed handle on one run: what the CLI, the HTTP API and the MCP server read a run through.

    ``open_run("latest")`` follows the newest completed run: ``refresh()`` switches to a newer one
    (and drops what was loaded for the old one). The search service (with its loaded model and
    store connection) and the page reader are loaded once, on first use; ``close()`` releases them.
    """

    def __init__(self, runs_dir: Path, run_id: str, *, embedder: Any = None) -> None:
        self.runs_dir = runs_dir
        self.follows_latest = run_id == "latest"
        self._spec = run_id
        self._embedder = embedder
        self._lock = threading.Lock()
        self._service: SearchService | None = None
        self._pages: RunView | None = None
        self.reloads = 0
        self.layout = RunLayout.existing(runs_dir, resolve_run_id(runs_dir, run_id))
        self.manifest: RunManifest = load_manifest(self.layout)

    @property
    def id(self) -> str:
        """The run id (for 'latest': the run currently followed)."""
        return self.layout.run_id

    @property
    def config(self) -> PipelineConfig:
        """The run's frozen pipeline config."""
        return load_run_config(self.layout)

    def status(self) -> RunStatusOutput:
        """The seed's run_status of this run."""
        return run_status(self.layout)

    def _search_service(self) -> SearchService:
        from indexfoundry.retrieval.service import open_service

        with self._lock:
            if self._service is None:
                self._service = open_service(self.layout, self._embedder)
            return self._service

    def _page_reader(self) -> RunView:
        with self._lock:
            if self._pages is None:
                self._pages = RunView(self.layout)
            return self._pages

    def search(
        self,
        query: str,
        *,
        top_k: int = 10,
        mode: SearchMode = "hybrid",
        filters: list[SearchFilter] | None = None,
        offset: int = 0,
    ) -> SearchResponse:
        """Search the run (semantic, keyword or hybrid), with the served retrieval profile's limits."""
        request = SearchRequest(query=query, top_k=top_k, mode=mode, filters=filters or [], offset=offset)
        return self._search_service().search(request)

    def document(self, doc_id: str, *, include_text: bool = False) -> DocumentView:
        """One indexed document and its chunks (NOT_FOUND for an unknown id)."""
        from indexfoundry.retrieval.views import document_view

        return document_view(self._search_service(), doc_id, include_text=include_text)

    def page(self, path: str) -> Page:
        """The page (extracted document) named by its source uri, with its text."""
        reader = self._page_reader()
        doc = reader.document(path)
        return Page(path=path, document=doc, text=reader.text(doc))

    def section(self, path: str, heading: str) -> PageSection:
        """The section of page ``path`` under ``heading`` (or a breadcrumb ``A > B``)."""
        _, found, text, others = self._page_reader().section(path, heading)
        return PageSection(path=path, breadcrumb=found.breadcrumb, text=text, other_matches=others)

    def stats(self) -> StatsView:
        """What the run serves: documents, chunks, model, when it was indexed."""
        from indexfoundry.retrieval.views import stats_view

        return stats_view(self._search_service(), follows_latest=self.follows_latest, reloads=self.reloads)

    def refresh(self) -> bool:
        """Reload the manifest; for 'latest', switch to a newer completed run. True if the run changed."""
        if self.follows_latest:
            newest = resolve_run_id(self.runs_dir, "latest")
            if newest != self.layout.run_id:
                self.close()
                self.layout = RunLayout.existing(self.runs_dir, newest)
                self.manifest = load_manifest(self.layout)
                self.reloads += 1
                return True
        self.manifest = load_manifest(self.layout)
        return False

    def close(self) -> None:
        """Release the store connection and what was loaded (the handle can be used again after)."""
        from indexfoundry.retrieval.service import close_service

        with self._lock:
            if self._service is not None:
                close_service(self._service)
            self._service = None
            self._pages = None

    def __enter__(self) -> Run:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_run(run_id: str = "latest", runs_dir: str | Path | None = None, *, embedder: Any = None) -> Run:
    """A ``Run`` handle on ``run_id`` ('latest': the newest completed run; RUN_NOT_FOUND if none).

    ``embedder`` replaces the run's configured embedding model (tests, custom models).
    """
    return Run(runs_dir_for(runs_dir), run_id, embedder=embedder)
