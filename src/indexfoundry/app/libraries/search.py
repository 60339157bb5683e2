"""Searching many libraries at once: the one merge, and its pages within a token budget.

A search names a library (at the version ``version`` picks) or none (every library, each at the
version ``version`` picks, default the latest). Each library's run answers in the mode asked
when it offers it, else in its default mode; the results of all of them are merged by score
(ties: the library label, then each library's own order), cut to ``top_k`` and labelled with
their library and version, and their page path relative to the library's folder or source root
(the same page has the same path in every version). The HTTP API returns that whole; the MCP server pages it within
``max_tokens`` (``LibrarySearch.page``): whole results as fit, a result larger than the budget
in parts (``text_range``), and a ``next_cursor`` bound to the request and to the runs searched.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from indexfoundry.app.libraries.registry import LibraryRegistry
from indexfoundry.models.retrieval import SearchFilter, SearchMode, SearchRequest, SearchResult
from indexfoundry.models.serve import LibrarySearched, LibrarySearchHit, LibrarySearchView
from indexfoundry.retrieval.budget import (
    CharCounter,
    TokenCounter,
    cursor_index,
    decode_cursor,
    encode_cursor,
    page_items,
    request_key,
)

_KIND = "library-search"


@dataclass(frozen=True)
class LibrarySearchPage:
    """One page of a ``LibrarySearch`` within a token budget."""

    hits: list[LibrarySearchHit]
    first_rank: int  # 1-based rank of the page's first hit in the whole answer
    next_cursor: str | None


@dataclass(frozen=True)
class LibrarySearch:
    """The merged, labelled answer of a search over one library or all of them."""

    query: str
    searched: list[LibrarySearched]
    hits: list[LibrarySearchHit]  # best first, at most top_k
    warnings: list[str]  # each run's warnings, prefixed with its library label
    counter: TokenCounter  # one library: its run's tokenizer; several: chars/4 for all
    key: str  # hash of the request a cursor continues
    runs: str  # hash of the runs searched (a cursor is bound to them)

    def view(self) -> LibrarySearchView:
        """The whole answer (``POST /libraries/search``)."""
        return LibrarySearchView(query=self.query, searched=self.searched, results=self.hits)

    def page(self, budget: int, cursor: str | None, cost: Callable[[LibrarySearchHit], int]) -> LibrarySearchPage:
        """The hits from ``cursor`` (the start without one) that fit in ``budget`` tokens, ``cost``
        giving a hit's tokens as the caller renders it. A cursor of another request or of other
        runs is CONFIG_INVALID."""
        at = decode_cursor(cursor, _KIND, self.runs, self.key) if cursor else (0, 0)
        hits, _, next_at = page_items(self.hits, at, budget, cost, _text_of, _part_of)
        return LibrarySearchPage(
            hits=hits,
            first_rank=cursor_index(cursor) + 1 if cursor else 1,
            next_cursor=None if next_at is None else encode_cursor(_KIND, self.runs, self.key, *next_at),
        )


def search_libraries(
    registry: LibraryRegistry,
    runs: Any,
    query: str,
    *,
    top_k: int,
    library: str | None = None,
    version: str | None = None,
    mode: SearchMode | None = None,
    filters: Sequence[SearchFilter] = (),
    admit: Callable[[Any], None] | None = None,
) -> LibrarySearch:
    """Search ``library`` (or every library) through ``runs`` (anything with ``using(run_id)``, as
    ``RunPool``); ``admit(run)`` may refuse a run before it is searched."""
    request = SearchRequest(query=query, top_k=top_k, mode=mode or "hybrid", filters=list(filters))
    chosen = [registry.resolve(library, version)] if library is not None else registry.latest_each(version)
    searched: list[LibrarySearched] = []
    found: list[tuple[float, str, int, LibrarySearchHit]] = []
    warnings: list[str] = []
    counter: TokenCounter = CharCounter()
    for lib in chosen:
        with runs.using(lib.run_id()) as run:
            if admit is not None:
                admit(run)
            config = run.profile.retrieval_config
            asked = request.mode if request.mode in config.search_modes else config.default_mode
            response = run.search_request(request.model_copy(update={"mode": asked}))
            if len(chosen) == 1:
                counter = run.token_counter
            paths = [run.pages.relative(_stored_path(result)) for result in response.results]
        searched.append(
            LibrarySearched(
                library=lib.name, version=lib.version, run_id=response.run_id, indexed_at=response.indexed_at
            )
        )
        warnings.extend(f"{lib.label}: {w}" for w in response.warnings)
        for order, (result, path) in enumerate(zip(response.results, paths, strict=True)):
            hit = LibrarySearchHit(library=lib.name, version=lib.version, path=path, result=result)
            found.append((-result.score, lib.label, order, hit))
    found.sort(key=lambda item: item[:3])
    key = request_key(_KIND, query, library, version, top_k, mode, [f.model_dump(mode="json") for f in request.filters])
    return LibrarySearch(
        query=query,
        searched=searched,
        hits=[hit for *_, hit in found[:top_k]],
        warnings=warnings,
        counter=counter,
        key=key,
        runs=request_key(*(s.run_id for s in searched)),
    )


def _stored_path(result: SearchResult) -> str:
    """The page path of a result as its run stores it (``uri``, or ``uri#record`` for a record)."""
    return f"{result.source.uri}#{result.source.record_id}" if result.source.record_id else result.source.uri


def _text_of(hit: LibrarySearchHit) -> str:
    return hit.result.text


def _part_of(hit: LibrarySearchHit, start: int, end: int) -> LibrarySearchHit:
    """``hit`` with only ``text[start:end]`` of its result, saying which part it is (``text_range``)."""
    part = hit.result.model_copy(update={"text": hit.result.text[start:end], "text_range": (start, end)})
    return hit.model_copy(update={"result": part})
