"""The agent tools of a multi-library server: ``list_libraries``, and ``search_docs``,
``get_page``, ``get_section``, ``list_pages`` taking a library and a version (or range).

A search without a library searches every library (each at the version ``version`` picks,
default the latest) and labels every result with its library and version; results are merged
by score. Descriptions are kept short: the tool listing is part of every agent's context.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from indexfoundry import api
from indexfoundry.models.base import Strict
from indexfoundry.models.fences import as_markdown
from indexfoundry.models.retrieval import SearchFilter, SearchMode
from indexfoundry.models.serve import LibrarySearchHit, LibraryVersionView
from indexfoundry.surfaces.mcp.adapter import Exposed, TextAnswer
from indexfoundry.surfaces.mcp.retrieval import RetrievalTools
from indexfoundry.surfaces.mcp.retrieval_models import (
    CURSOR_DESCRIPTION,
    PAGE_TOKENS,
    SEARCH_TOKENS,
    TOKENS_DESCRIPTION,
    GetPageInput,
    GetSectionInput,
    ListPagesInput,
    ListPagesOutput,
    PageOutput,
    SectionOutput,
)

if TYPE_CHECKING:
    from indexfoundry.api import LibraryRegistry

_LIB = "Library name (list_libraries)"
_VERSION = "Exact version, 'latest' (default), '18.x' or a range like '>=18 <19'"


class ListLibrariesInput(Strict):
    """Arguments of ``list_libraries``."""

    name: str | None = Field(default=None, max_length=128, description="Only this library")


class ListLibrariesOutput(Strict):
    libraries: list[LibraryVersionView] = Field(description="Library versions, by name, newest first")


class LibrarySearchInput(Strict):
    """Arguments of ``search_docs`` on a multi-library server."""

    query: str = Field(min_length=1, max_length=4096, description="What to look for")
    library: str | None = Field(default=None, max_length=128, description="Library to search; default: all")
    version: str | None = Field(default=None, max_length=64, description=_VERSION)
    top_k: int = Field(default=5, ge=1, le=50, description="Number of results")
    mode: SearchMode | None = Field(default=None, description="semantic, keyword or hybrid")
    filters: list[SearchFilter] = Field(default_factory=list, description="Metadata filters (ANDed)")
    max_tokens: int = Field(default=SEARCH_TOKENS, ge=200, le=20_000, description=TOKENS_DESCRIPTION)
    cursor: str | None = Field(default=None, max_length=1024, description=CURSOR_DESCRIPTION)


class LibraryHit(Strict):
    rank: int = Field(description="1-based rank; text block [rank] holds the chunk")
    library: str = Field(description="Library of the result")
    version: str = Field(description="Version of the library")
    path: str = Field(description="Page path, the same in every version (for get_page / get_section)")
    breadcrumb: str | None = Field(default=None, description="Heading breadcrumb")
    score: float = Field(description="Score, higher is better")
    chunk_id: str = Field(description="Chunk id")
    chars: int = Field(description="Characters of text included")
    text_range: tuple[int, int] | None = Field(default=None, description="Part [start, end) of an over-budget text")


class Searched(Strict):
    library: str = Field(description="Library")
    version: str = Field(description="Version searched")
    run_id: str = Field(description="Run searched")
    indexed_at: str | None = Field(default=None, description="When it was indexed")


class LibrarySearchOutput(Strict):
    query: str = Field(description="The query")
    searched: list[Searched] = Field(description="Library versions searched")
    results: list[LibraryHit] = Field(description="Results, best first")
    returned_chars: int = Field(description="Characters of chunk text in the answer")
    tokens: int = Field(description="Tokens returned")
    next_cursor: str | None = Field(default=None, description="Pass as cursor for more")
    warnings: list[str] = Field(default_factory=list, description="E.g. reranking skipped")


class LibraryPageInput(Strict):
    """Arguments of ``get_page``."""

    library: str = Field(min_length=1, max_length=128, description=_LIB)
    version: str | None = Field(default=None, max_length=64, description=_VERSION)
    path: str = Field(min_length=1, max_length=2048, description="Page path from search_docs / list_pages")
    max_tokens: int = Field(default=PAGE_TOKENS, ge=200, le=100_000, description=TOKENS_DESCRIPTION)
    cursor: str | None = Field(default=None, max_length=1024, description=CURSOR_DESCRIPTION)


class LibrarySectionInput(Strict):
    """Arguments of ``get_section``."""

    library: str = Field(min_length=1, max_length=128, description=_LIB)
    version: str | None = Field(default=None, max_length=64, description=_VERSION)
    path: str = Field(min_length=1, max_length=2048, description="Page path")
    heading: str = Field(min_length=1, max_length=1024, description="Heading text or breadcrumb 'A > B'")
    max_tokens: int = Field(default=PAGE_TOKENS, ge=200, le=100_000, description=TOKENS_DESCRIPTION)
    cursor: str | None = Field(default=None, max_length=1024, description=CURSOR_DESCRIPTION)


class LibraryListPagesInput(Strict):
    """Arguments of ``list_pages``."""

    library: str = Field(min_length=1, max_length=128, description=_LIB)
    version: str | None = Field(default=None, max_length=64, description=_VERSION)
    prefix: str | None = Field(default=None, max_length=2048, description="Only paths starting with this")
    offset: int = Field(default=0, ge=0, description="Pages to skip")
    limit: int = Field(default=200, ge=1, le=2000, description="Most pages listed")


class Labeled(Strict):
    library: str = Field(description="Library")
    version: str = Field(description="Version")


class LibraryPageOutput(PageOutput, Labeled):
    """``get_page`` answer (text part: the page)."""


class LibrarySectionOutput(SectionOutput, Labeled):
    """``get_section`` answer (text part: the section)."""


class LibraryListPagesOutput(ListPagesOutput, Labeled):
    """``list_pages`` answer."""


class LibraryTools:
    """The library-aware retrieval tools over a registry."""

    def __init__(self, registry: LibraryRegistry, retrieval: RetrievalTools) -> None:
        self.registry = registry
        self.retrieval = retrieval

    def list_libraries(self, payload: ListLibrariesInput) -> ListLibrariesOutput:
        """Every library version served, with its run, indexing time and page count."""
        listed = api.library_reader(self.registry, self.retrieval).list(payload.name)
        return ListLibrariesOutput(libraries=listed.libraries)

    def search_docs(self, payload: LibrarySearchInput) -> TextAnswer:
        """Search one library (or all), labelling each result with its library and version.

        The libraries searched are merged by score (ties: library label, then each library's own
        order), cut to ``top_k``, then paged within ``max_tokens`` like docs mode's ``search_docs``
        (``api.library_reader(...).search``): whole results as fit, a result larger than the
        budget in parts, and a ``next_cursor`` bound to the request and to the runs searched.
        """
        found = api.library_reader(self.registry, self.retrieval).search(
            payload.query,
            top_k=payload.top_k,
            library=payload.library,
            version=payload.version,
            mode=payload.mode,
            filters=payload.filters,
        )
        counter = found.counter
        searched = [Searched(**s.model_dump()) for s in found.searched]
        where = ", ".join(f"{s.library}@{s.version} (run {s.run_id}, indexed {s.indexed_at})" for s in searched)
        head = f"Searched {where}: {len(found.hits)} result(s) for {payload.query!r}."

        def cost(item: LibrarySearchHit) -> int:
            labelled, block = _hit(999, item)  # the widest rank an answer numbers
            return counter.count(block) + counter.count(labelled.model_dump_json(exclude_none=True))

        skeleton = LibrarySearchOutput(
            query=payload.query,
            searched=searched,
            results=[],
            returned_chars=100_000,
            tokens=100_000,
            next_cursor="x" * 160,
            warnings=found.warnings,
        )
        reserve = counter.count(head) + counter.count(skeleton.model_dump_json(exclude_none=True)) + 16
        page = found.page(max(payload.max_tokens - reserve, 100), payload.cursor, cost)
        hits: list[LibraryHit] = []
        texts = [head]
        for rank, item in enumerate(page.hits, start=page.first_rank):
            labelled, block = _hit(rank, item)
            hits.append(labelled)
            texts.append(block)
        structured = LibrarySearchOutput(
            query=payload.query,
            searched=searched,
            results=hits,
            returned_chars=sum(h.chars for h in hits),
            tokens=0,
            next_cursor=page.next_cursor,
            warnings=found.warnings,
        )
        structured.tokens = sum(counter.count(t) for t in texts) + counter.count(
            structured.model_dump_json(exclude_none=True)
        )
        return TextAnswer(structured=structured, texts=texts)

    def get_page(self, payload: LibraryPageInput) -> TextAnswer:
        """A whole page of a library version."""
        lib = self.registry.resolve(payload.library, payload.version)
        answer = self.retrieval.get_page(
            GetPageInput(path=payload.path, run_id=lib.run_id(), max_tokens=payload.max_tokens, cursor=payload.cursor)
        )
        data = answer.structured.model_dump()
        return TextAnswer(LibraryPageOutput(**data, library=lib.name, version=lib.version), answer.texts)

    def get_section(self, payload: LibrarySectionInput) -> TextAnswer:
        """One section of a page of a library version."""
        lib = self.registry.resolve(payload.library, payload.version)
        answer = self.retrieval.get_section(
            GetSectionInput(
                path=payload.path,
                heading=payload.heading,
                run_id=lib.run_id(),
                max_tokens=payload.max_tokens,
                cursor=payload.cursor,
            )
        )
        data = answer.structured.model_dump()
        return TextAnswer(LibrarySectionOutput(**data, library=lib.name, version=lib.version), answer.texts)

    def list_pages(self, payload: LibraryListPagesInput) -> TextAnswer:
        """The pages of a library version ("path — title" lines in the text part, metadata structured)."""
        lib = self.registry.resolve(payload.library, payload.version)
        listed = self.retrieval.list_pages(
            ListPagesInput(run_id=lib.run_id(), prefix=payload.prefix, offset=payload.offset, limit=payload.limit)
        )
        data = listed.structured.model_dump()
        return TextAnswer(LibraryListPagesOutput(**data, library=lib.name, version=lib.version), listed.texts)

    def exposed(self) -> list[Exposed]:
        common: dict[str, Any] = {
            "read_only": True,
            "destructive": False,
            "idempotent": True,
            "open_world": False,
        }
        tools: list[tuple[str, str, type[BaseModel], type[BaseModel], Callable[..., BaseModel | TextAnswer]]] = [
            (
                "list_libraries",
                "List the libraries and versions served.",
                ListLibrariesInput,
                ListLibrariesOutput,
                self.list_libraries,
            ),
            (
                "search_docs",
                "Search library docs (one library, or all: each result names its library and version).",
                LibrarySearchInput,
                LibrarySearchOutput,
                self.search_docs,
            ),
            ("get_page", "Get a page of a library version.", LibraryPageInput, LibraryPageOutput, self.get_page),
            (
                "get_section",
                "Get a section of a page by heading or breadcrumb.",
                LibrarySectionInput,
                LibrarySectionOutput,
                self.get_section,
            ),
            (
                "list_pages",
                "List the pages of a library version.",
                LibraryListPagesInput,
                LibraryListPagesOutput,
                self.list_pages,
            ),
        ]
        return [
            Exposed(name=name, description=text, input_model=model, output_model=output, call=call, **common)
            for name, text, model, output, call in tools
        ]


def _hit(rank: int, item: LibrarySearchHit) -> tuple[LibraryHit, str]:
    """One result as ``search_docs`` gives it: its labelled metadata and its text block
    ``[rank] library@version · path › breadcrumb (score)`` then the text."""
    result = item.result
    crumb = result.breadcrumb or result.metadata.heading_path or result.position.section
    path = item.path
    labelled = LibraryHit(
        rank=rank,
        library=item.library,
        version=item.version,
        path=path,
        breadcrumb=crumb,
        score=result.score,
        chunk_id=result.chunk_id,
        chars=len(result.text),
        text_range=result.text_range,
    )
    place = f"{item.library}@{item.version} · {path}" + (f" › {crumb}" if crumb else "")
    return labelled, f"[{rank}] {place} (score {result.score:.3f})\n\n{as_markdown(result.text, result.fence)}"
