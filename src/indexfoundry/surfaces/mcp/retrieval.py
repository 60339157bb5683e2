"""Retrieval tools for agents: ``search_docs``, ``get_page``, ``get_section``, ``list_pages``.

Answers are compact and within a size budget. The text part carries the content (chunk or
page text) for the model to read; the structured part carries the metadata (run, indexing
time, paths, breadcrumbs, scores) — the content is never repeated in both. Every answer
names the run it came from and when that run was indexed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol

from indexfoundry import api
from indexfoundry.errors import RunNotFound
from indexfoundry.models.fences import as_markdown
from indexfoundry.models.ids import LATEST, is_latest
from indexfoundry.models.retrieval import RetrievalProfile, SearchMode, SearchRequest, SearchResponse, SearchResult
from indexfoundry.surfaces.mcp.adapter import Exposed, TextAnswer
from indexfoundry.surfaces.mcp.freshness import FreshnessGate
from indexfoundry.surfaces.mcp.retrieval_models import (
    CheckFreshnessInput,
    DocHit,
    GetPageInput,
    GetSectionInput,
    ListPagesInput,
    ListPagesOutput,
    PageItem,
    PageOutput,
    SearchDocsInput,
    SearchDocsOutput,
    SectionOutput,
)
from indexfoundry.surfaces.mcp.security import check_run_id


# ---------------------------------------------------------------- which run
class SearchPageLike(Protocol):
    """One page of numbered results."""

    @property
    def response(self) -> SearchResponse: ...
    @property
    def first_rank(self) -> int: ...


class Counter(Protocol):
    """Counts tokens as the run's embedding model does."""

    def count(self, text: str) -> int: ...


class Searchable(Protocol):
    """What search_docs reads: a ``Run``, or a docs folder's first build while it runs."""

    @property
    def id(self) -> str: ...
    @property
    def indexed_at(self) -> str | None: ...
    @property
    def profile(self) -> RetrievalProfile: ...
    @property
    def token_counter(self) -> Counter: ...
    @property
    def pages(self) -> Any: ...
    def search_page(self, request: SearchRequest, *, cost: Callable[[SearchResult], int]) -> SearchPageLike: ...


class RunSource(Protocol):
    """Where the retrieval tools look when the agent names no run."""

    runs_dir: Path

    def default_run(self) -> str: ...


class FixedRuns:
    """A runs folder and an optional fixed run; without one (or 'latest'), the newest completed run
    of the folder's one pipeline, kept once known (a second pipeline run later never takes over)."""

    def __init__(self, runs_dir: Path, run_id: str | None = None) -> None:
        self.runs_dir = runs_dir
        self.run_id = run_id

    def default_run(self) -> str:
        if (self.run_id or LATEST) == LATEST:
            self.run_id = api.pinned_latest(self.runs_dir, LATEST)
        return latest_or_named(self.runs_dir, self.run_id or LATEST)


def latest_or_named(runs_dir: Path, run_id: str) -> str:
    """``run_id``, or for 'latest' the newest completed run (``api.resolve_run_id``)."""
    try:
        return api.resolve_run_id(runs_dir, run_id)
    except RunNotFound as error:
        raise RunNotFound(
            error.message,
            suggestion="Build one with indexfoundry_pipeline_run, or start the server with --docs FOLDER",
        ) from None


def _stamp(run_id: str, indexed_at: str | None, note: str | None = None) -> str:
    stamp = f"From run {run_id}, indexed {indexed_at or 'not yet'}."
    return f"{stamp} {note}" if note else stamp


# ---------------------------------------------------------------- the tools
class RetrievalTools:
    """The four retrieval tools over a run source."""

    def __init__(
        self,
        source: RunSource,
        runs: api.RunPool,
        flag_changed: bool = False,
        freshness: FreshnessGate | None = None,
        relative_paths: bool = False,
    ) -> None:
        self.source = source
        self.runs = runs
        self.freshness = freshness or FreshnessGate()
        # Docs mode: say when a hit's file changed since its run was indexed (not rebuilt yet).
        self.flag_changed = flag_changed
        # Docs mode and many libraries: page paths are shown relative to the run's folder or
        # source root ("api/auth.md", not "mydocs/api/auth.md"), so a page has the same path in
        # every run of it; the stored form is accepted too.
        self.relative_paths = relative_paths

    def shown(self, run: Searchable, path: str) -> str:
        """A page path (as the run stores it) as the agent sees it."""
        return run.pages.relative(path) if self.relative_paths else path

    def stored(self, run: api.Run, path: str) -> str:
        """A page path or prefix an agent gave, as the run stores it."""
        clean = path.strip().lstrip("/")
        return run.pages.root + clean if self.relative_paths else clean

    def _page(self, run: api.Run, path: str) -> str:
        """The page path (as the run stores it) an agent's path names (either form)."""
        return run.find_page(path, relative=self.relative_paths)

    def stamp(self, run_id: str, indexed_at: str | None) -> str:
        """The first text block: which run answered, when it was indexed, and how stale it is."""
        note_of = getattr(self.source, "stale_note", None)
        return _stamp(run_id, indexed_at, note_of(run_id) if callable(note_of) else None)

    def _run(self, run_id: str | None) -> str:
        if run_id is None:
            return self.source.default_run()
        if is_latest(check_run_id(run_id, allow_latest=True)):
            return latest_or_named(self.source.runs_dir, run_id)
        return run_id

    def using(self, run_id: str | None, *, building: bool = True) -> AbstractContextManager[api.Run]:
        """The ``Run`` an answer reads (the agent's run, else the source's), leased for the answer.
        During a docs folder's first build (with ``building``, for reading pages), the run being
        built once its chunks are committed."""
        if run_id is None and building:
            first_build = getattr(self.source, "first_build", None)
            build = first_build() if callable(first_build) else None
            reader = build.reader() if build is not None else None
            if reader is not None:
                return contextlib.closing(reader)
        return self.runs.using(check_run_id(self._run(run_id)))

    def search_docs(self, payload: SearchDocsInput, progress: Any = None) -> TextAnswer:
        """Search the indexed documentation; the best chunks with their page path and breadcrumb.

        During a docs folder's first build, answers from what the build has indexed so far (its
        chunks by keyword, then the vectors embedded so far), waiting only for the chunks while
        streaming the build's progress to the client (``progress``: MCP notifications)."""
        building = self._while_building(payload, progress)
        if building is not None:
            return self._search_docs(payload, building, building=True)
        with self.using(payload.run_id, building=False) as run:
            return self._search_docs(payload, run)

    def _while_building(self, payload: SearchDocsInput, progress: Any) -> Searchable | None:
        """What the first build under way answers from (None without one, or for a request it
        cannot answer: a named run, a cursor, filters)."""
        first_build = getattr(self.source, "first_build", None)
        if payload.run_id is not None or payload.cursor is not None or payload.filters or not callable(first_build):
            return None
        build = first_build()
        if build is None:
            return None
        stop = build.listen(lambda message: progress.step(1, message)) if progress is not None else None
        try:
            if progress is not None:
                progress.step(0, f"the index is building: {build.state}")
            searchable: Searchable | None = build.wait_searchable()
            return searchable
        finally:
            if stop is not None:
                stop()

    def _search_docs(self, payload: SearchDocsInput, run: Searchable, building: bool = False) -> TextAnswer:
        run_id = run.id
        counter = run.token_counter
        offered = run.profile.retrieval_config.search_modes
        mode: SearchMode = payload.mode or ("hybrid" if "hybrid" in offered else offered[0])
        head = f"{self.stamp(run_id, run.indexed_at)} Results for {payload.query!r}."

        ranks: dict[str, int] = {}  # chunk id -> rank of the results given so far (merged_into)

        def cost(result: SearchResult) -> int:
            doc_hit, block = self._hit(run, 999, result, ranks)  # the widest rank an answer numbers
            return counter.count(block) + counter.count(doc_hit.model_dump_json(exclude_none=True))

        # Room for the header and the answer's own fields beside the results (with a cursor, and
        # a margin: token counts of joined JSON differ by a token or two from the parts' sum).
        skeleton = SearchDocsOutput(
            run_id=run_id,
            indexed_at=run.indexed_at,
            query=payload.query,
            mode=mode,
            results=[],
            returned_chars=100_000,
            tokens=100_000,
            next_cursor="x" * 160,
        )
        reserve = counter.count(head) + counter.count(skeleton.model_dump_json(exclude_none=True)) + 16
        if building:
            reserve += 2 * 64  # what the answer says it searched (in the text and in its warnings)
        page = run.search_page(
            SearchRequest(
                query=payload.query,
                top_k=payload.top_k,
                mode=mode,
                filters=payload.filters,
                max_tokens=max(payload.max_tokens - reserve, 100),
                cursor=payload.cursor,
                expand=payload.expand,
            ),
            cost=cost,
        )
        response = page.response
        flag = self.flag_changed and not building
        changed = self._changed(run_id, {r.source.uri for r in response.results}) if flag else set()
        hits: list[DocHit] = []
        texts = [" ".join([head, *response.warnings]) if building else head]
        for rank, result in enumerate(response.results, start=page.first_rank):
            ranks.setdefault(result.chunk_id, rank)
            doc_hit, block = self._hit(run, rank, result, ranks)
            if result.source.uri in changed:
                doc_hit.changed = True
                block = block.replace("\n\n", " [changed since indexing]\n\n", 1)
            hits.append(doc_hit)
            texts.append(block)
        structured = SearchDocsOutput(
            run_id=response.run_id,
            indexed_at=response.indexed_at,
            query=payload.query,
            mode=response.mode,
            results=hits,
            returned_chars=sum(len(r.text) for r in response.results),
            tokens=0,
            next_cursor=response.next_cursor,
            warnings=response.warnings,
        )
        structured.tokens = sum(counter.count(t) for t in texts) + counter.count(
            structured.model_dump_json(exclude_none=True)
        )
        return TextAnswer(structured=structured, texts=texts)

    def _hit(self, run: Searchable, rank: int, result: SearchResult, ranks: dict[str, int]) -> tuple[DocHit, str]:
        """One result as the answer gives it: its metadata and its text block ``[rank] path ›
        breadcrumb (score)`` then the text (``ranks``: chunk id -> rank of the results given so far,
        for a hit whose context an earlier one already holds)."""
        crumb = result.breadcrumb or result.metadata.heading_path or result.position.section
        doc_hit = DocHit(
            rank=rank,
            path=self.shown(run, _result_path(result.source.uri, result.source.record_id)),
            breadcrumb=crumb,
            score=result.score,
            rerank_score=result.rerank_score,
            chunk_id=result.chunk_id,
            page=result.position.page,
            chars=len(result.text),
            text_range=result.text_range,
            merged_into=ranks.get(result.expanded.merged_into or "") if result.expanded else None,
        )
        where = doc_hit.path + (f" › {crumb}" if crumb else "")
        if result.expanded is not None and result.expanded.merged_into:
            owner = f"[{doc_hit.merged_into}]" if doc_hit.merged_into else "an earlier result"
            return doc_hit, f"[{rank}] {where} (score {result.score:.3f}): its context is in {owner}"
        return doc_hit, f"[{rank}] {where} (score {result.score:.3f})\n\n{as_markdown(result.text, result.fence)}"

    def get_page(self, payload: GetPageInput) -> TextAnswer:
        """A whole page as extracted (markdown where the source had structure)."""
        with self.using(payload.run_id) as run:
            return self._get_page(payload, run)

    def _get_page(self, payload: GetPageInput, run: api.Run) -> TextAnswer:
        part = run.page_part(self._page(run, payload.path), max_tokens=payload.max_tokens, cursor=payload.cursor)
        indexed_at = run.pages.indexed_at
        structured = PageOutput(
            run_id=run.id,
            indexed_at=indexed_at,
            path=self.shown(run, part.path),
            title=part.document.title,
            format=part.document.format,
            chars=part.chars,
            offset=part.offset,
            returned_chars=len(part.text),
            tokens=part.tokens,
            next_cursor=part.next_cursor,
        )
        return TextAnswer(structured=structured, texts=[self.stamp(run.id, indexed_at), part.text])

    def get_section(self, payload: GetSectionInput) -> TextAnswer:
        """One section of a page, by heading text or breadcrumb."""
        with self.using(payload.run_id) as run:
            return self._get_section(payload, run)

    def _get_section(self, payload: GetSectionInput, run: api.Run) -> TextAnswer:
        part = run.section_part(
            self._page(run, payload.path), payload.heading, max_tokens=payload.max_tokens, cursor=payload.cursor
        )
        indexed_at = run.pages.indexed_at
        structured = SectionOutput(
            run_id=run.id,
            indexed_at=indexed_at,
            path=self.shown(run, part.path),
            title=part.document.title,
            heading=part.heading.text,
            breadcrumb=part.breadcrumb,
            level=part.heading.level,
            line=part.heading.line,
            chars=part.chars,
            offset=part.offset,
            returned_chars=len(part.text),
            tokens=part.tokens,
            next_cursor=part.next_cursor,
            other_matches=part.other_matches,
        )
        return TextAnswer(structured=structured, texts=[self.stamp(run.id, indexed_at), part.text])

    def _changed(self, run_id: str, uris: set[str]) -> set[str]:
        """Which of these folder-file uris changed since the run (hashes only, no network)."""
        report = api.check_freshness(
            run_id, runs_dir=self.source.runs_dir, uris=sorted(uris), max_seconds=2, local_only=True
        )
        return {entry.uri for entry in report.changed}

    def check_freshness(self, payload: CheckFreshnessInput) -> api.FreshnessReport:
        """Which sources of the run changed since it was built (files by hash, URLs by ETag)."""
        run_id = self._run(payload.run_id)
        uris = None
        if payload.paths is not None:
            with self.runs.using(check_run_id(run_id)) as run:
                uris = [self.stored(run, p.split("#", 1)[0]) for p in payload.paths]
        return api.check_freshness(
            run_id,
            runs_dir=self.source.runs_dir,
            uris=uris,
            sample=payload.sample,
            max_seconds=payload.max_seconds,
            cache=self.freshness.cache,
            budget=self.freshness.budget,
        )

    def list_pages(self, payload: ListPagesInput) -> TextAnswer:
        """The pages of the run, sorted by path: one line each in the text part ("path — title"),
        their metadata in the structured part (never the same content in both)."""
        with self.using(payload.run_id) as run:
            return self._list_pages(payload, run)

    def _list_pages(self, payload: ListPagesInput, run: api.Run) -> TextAnswer:
        view = run.pages
        prefix = self.stored(run, payload.prefix) if payload.prefix else None
        keys = [k for k in view.documents if prefix is None or k.startswith(prefix)]
        chosen = keys[payload.offset : payload.offset + payload.limit]
        pages = []
        lines = []
        for key in chosen:
            doc = view.documents[key]
            shown = self.shown(run, key)
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
                long_running=True,  # a docs folder's first build: its progress while the chunks come
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
                name="check_freshness",
                description="Which sources changed since the run was built (files by hash, URLs by ETag).",
                input_model=CheckFreshnessInput,
                output_model=api.FreshnessReport,
                call=self.check_freshness,
                **{**common, "open_world": True, "idempotent": False},
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
        with self.using(None) as run:
            return run.page(self._page(run, path)).text

    def page_list(self, limit: int = 1000) -> list[tuple[str, str | None, str]]:
        with self.using(None) as run:
            documents = list(run.pages.documents.items())[:limit]
            return [(self.shown(run, key), doc.title, doc.format) for key, doc in documents]


def _result_path(uri: str, record_id: str | None) -> str:
    return f"{uri}#{record_id}" if record_id else uri


__all__ = ["FixedRuns", "RetrievalTools", "RunSource", "latest_or_named"]
