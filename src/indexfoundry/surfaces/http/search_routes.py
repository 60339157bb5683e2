"""``POST /search`` (the mode in the body, default the run's) and ``POST /search/{mode}``: search
the served run with the body the server's limits shaped, best result first."""

# No ``from __future__ import annotations`` here: FastAPI reads the route signatures at runtime and
# they refer to the per-app search body model, local to ``search_router``.
from fastapi import APIRouter, Request
from pydantic import BaseModel, Field, create_model

from indexfoundry.models.retrieval import SearchMode, SearchRequest, SearchResponse
from indexfoundry.surfaces.http.guard import Served
from indexfoundry.surfaces.http.schemas import ERROR_RESPONSES, search_body_model
from indexfoundry.surfaces.http.settings import HttpSettings

_MODES: tuple[SearchMode, ...] = ("semantic", "hybrid", "keyword")


def search_router(settings: HttpSettings, wanted: set[str]) -> APIRouter:
    """The search endpoints among ``wanted``."""
    router = APIRouter()
    body = search_body_model(settings)
    if "search" in wanted:
        _add_search_any(router, settings, body)
    for mode in _MODES:
        if f"search_{mode}" in wanted:
            _add_search(router, settings, body, mode)
    return router


def _add_search(router: APIRouter, settings: HttpSettings, Body: type[BaseModel], mode: SearchMode) -> None:
    def search(body: Body, run: Served, request: Request) -> SearchResponse:  # type: ignore[valid-type]
        data = body.model_dump(mode="json")  # type: ignore[attr-defined]
        if "top_k" not in body.model_fields_set:  # type: ignore[attr-defined]
            data["top_k"] = min(run.profile.retrieval_config.default_top_k, settings.max_top_k)
        with request.app.state.metrics.timed_search(mode):
            return run.search_request(SearchRequest.model_validate({**data, "mode": mode}))

    search.__doc__ = f"{mode.capitalize()} search over the served run; best result first."
    router.post(
        f"{settings.base_path}/search/{mode}",
        response_model=SearchResponse,
        response_model_exclude_none=True,
        responses=ERROR_RESPONSES,
        operation_id=f"search_{mode}",
        tags=["search"],
    )(search)


def _add_search_any(router: APIRouter, settings: HttpSettings, Body: type[BaseModel]) -> None:
    ModeBody = create_model(  # the same body plus an optional mode: the one search endpoint to start with
        "SearchAnyBody",
        __base__=Body,
        mode=(
            SearchMode | None,
            Field(
                default=None,
                description=(
                    "hybrid (default when the run offers it): semantic and keyword fused; "
                    "semantic: by meaning; keyword: BM25 term match"
                ),
            ),
        ),
    )

    def search_any(body: ModeBody, run: Served, request: Request) -> SearchResponse:
        """Search the served run in ``mode`` (default: hybrid); best result first."""
        data = body.model_dump(mode="json")
        if "top_k" not in body.model_fields_set:
            data["top_k"] = min(run.profile.retrieval_config.default_top_k, settings.max_top_k)
        data["mode"] = data.get("mode") or run.profile.retrieval_config.default_mode
        with request.app.state.metrics.timed_search(data["mode"]):
            return run.search_request(SearchRequest.model_validate(data))

    router.post(
        f"{settings.base_path}/search",
        response_model=SearchResponse,
        response_model_exclude_none=True,
        responses=ERROR_RESPONSES,
        operation_id="search",
        tags=["search"],
    )(search_any)
