"""Listing, searching and reading the libraries of a registry (what the HTTP API and the MCP
server answer about them). Page paths are relative to each library's folder or source root
(``install.md``, whatever the folder of a version is called); the stored form is accepted too."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from indexfoundry.app.libraries.registry import LibraryRegistry
from indexfoundry.app.libraries.search import LibrarySearch, search_libraries
from indexfoundry.models.retrieval import SearchFilter, SearchMode
from indexfoundry.models.serve import (
    LibrariesView,
    LibraryPageItem,
    LibraryPagesView,
    LibraryPageView,
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
        query: str,
        *,
        top_k: int,
        library: str | None = None,
        version: str | None = None,
        mode: SearchMode | None = None,
        filters: Sequence[SearchFilter] = (),
        admit: Callable[[Any], None] | None = None,
    ) -> LibrarySearch:
        """Search one library (at the version ``version`` picks) or every library; results merged
        by score (ties: library label, then rank) and labelled, to return whole (``view``) or in
        pages within a token budget (``page``). ``admit(run)`` may refuse a run."""
        return search_libraries(
            self.registry,
            self.runs,
            query,
            top_k=top_k,
            library=library,
            version=version,
            mode=mode,
            filters=filters,
            admit=admit,
        )

    def page(
        self, name: str, version: str | None, path: str, admit: Callable[[Any], None] | None = None
    ) -> LibraryPageView:
        lib = self.registry.resolve(name, version)
        with self.runs.using(lib.run_id()) as run:
            if admit is not None:
                admit(run)
            page = run.page(run.find_page(path, relative=True))
            return LibraryPageView(
                library=lib.name,
                version=lib.version,
                run_id=run.id,
                path=run.pages.relative(page.path),
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
            stored = run.find_page(path, relative=True)
            found = run.section(stored, heading)
            return LibrarySectionView(
                library=lib.name,
                version=lib.version,
                run_id=run.id,
                path=run.pages.relative(stored),
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
            view = run.pages
            documents = view.documents
            wanted = None if prefix is None else view.root + prefix.lstrip("/")
            keys = [k for k in documents if wanted is None or k.startswith(wanted)]
            chosen = keys[offset : offset + limit]
            items = [LibraryPageItem(path=view.relative(k), title=documents[k].title) for k in chosen]
            return LibraryPagesView(library=lib.name, version=lib.version, run_id=run.id, total=len(keys), pages=items)
