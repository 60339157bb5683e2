"""``Run``: the one handle through which the CLI, the HTTP API and the MCP server read a run, and
``RunPool``: open handles by run id (the MCP server, whose agents may name any run).

A ``Run`` loads its search service (model, store connection, keyword index) and its page reader
once, on first use. ``close()`` releases them; while requests hold a ``lease()`` the release
waits for the last one, so a server can swap in a newer run and close the old handle without
failing a request that is still reading it. ``in_use`` marks the run in use
(``pipeline/inuse.py``) while the handle is open, so ``run cleanup`` leaves it alone.
"""

from __future__ import annotations

import contextlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from indexfoundry.models.config import PipelineConfig
from indexfoundry.models.ids import LATEST, is_latest, latest_of
from indexfoundry.models.manifests import RunManifest
from indexfoundry.models.records import DocumentChunk, ExtractedDocument, Heading
from indexfoundry.models.retrieval import (
    RetrievalProfile,
    SearchFilter,
    SearchMode,
    SearchRequest,
    SearchResponse,
    SearchResult,
)
from indexfoundry.models.serve import DocumentView, StatsView
from indexfoundry.pipeline.inuse import mark_in_use, release
from indexfoundry.pipeline.runs import RunStatusOutput, pipeline_of, resolve_run_id, run_status
from indexfoundry.retrieval.budget import cursor_index, decode_cursor, encode_cursor, fit_texts, request_key
from indexfoundry.retrieval.pages import RunView, page_key
from indexfoundry.storage.atomic import append_ndjson
from indexfoundry.storage.clock import utc_now
from indexfoundry.storage.layout import RunLayout, runs_dir_for
from indexfoundry.storage.manifest import load_manifest, load_run_config

if TYPE_CHECKING:
    from indexfoundry.retrieval.budget import TokenCounter
    from indexfoundry.retrieval.service import SearchService


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


@dataclass(frozen=True)
class SearchPage:
    """A search answer as one page of numbered results (``Run.search_page``)."""

    response: SearchResponse
    first_rank: int  # 1-based rank of the page's first result in the whole answer


@dataclass(frozen=True)
class PagePart:
    """Part of a page's text within a token budget (``Run.page_part``); ``next_cursor`` continues it."""

    path: str
    document: ExtractedDocument
    text: str
    chars: int
    offset: int
    tokens: int
    next_cursor: str | None


@dataclass(frozen=True)
class SectionPart:
    """Part of a section's text within a token budget (``Run.section_part``)."""

    path: str
    document: ExtractedDocument
    heading: Heading
    breadcrumb: str
    text: str
    chars: int
    offset: int
    tokens: int
    next_cursor: str | None
    other_matches: list[str]


class Run:
    """A typed handle on one run.

    ``Run(runs_dir, "latest")`` follows the newest completed run: ``refresh()`` switches to a
    newer one (and drops what was loaded for the old one); that is for a single user of the
    handle. A server answering requests concurrently opens a new ``Run`` for the newer run,
    warms it, swaps it in and closes the old one (``surfaces/http/holder.py``).
    """

    def __init__(
        self,
        runs_dir: Path,
        run_id: str,
        *,
        embedder: Any = None,
        in_use: str | None = None,
        token_counter: TokenCounter | None = None,
    ) -> None:
        self.runs_dir = runs_dir
        # Pages of a run still being built are read with its model's counter (no search service yet).
        self._token_counter = token_counter
        self.follows_latest = is_latest(run_id)
        self._embedder = embedder
        self._in_use = in_use
        self._lock = threading.Lock()
        self._lease_lock = threading.Lock()
        self._leases = 0
        self._closing = False
        self._service: SearchService | None = None
        self._pages: RunView | None = None
        self._marked: str | None = None
        self.reloads = 0
        self.layout = RunLayout.existing(runs_dir, resolve_run_id(runs_dir, run_id))
        self.manifest: RunManifest = load_manifest(self.layout)
        # What 'latest' follows: the pipeline of the run it named now, whatever runs later.
        self._latest_ref = latest_of(pipeline_of(self.layout, self.manifest))
        self._mark()

    # ------------------------------------------------------------- what the run is
    @property
    def id(self) -> str:
        """The run id (for 'latest': the run currently followed)."""
        return self.layout.run_id

    @property
    def config(self) -> PipelineConfig:
        """The run's frozen pipeline config."""
        return load_run_config(self.layout)

    @property
    def indexed_at(self) -> str | None:
        """When the run's index phase completed (None before)."""
        index = self.manifest.phases.get("index")
        return index.completed_at if index is not None and index.status == "completed" else None

    @property
    def profile(self) -> RetrievalProfile:
        """The served retrieval profile (search modes, limits, filters, security)."""
        return self._search_service().profile

    @property
    def namespace(self) -> str | None:
        """The vector-store namespace the run was indexed into (None: the default)."""
        return self._search_service().vector_manifest.namespace or None

    @property
    def token_counter(self) -> TokenCounter:
        """Counts tokens as the run's embedding model does (chars/4 without its tokenizer)."""
        if self._token_counter is not None:
            return self._token_counter
        return self._search_service().token_counter

    @property
    def pages(self) -> RunView:
        """The page reader: the run's extracted documents by path, their texts and sections."""
        with self._lock:
            if self._pages is None:
                self._pages = RunView(self.layout)
            return self._pages

    @property
    def requests_log(self) -> Path:
        """Where a server writes one line per request it answered from this run."""
        return self.layout.requests_log

    def status(self) -> RunStatusOutput:
        """This run's status, as ``indexfoundry_run_status`` answers it."""
        return run_status(self.layout)

    # ------------------------------------------------------------- searching and reading
    def _search_service(self) -> SearchService:
        from indexfoundry.retrieval.service import open_service

        with self._lock:
            if self._service is None:
                self._service = open_service(self.layout, self._embedder)
            return self._service

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

    def search_request(
        self, request: SearchRequest, *, cost: Callable[[SearchResult], int] | None = None
    ) -> SearchResponse:
        """Answer a whole ``SearchRequest`` (budgets, cursors, expansion); ``cost`` measures a
        result against ``max_tokens`` (default: its JSON's tokens)."""
        return self._search_service().search(request, cost=cost)

    def search_page(self, request: SearchRequest, *, cost: Callable[[SearchResult], int] | None = None) -> SearchPage:
        """``search_request`` for an answer that numbers its results: the page, and the rank of its
        first result (1 without a cursor; with one, the rank after the pages before it)."""
        response = self.search_request(request, cost=cost)
        return SearchPage(response, cursor_index(request.cursor) + 1 if request.cursor else 1)

    def check(self, request: SearchRequest) -> None:
        """Refuse a request the run cannot answer (mode, filters) with CONFIG_INVALID, before searching."""
        self._search_service().check(request)

    def chunk(self, chunk_id: str) -> DocumentChunk:
        """One chunk (NOT_FOUND for an unknown id)."""
        return self._search_service().chunk(chunk_id)

    def document(self, doc_id: str, *, include_text: bool = False) -> DocumentView:
        """One indexed document and its chunks (NOT_FOUND for an unknown id)."""
        from indexfoundry.retrieval.views import document_view

        return document_view(self._search_service(), doc_id, include_text=include_text)

    def page(self, path: str) -> Page:
        """The page (extracted document) named by its source uri, with its text."""
        reader = self.pages
        doc = reader.document(path)
        return Page(path=path, document=doc, text=reader.text(doc))

    def section(self, path: str, heading: str) -> PageSection:
        """The section of page ``path`` under ``heading`` (or a breadcrumb ``A > B``)."""
        _, found, text, others = self.pages.section(path, heading)
        return PageSection(path=path, breadcrumb=found.breadcrumb, text=text, other_matches=others)

    def find_page(self, path: str, *, relative: bool = False) -> str:
        """The page path (as the run stores it) that ``path`` names: as stored, or with ``relative``
        relative to the run's folder or source root first (``pages.root``); NOT_FOUND otherwise."""
        reader = self.pages
        return page_key(reader.find(path) if relative else reader.document(path))

    def page_part(self, path: str, *, max_tokens: int | None, cursor: str | None = None) -> PagePart:
        """The text of page ``path`` from where ``cursor`` left off (the start without one),
        at most ``max_tokens`` counted by ``token_counter``; a cursor of another page or run is
        CONFIG_INVALID."""
        reader = self.pages
        doc = reader.document(path)
        text = reader.text(doc)
        key = request_key("page", page_key(doc))
        offset = decode_cursor(cursor, "page", self.id, key)[1] if cursor else 0
        part, next_offset, tokens = fit_texts(text, offset, max_tokens, self.token_counter)
        return PagePart(
            path=page_key(doc),
            document=doc,
            text=part,
            chars=len(text),
            offset=offset,
            tokens=tokens,
            next_cursor=None if next_offset is None else encode_cursor("page", self.id, key, 0, next_offset),
        )

    def section_part(
        self, path: str, heading: str, *, max_tokens: int | None, cursor: str | None = None
    ) -> SectionPart:
        """The section of page ``path`` under ``heading`` (or a breadcrumb ``A > B``), budgeted
        and continued like ``page_part``."""
        doc, found, whole, others = self.pages.section(path, heading)
        key = request_key("section", page_key(doc), found.breadcrumb, found.byte_start)
        offset = decode_cursor(cursor, "section", self.id, key)[1] if cursor else 0
        part, next_offset, tokens = fit_texts(whole, offset, max_tokens, self.token_counter)
        return SectionPart(
            path=page_key(doc),
            document=doc,
            heading=found.heading,
            breadcrumb=found.breadcrumb,
            text=part,
            chars=len(whole),
            offset=offset,
            tokens=tokens,
            next_cursor=None if next_offset is None else encode_cursor("section", self.id, key, 0, next_offset),
            other_matches=others,
        )

    def log_request(self, fields: dict[str, Any]) -> None:
        """Append one line (``fields``, stamped with ``ts``) to the run's request log (a server's)."""
        append_ndjson(self.layout.requests_log, {"ts": utc_now(), **fields})

    def stats(self) -> StatsView:
        """What the run serves: documents, chunks, model, when it was indexed."""
        from indexfoundry.retrieval.views import stats_view

        return stats_view(self._search_service(), follows_latest=self.follows_latest, reloads=self.reloads)

    def warm(self) -> Run:
        """Load everything a search needs (store, chunks, embedder, keyword index): every
        search mode the profile offers answers one query."""
        service = self._search_service()
        for mode in service.profile.retrieval_config.search_modes:
            service.search(SearchRequest(query="warm up", top_k=1, mode=mode))
        return self

    # ------------------------------------------------------------- life cycle
    def refresh(self) -> bool:
        """Reload the manifest; for 'latest', switch to a newer completed run. True if the run changed."""
        if self.follows_latest:
            newest = resolve_run_id(self.runs_dir, self._latest_ref)
            if newest != self.layout.run_id:
                self.close()
                self.layout = RunLayout.existing(self.runs_dir, newest)
                self.manifest = load_manifest(self.layout)
                self._mark()
                self.reloads += 1
                return True
        self.manifest = load_manifest(self.layout)
        return False

    @contextlib.contextmanager
    def lease(self) -> Iterator[Run]:
        """Use the handle for one request: a ``close()`` meanwhile waits until the lease ends."""
        self._take()
        try:
            yield self
        finally:
            self._give_back()

    def _take(self) -> None:
        with self._lease_lock:
            self._leases += 1

    def _give_back(self) -> None:
        with self._lease_lock:
            self._leases -= 1
            due = self._closing and self._leases == 0
            if due:
                self._closing = False
        if due:
            self._release()

    def close(self) -> None:
        """Release the store connection, what was loaded and the in-use mark (now, or when the
        last lease ends). The handle can be used again after: it loads again on use."""
        with self._lease_lock:
            if self._leases:
                self._closing = True
                return
        self._release()

    def _release(self) -> None:
        from indexfoundry.retrieval.service import close_service

        with self._lock:
            service, self._service, self._pages = self._service, None, None
            marked, self._marked = self._marked, None
        if service is not None:
            close_service(service)
        if marked is not None and self._in_use is not None:
            release(self.runs_dir, marked, self._in_use)

    def _mark(self) -> None:
        if self._in_use is not None:
            mark_in_use(self.runs_dir, self.layout.run_id, self._in_use)
            self._marked = self.layout.run_id

    def __enter__(self) -> Run:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class RunPool:
    """Open ``Run`` handles by run id ('latest' resolved first), reopened when a run's manifest
    changes (a run rerun in place), the least recently used closed beyond ``size``."""

    def __init__(self, runs_dir: Path, *, embedder: Any = None, size: int = 4) -> None:
        self.runs_dir = runs_dir
        self.embedder = embedder
        self.size = size
        self._runs: OrderedDict[str, tuple[int, Run]] = OrderedDict()
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def using(self, run_id: str) -> Iterator[Run]:
        """The handle on ``run_id``, leased for the block (eviction meanwhile closes it after)."""
        layout = RunLayout.existing(self.runs_dir, resolve_run_id(self.runs_dir, run_id))
        stamp = layout.manifest.stat().st_mtime_ns
        stale: list[Run] = []
        with self._lock:
            found = self._runs.get(layout.run_id)
            if found is not None and found[0] == stamp:
                self._runs.move_to_end(layout.run_id)
                run = found[1]
            else:
                if found is not None:
                    stale.append(found[1])
                run = Run(self.runs_dir, layout.run_id, embedder=self.embedder)
                self._runs[layout.run_id] = (stamp, run)
                while len(self._runs) > self.size:
                    stale.append(self._runs.popitem(last=False)[1][1])
            run._take()
        for old in stale:
            old.close()
        try:
            yield run
        finally:
            run._give_back()

    def close(self) -> None:
        """Close every handle (each when its last lease ends)."""
        with self._lock:
            runs = [run for _, run in self._runs.values()]
            self._runs.clear()
        for run in runs:
            run.close()


def open_run(
    run_id: str = LATEST, runs_dir: str | Path | None = None, *, embedder: Any = None, in_use: str | None = None
) -> Run:
    """A ``Run`` handle on ``run_id`` ('latest': the newest completed run; RUN_NOT_FOUND if none)."""
    return Run(runs_dir_for(runs_dir), run_id, embedder=embedder, in_use=in_use)
