"""The ``/libraries`` endpoints of a server of many libraries and versions (the MCP library
tools' HTTP twin): list them, search one or all (``POST /libraries/search``), and read a library
version's pages, a page or a section. The routes parse, admit the client to each run and render
what the app's library reader answers (``api.library_reader``): the search is merged, labelled and
cut in ``app/libraries/search.py``, never here.
"""

# No ``from __future__ import annotations`` here: FastAPI reads the route signatures at runtime and
# they refer to the per-app search body model, local to ``library_router``.
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import APIRouter, Depends, Path, Query, Request
from pydantic import BaseModel, Field, create_model

from indexfoundry import api
from indexfoundry.models.retrieval import SearchFilter, SearchMode, SearchRequest
from indexfoundry.models.serve import (
    LibrariesView,
    LibraryPagesView,
    LibraryPageView,
    LibrarySearchView,
    LibrarySectionView,
)
from indexfoundry.surfaces.http.guard import Guard, RequestKey
from indexfoundry.surfaces.http.schemas import ERROR_RESPONSES, NOT_FOUND, JsonInt
from indexfoundry.surfaces.http.settings import HttpSettings

if TYPE_CHECKING:
    from indexfoundry.api import LibraryReader

_LibraryName = Annotated[str, Path(min_length=1, max_length=128, description="Library name (GET /libraries)")]
_LibraryVersion = Annotated[
    str | None,
    Query(max_length=64, description="Exact version, 'latest' (default), '18.x' or a range like '>=18 <19'"),
]
_PagePath = Annotated[str, Query(min_length=1, max_length=2048, description="Page path (from search or pages)")]


def admission(request: Request, key: RequestKey) -> Callable[[api.Run], None]:
    """The dependency that gives a library route its ``admit(run)``: the request's client (by its
    key) admitted to a run, or refused, as on the one-run routes (the app's ``Guard`` decides)."""
    guard: Guard = request.app.state.guard
    principal = guard.client(request, key)
    return lambda run: guard.admit(run, principal)


Admit = Annotated[Callable[[api.Run], None], Depends(admission)]


def _library_search_body(settings: HttpSettings) -> type[BaseModel]:
    """The body of ``POST /libraries/search``: the search request's query, top_k and filters within
    this server's limits, a library and a version (or range), and a mode."""
    fields: dict[str, Any] = {}
    for name in ("query", "top_k", "filters"):
        info = SearchRequest.model_fields[name]
        fields[name] = (info.annotation, info)
    fields["query"] = (str, Field(min_length=1, max_length=settings.max_query_chars, description="What to look for"))
    fields["top_k"] = (JsonInt, Field(default=10, ge=1, le=settings.max_top_k, description="Number of results"))
    fields["library"] = (str | None, Field(default=None, max_length=128, description="Library to search; default: all"))
    fields["version"] = (
        str | None,
        Field(default=None, max_length=64, description="Exact version, 'latest' (default), '18.x' or a range"),
    )
    fields["mode"] = (
        SearchMode | None,
        Field(default=None, description="semantic, keyword or hybrid (default: each run's default mode)"),
    )
    return create_model(
        "LibrarySearchBody",
        __config__=SearchRequest.model_config,
        __doc__="Search one library at a version (or range), or every library at its latest.",
        **fields,
    )


def library_router(settings: HttpSettings, reader: "LibraryReader") -> APIRouter:
    """``/libraries`` endpoints over a library registry (the MCP library tools' HTTP twin)."""
    base = settings.base_path
    router = APIRouter()
    responses = {**ERROR_RESPONSES, **NOT_FOUND}
    LibrarySearchBody = _library_search_body(settings)

    @router.get(
        f"{base}/libraries",
        response_model=LibrariesView,
        response_model_exclude_none=True,
        responses=ERROR_RESPONSES,
        operation_id="list_libraries",
        tags=["libraries"],
    )
    def list_libraries(
        admit: Admit,
        name: Annotated[str | None, Query(max_length=128, description="Only this library")] = None,
    ) -> LibrariesView:
        """Every library version served: its run, when it was indexed and checked, its page count."""
        return reader.list(name)

    @router.post(
        f"{base}/libraries/search",
        response_model=LibrarySearchView,
        response_model_exclude_none=True,
        responses=responses,
        operation_id="search_libraries",
        tags=["libraries"],
    )
    def search_libraries(body: LibrarySearchBody, admit: Admit) -> LibrarySearchView:  # type: ignore[valid-type]
        """Search one library (at the version or range given) or all of them; each result names its
        library and version, results merged by score."""
        data = body.model_dump(mode="json")  # type: ignore[attr-defined]
        return reader.search(
            data["query"],
            top_k=data["top_k"],
            library=data["library"],
            version=data["version"],
            mode=data["mode"],
            filters=[SearchFilter.model_validate(f) for f in data["filters"]],
            admit=admit,
        ).view()

    _add_page_routes(router, base, reader)
    return router


def _add_page_routes(router: APIRouter, base: str, reader: "LibraryReader") -> None:
    """``/libraries/{name}/pages``, ``/page`` and ``/section``: reading one library version."""
    responses = {**ERROR_RESPONSES, **NOT_FOUND}

    @router.get(
        f"{base}/libraries/{{name}}/pages",
        response_model=LibraryPagesView,
        response_model_exclude_none=True,
        responses=responses,
        operation_id="list_library_pages",
        tags=["libraries"],
    )
    def library_pages(
        name: _LibraryName,
        admit: Admit,
        version: _LibraryVersion = None,
        prefix: Annotated[str | None, Query(max_length=2048, description="Only paths starting with this")] = None,
        offset: Annotated[int, Query(ge=0, description="Pages to skip")] = 0,
        limit: Annotated[int, Query(ge=1, le=2000, description="Most pages listed")] = 200,
    ) -> LibraryPagesView:
        """The pages of a library version, sorted by path."""
        return reader.pages(name, version, prefix, offset, limit, admit=admit)

    @router.get(
        f"{base}/libraries/{{name}}/page",
        response_model=LibraryPageView,
        response_model_exclude_none=True,
        responses=responses,
        operation_id="get_library_page",
        tags=["libraries"],
    )
    def library_page(
        name: _LibraryName, path: _PagePath, admit: Admit, version: _LibraryVersion = None
    ) -> LibraryPageView:
        """A whole page of a library version."""
        return reader.page(name, version, path, admit=admit)

    @router.get(
        f"{base}/libraries/{{name}}/section",
        response_model=LibrarySectionView,
        response_model_exclude_none=True,
        responses=responses,
        operation_id="get_library_section",
        tags=["libraries"],
    )
    def library_section(
        name: _LibraryName,
        path: _PagePath,
        heading: Annotated[str, Query(min_length=1, max_length=1024, description="Heading or breadcrumb 'A > B'")],
        admit: Admit,
        version: _LibraryVersion = None,
    ) -> LibrarySectionView:
        """One section of a page of a library version, by heading or breadcrumb."""
        return reader.section(name, version, path, heading, admit=admit)
