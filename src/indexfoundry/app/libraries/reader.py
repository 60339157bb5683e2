"""Listing, searching and reading the libraries of a registry (the HTTP API's use cases)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from indexfoundry.app.libraries.library import Library
from indexfoundry.app.libraries.registry import LibraryRegistry
from indexfoundry.models.retrieval import SearchRequest, SearchResult
from indexfoundry.models.serve import (
    LibrariesView,
    LibraryPageItem,
    LibraryPagesView,
    LibraryPageView,
    LibrarySearched,
    LibrarySearchHit,
    LibrarySearchView,
    LibrarySectionView,
    LibraryVersionView,
)


def iso_time(stamp: float | None) -> str | None:
    """A wall-clock time as ISO 8601 UTC (seconds)."""
    from datetime import UTC, datetime

    if stamp is None:
        return None
    return datetime.fromtimestamp(stamp, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


class LibraryReader:
    """Lists, searches and reads the libraries of a registry through ``Run`` handles (a pool)."""

    def __init__(self, registry: LibraryRegistry, runs: Any) -> None:
        self.registry = registry
        self.runs = runs  # api.RunPool

    def list(self, name: str | None = None) -> LibrariesView:
        out = []
        seen: set[str] = set()
        for lib in self.registry.libraries():
            if name is not None and lib.name != name:
                continue
            with self.runs.using(lib.run_id()) as run:
                out.append(
                    LibraryVersionView(
                        name=lib.name,
                        version=lib.version,
                        latest=lib.name not in seen,
                        run_id=run.id,
                        indexed_at=run.indexed_at,
                        checked_at=iso_time(lib.checked_at) if lib.remote() else None,
                        pages=len(run.pages.documents),
                    )
                )
            seen.add(lib.name)
        return LibrariesView(libraries=out)

    def search(
        self,
        request: SearchRequest,
        library: str | None = None,
        version: str | None = None,
        admit: Callable[[Any], None] | None = None,
    ) -> LibrarySearchView:
        """Search one library (at the version ``version`` picks) or every library; results merged
        by score (ties: library label, then rank) and labelled. ``admit(run)`` may refuse a run."""
        chosen = (
            [self.registry.resolve(library, version)] if library is not None else self.registry.latest_each(version)
        )
        searched: list[LibrarySearched] = []
        found: list[tuple[float, str, int, Library, SearchResult]] = []
        for lib in chosen:
            with self.runs.using(lib.run_id()) as run:
                if admit is not None:
                    admit(run)
                offered = run.profile.retrieval_config.search_modes
                mode = request.mode if request.mode in offered else run.profile.retrieval_config.default_mode
                response = run.search_request(request.model_copy(update={"mode": mode}))
            searched.append(
                LibrarySearched(
                    library=lib.name, version=lib.version, run_id=response.run_id, indexed_at=response.indexed_at
                )
            )
            found.extend((-r.score, lib.label, rank, lib, r) for rank, r in enumerate(response.results))
        found.sort(key=lambda item: item[:3])
        hits = [LibrarySearchHit(library=lib.name, version=lib.version, result=r) for *_, lib, r in found]
        return LibrarySearchView(query=request.query, searched=searched, results=hits[: request.top_k])

    def page(
        self, name: str, version: str | None, path: str, admit: Callable[[Any], None] | None = None
    ) -> LibraryPageView:
        lib = self.registry.resolve(name, version)
        with self.runs.using(lib.run_id()) as run:
            if admit is not None:
                admit(run)
            page = run.page(path)
            return LibraryPageView(
                library=lib.name,
                version=lib.version,
                run_id=run.id,
                path=path,
                title=page.document.title,
                text=page.text,
            )

    def section(
        self, name: str, version: str | None, path: str, heading: str, admit: Callable[[Any], None] | None = None
    ) -> LibrarySectionView:
        lib = self.registry.resolve(name, version)
        with self.runs.using(lib.run_id()) as run:
            if admit is not None:
                admit(run)
            found = run.section(path, heading)
            return LibrarySectionView(
                library=lib.name,
                version=lib.version,
                run_id=run.id,
                path=path,
                breadcrumb=found.breadcrumb,
                text=found.text,
                other_matches=found.other_matches,
            )

    def pages(
        self,
        name: str,
        version: str | None,
        prefix: str | None = None,
        offset: int = 0,
        limit: int = 200,
        admit: Callable[[Any], None] | None = None,
    ) -> LibraryPagesView:
        lib = self.registry.resolve(name, version)
        with self.runs.using(lib.run_id()) as run:
            if admit is not None:
                admit(run)
            documents = run.pages.documents
            keys = [k for k in documents if prefix is None or k.startswith(prefix)]
            items = [LibraryPageItem(path=k, title=documents[k].title) for k in keys[offset : offset + limit]]
            return LibraryPagesView(library=lib.name, version=lib.version, run_id=run.id, total=len(keys), pages=items)
