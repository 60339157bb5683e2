"""The arguments and answers of the retrieval tools (``search_docs``, ``get_page``,
``get_section``, ``check_freshness``, ``list_pages``): what an agent may send, and the
structured part of what it gets back.
"""

from __future__ import annotations

from pydantic import Field

from indexfoundry.models.base import Strict
from indexfoundry.models.ids import RunRef
from indexfoundry.models.retrieval import ExpandMode, SearchFilter, SearchMode

RUN_ID_DESCRIPTION = (
    "Run to read (a UUID, or 'latest'); default: the server's run (docs mode: the folder's current run)"
)
TOKENS_DESCRIPTION = "Token budget; the rest via next_cursor"
CURSOR_DESCRIPTION = "next_cursor of the previous answer"
# Defaults far under the 25,000-token cap of popular MCP clients (counted with the run's
# embedding tokenizer or chars/4, which differ from the client's own tokenizer).
SEARCH_TOKENS = 6000
PAGE_TOKENS = 8000


class SearchDocsInput(Strict):
    """Arguments of ``search_docs``."""

    query: str = Field(min_length=1, max_length=4096, description="What to look for, in natural language")
    top_k: int = Field(default=5, ge=1, le=500, description="Number of results (paged by max_tokens)")
    mode: SearchMode | None = Field(
        default=None, description="semantic, keyword or hybrid; default: hybrid when the run offers it"
    )
    filters: list[SearchFilter] = Field(
        default_factory=list, description="Metadata filters (ANDed), e.g. {field: 'source.uri', op: 'eq', value: ...}"
    )
    run_id: RunRef | None = Field(default=None, description=RUN_ID_DESCRIPTION)
    max_tokens: int = Field(default=SEARCH_TOKENS, ge=200, le=20_000, description=TOKENS_DESCRIPTION)
    cursor: str | None = Field(default=None, max_length=1024, description=CURSOR_DESCRIPTION)
    expand: ExpandMode = Field(default="none", description="Widen hits to neighbouring chunks or their section")


class DocHit(Strict):
    """One search result's metadata; its text is the matching block of the text part."""

    rank: int = Field(description="1-based rank; the text part's block [rank] holds the chunk text")
    path: str = Field(description="Source path of the page (pass it to get_page / get_section)")
    breadcrumb: str | None = Field(default=None, description="Heading breadcrumb of the chunk's section")
    score: float = Field(description="Retrieval score, higher is better")
    rerank_score: float | None = Field(default=None, description="Reranker score (the order)")
    chunk_id: str = Field(description="Chunk id")
    page: int | None = Field(default=None, description="Page number, for paged documents")
    chars: int = Field(description="Characters of chunk text included in the answer")
    text_range: tuple[int, int] | None = Field(default=None, description="Part [start, end) of an over-budget text")
    merged_into: int | None = Field(default=None, description="Rank whose text holds this context")
    changed: bool | None = Field(default=None, description="The source changed since indexing (docs mode)")


class SearchDocsOutput(Strict):
    """Structured part of a ``search_docs`` answer."""

    run_id: str = Field(description="Run the results come from")
    indexed_at: str | None = Field(default=None, description="When that run's index phase completed")
    query: str = Field(description="The query")
    mode: SearchMode = Field(description="Search mode used")
    results: list[DocHit] = Field(description="Results, best first")
    returned_chars: int = Field(description="Characters of chunk text in the answer")
    tokens: int = Field(description="Tokens returned")
    next_cursor: str | None = Field(default=None, description="Pass as cursor for more")
    warnings: list[str] = Field(default_factory=list, description="E.g. reranking skipped")


class GetPageInput(Strict):
    """Arguments of ``get_page``."""

    path: str = Field(min_length=1, max_length=2048, description="Page path as list_pages / search_docs give it")
    run_id: RunRef | None = Field(default=None, description=RUN_ID_DESCRIPTION)
    max_tokens: int = Field(default=PAGE_TOKENS, ge=200, le=100_000, description=TOKENS_DESCRIPTION)
    cursor: str | None = Field(default=None, max_length=1024, description=CURSOR_DESCRIPTION)


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
    tokens: int = Field(description="Tokens returned")
    next_cursor: str | None = Field(default=None, description="Pass as cursor for more")


class GetSectionInput(Strict):
    """Arguments of ``get_section``."""

    path: str = Field(min_length=1, max_length=2048, description="Page path")
    heading: str = Field(
        min_length=1, max_length=1024, description="Heading text, or a breadcrumb like 'Guide > Config > Theme'"
    )
    run_id: RunRef | None = Field(default=None, description=RUN_ID_DESCRIPTION)
    max_tokens: int = Field(default=PAGE_TOKENS, ge=200, le=100_000, description=TOKENS_DESCRIPTION)
    cursor: str | None = Field(default=None, max_length=1024, description=CURSOR_DESCRIPTION)


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
    offset: int = Field(description="First character returned")
    returned_chars: int = Field(description="Characters returned")
    tokens: int = Field(description="Tokens returned")
    next_cursor: str | None = Field(default=None, description="Pass as cursor for more")
    other_matches: list[str] = Field(default_factory=list, description="Breadcrumbs of other sections that matched")


class CheckFreshnessInput(Strict):
    """Arguments of ``check_freshness``."""

    run_id: RunRef | None = Field(default=None, description=RUN_ID_DESCRIPTION)
    paths: list[str] | None = Field(default=None, max_length=200, description="Only these page paths")
    sample: float | None = Field(default=None, gt=0, le=1, description="Share of the sources to check")
    max_seconds: float = Field(default=20, gt=0, le=60, description="Time limit")


class ListPagesInput(Strict):
    """Arguments of ``list_pages``."""

    run_id: RunRef | None = Field(default=None, description=RUN_ID_DESCRIPTION)
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
