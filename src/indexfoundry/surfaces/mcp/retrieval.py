"""Retrieval tools for agents: ``search_docs``, ``get_page``, ``get_section``, ``list_pages``.

Answers are compact and within a size budget. The text part carries the content (chunk or
page text) for the model to read; the structured part carries the metadata (run, indexing
time, paths, breadcrumbs, scores) — the content is never repeated in both. Every answer
names the run it came from and when that run was indexed.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any, Protocol

from pydantic import Field

from indexfoundry.errors import NotFound, RunNotFound
from indexfoundry.models.base import Strict
from indexfoundry.models.retrieval import SearchFilter, SearchMode, SearchRequest
from indexfoundry.pipeline.runs import latest_run
from indexfoundry.retrieval.service import SearchService, open_service
from indexfoundry.storage.layout import RunLayout
from indexfoundry.surfaces.mcp.adapter import Exposed, TextAnswer
from indexfoundry.surfaces.mcp.pages import RunView, page_key, sections_of
from indexfoundry.surfaces.mcp.security import LATEST, check_run_id

RUN_ID_DESCRIPTION = (
    "Run to read (a UUID, or 'latest'); default: the server's run (docs mode: the folder's current run)"
)


# ---------------------------------------------------------------- which run
class RunSource(Protocol):
    """Where the retrieval tools look when the agent names no run."""

    runs_dir: Path

    def default_run(self) -> str: ...


class FixedRuns:
    """A runs folder and an optional fixed run; without one, the newest completed run."""

    def __init__(self, runs_dir: Path, run_id: str | None = None) -> None:
        self.runs_dir = runs_dir
        self.run_id = run_id

    def default_run(self) -> str:
        if self.run_id is not None:
            return self.run_id
        found = latest_run(self.runs_dir)
        if found is None:
            raise RunNotFound(
                f"no completed run in {self.runs_dir}",
                suggestion="Build one with indexfoundry_pipeline_run, or start the server with --docs FOLDER",
            )
        return found


class RunCache:
    """Opened runs (views and search services), reopened when a run's manifest changes."""

    def __init__(self, runs_dir: Path, embedder: Any = None, size: int = 4) -> None:
        self.runs_dir = runs_dir
        self.embedder = embedder
        self.size = size
        self._views: OrderedDict[tuple[str, int], RunView] = OrderedDict()
        self._services: OrderedDict[tuple[str, int], SearchService] = OrderedDict()
        self._lock = threading.Lock()

    def _key(self, run_id: str) -> tuple[RunLayout, tuple[str, int]]:
        layout = RunLayout.existing(self.runs_dir, check_run_id(run_id))
        return layout, (run_id, layout.manifest.stat().st_mtime_ns)

    def view(self, run_id: str) -> RunView:
        layout, key = self._key(run_id)
        with self._lock:
            found = self._views.get(key)
            if found is None:
                found = RunView(layout)
                self._views[key] = found
                while len(self._views) > self.size:
                    self._views.popitem(last=False)
            return found

    def service(self, run_id: str) -> SearchService:
        layout, key = self._key(run_id)
        with self._lock:
            found = self._services.get(key)
            if found is None:
                found = open_service(layout, self.embedder)
                self._services[key] = found
                while len(self._services) > self.size:
                    self._services.popitem(last=False)
            return found


# ---------------------------------------------------------------- models
class SearchDocsInput(Strict):
    """Arguments of ``search_docs``."""

    query: str = Field(min_length=1, max_length=4096, description="What to look for, in natural language")
    top_k: int = Field(default=5, ge=1, le=50, description="Number of results")
    mode: SearchMode | None = Field(
        default=None, description="semantic, keyword or hybrid; default: hybrid when the run offers it"
    )
    filters: list[SearchFilter] = Field(
        default_factory=list, description="Metadata filters (ANDed), e.g. {field: 'source.uri', op: 'eq', value: ...}"
    )
    run_id: str | None = Field(default=None, description=RUN_ID_DESCRIPTION)
    max_chars: int = Field(
        default=8000, ge=500, le=100_000, description="Budget for the result texts together; the last result is cut"
    )


class DocHit(Strict):
    """One search result's metadata; its text is the matching block of the text part."""

    rank: int = Field(description="1-based rank; the text part's block [rank] holds the chunk text")
    path: str = Field(description="Source path of the page (pass it to get_page / get_section)")
    breadcrumb: str | None = Field(default=None, description="Heading breadcrumb of the chunk's section")
    score: float = Field(description="Similarity score, higher is better")
    chunk_id: str = Field(description="Chunk id")
    page: int | None = Field(default=None, description="Page number, for paged documents")
    chars: int = Field(description="Characters of chunk text included in the answer")
    cut: bool = Field(default=False, description="The text was shortened to fit the budget")


class SearchDocsOutput(Strict):
    """Structured part of a ``search_docs`` answer."""

    run_id: str = Field(description="Run the results come from")
    indexed_at: str | None = Field(default=None, description="When that run's index phase completed")
    query: str = Field(description="The query")
    mode: SearchMode = Field(description="Search mode used")
    results: list[DocHit] = Field(description="Results, best first")
    returned_chars: int = Field(description="Characters of chunk text in the answer")
    omitted: int = Field(default=0, description="Results left out to stay within max_chars")


class GetPageInput(Strict):
    """Arguments of ``get_page``."""

    path: str = Field(min_length=1, max_length=2048, description="Page path as list_pages / search_docs give it")
    run_id: str | None = Field(default=None, description=RUN_ID_DESCRIPTION)
    offset: int = Field(default=0, ge=0, description="First character to return (for paging long pages)")
    max_chars: int = Field(default=100_000, ge=1000, le=1_000_000, description="Most characters returned")


class PageOutput(Strict):
    """Structured part of a ``get_page`` answer; the text part is the page text."""

    run_id: str = Field(description="Run the page comes from")
    indexed_at: str | None = Field(default=None, description="When that run's index phase completed")
    path: str = Field(description="Page path")
    title: str | None = Field(default=None, description="Page title")
    format: str = Field(description="Document format")
    chars: int = Field(description="Characters in the whole page")
    offset: int = Field(description="First character returned")
    returned_chars: int = Field(description="Characters returned")
    next_offset: int | None = Field(default=None, description="Offset of the rest, when the page was cut")


class GetSectionInput(Strict):
    """Arguments of ``get_section``."""

    path: str = Field(min_length=1, max_length=2048, description="Page path")
    heading: str = Field(
        min_length=1, max_length=1024, description="Heading text, or a breadcrumb like 'Guide > Config > Theme'"
    )
    run_id: str | None = Field(default=None, description=RUN_ID_DESCRIPTION)


class SectionOutput(Strict):
    """Structured part of a ``get_section`` answer; the text part is the section."""

    run_id: str = Field(description="Run the section comes from")
    indexed_at: str | None = Field(default=None, description="When that run's index phase completed")
    path: str = Field(description="Page path")
    title: str | None = Field(default=None, description="Page title")
    heading: str = Field(description="Heading of the section")
    breadcrumb: str = Field(description="Breadcrumb of the section")
    level: int = Field(description="Heading level")
    line: int = Field(description="1-based line of the heading in the page")
    chars: int = Field(description="Characters in the section")
    other_matches: list[str] = Field(default_factory=list, description="Breadcrumbs of other sections that matched")


class ListPagesInput(Strict):
    """Arguments of ``list_pages``."""

    run_id: str | None = Field(default=None, description=RUN_ID_DESCRIPTION)
    prefix: str | None = Field(default=None, max_length=2048, description="Only pages whose path starts with this")
    offset: int = Field(default=0, ge=0, description="Pages to skip")
    limit: int = Field(default=200, ge=1, le=2000, description="Most pages listed")


class PageItem(Strict):
    """One page's metadata; its title is on the page's line of the text part."""

    path: str = Field(description="Page path")
    format: str = Field(description="Document format")
    chars: int = Field(description="Characters in the page")
    sections: int = Field(description="Number of headings")


class ListPagesOutput(Strict):
    """Answer of ``list_pages``."""

    run_id: str = Field(description="Run listed")
    indexed_at: str | None = Field(default=None, description="When that run's index phase completed")
    total: int = Field(description="Pages matching the prefix")
    offset: int = Field(description="Pages skipped")
    pages: list[PageItem] = Field(description="Pages, sorted by path")


def _stamp(run_id: str, indexed_at: str | None, note: str | None = None) -> str:
    stamp = f"From run {run_id}, indexed {indexed_at or 'not yet'}."
    return f"{stamp} {note}" if note else stamp


# ---------------------------------------------------------------- the tools
class RetrievalTools:
    """The four retrieval tools over a run source."""

    def __init__(self, source: RunSource, cache: RunCache) -> None:
        self.source = source
        self.cache = cache
        # Docs mode: page paths are shown relative to the docs folder ("api/auth.md", not
        # "mydocs/api/auth.md"); both forms are accepted.
        self.page_prefix: str = getattr(source, "page_prefix", "")

    def shown(self, path: str) -> str:
        """A page path as the agent sees it."""
        return path[len(self.page_prefix) :] if self.page_prefix and path.startswith(self.page_prefix) else path

    def stored(self, path: str) -> str:
        """A page path an agent gave, as the run stores it (either form is accepted)."""
        clean = path.strip().lstrip("/")
        if self.page_prefix and not clean.startswith(self.page_prefix):
            return self.page_prefix + clean
        return clean

    def _document(self, view: RunView, path: str) -> Any:
        try:
            return view.document(self.stored(path))
        except NotFound:
            return view.document(path)

    def stamp(self, run_id: str, indexed_at: str | None) -> str:
        """The first text block: which run answered, when it was indexed, and how stale it is."""
        note_of = getattr(self.source, "stale_note", None)
        return _stamp(run_id, indexed_at, note_of(run_id) if callable(note_of) else None)

    def _run(self, run_id: str | None) -> str:
        if run_id is None:
            return self.source.default_run()
        if check_run_id(run_id, allow_latest=True) == LATEST:
            return FixedRuns(self.source.runs_dir).default_run()
        return run_id

    def search_docs(self, payload: SearchDocsInput) -> TextAnswer:
        """Search the indexed documentation; the best chunks with their page path and breadcrumb."""
        run_id = self._run(payload.run_id)
        service = self.cache.service(run_id)
        offered = service.profile.retrieval_config.search_modes
        mode: SearchMode = payload.mode or ("hybrid" if "hybrid" in offered else offered[0])
        response = service.search(
            SearchRequest(query=payload.query, top_k=payload.top_k, mode=mode, filters=payload.filters)
        )
        hits: list[DocHit] = []
        texts = [
            f"{self.stamp(response.run_id, response.indexed_at)} {len(response.results)} result(s) for "
            f"{payload.query!r}."
        ]
        budget = payload.max_chars
        omitted = 0
        for rank, result in enumerate(response.results, start=1):
            if budget < 200 and hits:
                omitted += 1
                continue
            text = result.text
            cut = len(text) > budget
            if cut:
                text = text[: max(budget - 1, 0)].rstrip() + "…"
            budget -= len(text)
            crumb = result.breadcrumb or result.metadata.heading_path or result.position.section
            hits.append(
                DocHit(
                    rank=rank,
                    path=self.shown(_result_path(result.source.uri, result.source.record_id)),
                    breadcrumb=crumb,
                    score=result.score,
                    chunk_id=result.chunk_id,
                    page=result.position.page,
                    chars=len(text),
                    cut=cut,
                )
            )
            where = hits[-1].path + (f" › {crumb}" if crumb else "")
            texts.append(f"[{rank}] {where} (score {result.score:.3f})\n\n{text}")
        structured = SearchDocsOutput(
            run_id=response.run_id,
            indexed_at=response.indexed_at,
            query=payload.query,
            mode=response.mode,
            results=hits,
            returned_chars=sum(h.chars for h in hits),
            omitted=omitted,
        )
        return TextAnswer(structured=structured, texts=texts)

    def get_page(self, payload: GetPageInput) -> TextAnswer:
        """A whole page as extracted (markdown where the source had structure)."""
        view = self.cache.view(self._run(payload.run_id))
        doc = self._document(view, payload.path)
        text = view.text(doc)
        part = text[payload.offset : payload.offset + payload.max_chars]
        end = payload.offset + len(part)
        structured = PageOutput(
            run_id=view.run_id,
            indexed_at=view.indexed_at,
            path=self.shown(page_key(doc)),
            title=doc.title,
            format=doc.format,
            chars=len(text),
            offset=payload.offset,
            returned_chars=len(part),
            next_offset=end if end < len(text) else None,
        )
        return TextAnswer(structured=structured, texts=[self.stamp(view.run_id, view.indexed_at), part])

    def get_section(self, payload: GetSectionInput) -> TextAnswer:
        """One section of a page, by heading text or breadcrumb."""
        view = self.cache.view(self._run(payload.run_id))
        doc, section, body, others = view.section(page_key(self._document(view, payload.path)), payload.heading)
        structured = SectionOutput(
            run_id=view.run_id,
            indexed_at=view.indexed_at,
            path=self.shown(page_key(doc)),
            title=doc.title,
            heading=section.heading.text,
            breadcrumb=section.breadcrumb,
            level=section.heading.level,
            line=section.heading.line,
            chars=len(body),
            other_matches=others,
        )
        return TextAnswer(structured=structured, texts=[self.stamp(view.run_id, view.indexed_at), body])

    def list_pages(self, payload: ListPagesInput) -> TextAnswer:
        """The pages of the run, sorted by path: one line each in the text part ("path — title"),
        their metadata in the structured part (never the same content in both)."""
        view = self.cache.view(self._run(payload.run_id))
        prefix = self.stored(payload.prefix) if payload.prefix else None
        keys = [k for k in view.documents if prefix is None or k.startswith(prefix)]
        chosen = keys[payload.offset : payload.offset + payload.limit]
        pages = []
        lines = []
        for key in chosen:
            doc = view.documents[key]
            shown = self.shown(key)
            pages.append(PageItem(path=shown, format=doc.format, chars=doc.char_count, sections=len(doc.headings)))
            lines.append(f"{shown} — {doc.title}" if doc.title else shown)
        structured = ListPagesOutput(
            run_id=view.run_id, indexed_at=view.indexed_at, total=len(keys), offset=payload.offset, pages=pages
        )
        head = f"{self.stamp(view.run_id, view.indexed_at)} {len(keys)} page(s)"
        head += f", {len(chosen)} listed from {payload.offset}." if len(chosen) < len(keys) else "."
        return TextAnswer(structured=structured, texts=[head, "\n".join(lines)] if lines else [head])

    def exposed(self) -> list[Exposed]:
        common: dict[str, Any] = {
            "read_only": True,
            "destructive": False,
            "idempotent": True,
            "open_world": False,
            "guard_paths": False,
        }
        return [
            Exposed(
                name="search_docs",
                description=(
                    "Search the indexed documentation. Returns the best chunks: each text block is "
                    "'[rank] path › breadcrumb (score)' then the chunk text; the structured part holds "
                    "the run id, when it was indexed, paths, breadcrumbs and scores."
                ),
                input_model=SearchDocsInput,
                output_model=SearchDocsOutput,
                call=self.search_docs,
                **common,
            ),
            Exposed(
                name="get_page",
                description="Get a whole page (document) as extracted, by the path search_docs or list_pages gave.",
                input_model=GetPageInput,
                output_model=PageOutput,
                call=self.get_page,
                **common,
            ),
            Exposed(
                name="get_section",
                description="Get one section of a page by its heading or breadcrumb ('Guide > Config > Theme').",
                input_model=GetSectionInput,
                output_model=SectionOutput,
                call=self.get_section,
                **common,
            ),
            Exposed(
                name="list_pages",
                description="List the pages (documents) of the run with their titles.",
                input_model=ListPagesInput,
                output_model=ListPagesOutput,
                call=self.list_pages,
                **common,
            ),
        ]

    # Resources -----------------------------------------------------------------
    def page_text(self, path: str) -> str:
        view = self.cache.view(self.source.default_run())
        return view.text(self._document(view, path))

    def page_list(self, limit: int = 1000) -> list[tuple[str, str | None, str]]:
        view = self.cache.view(self.source.default_run())
        return [(self.shown(key), doc.title, doc.format) for key, doc in list(view.documents.items())[:limit]]


def _result_path(uri: str, record_id: str | None) -> str:
    return f"{uri}#{record_id}" if record_id else uri


__all__ = ["FixedRuns", "RetrievalTools", "RunCache", "RunSource", "sections_of"]
