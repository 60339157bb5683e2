"""The runs dashboard: ``GET /runs`` (every run per pipeline, two charts) and ``GET /runs/{run_id}``
(one run and its diff against the run before it) — static pages under the search page's strict
Content-Security-Policy, holding no data — and the two read-only endpoints they call,
``GET {base}/dashboard/runs`` and ``GET {base}/dashboard/runs/{run_id}``, behind the same key
check and rate limit as the API. The dashboard shows every run of the runs folder, so a key
limited to some namespaces may not read it."""

# No ``from __future__ import annotations`` here: FastAPI reads the route signatures at runtime.
import html
from typing import Annotated

from fastapi import APIRouter, Request
from fastapi import Path as PathParam
from fastapi.responses import HTMLResponse

from indexfoundry import api
from indexfoundry.errors import IndexFoundryError
from indexfoundry.models.history import RunDetail, RunHistory
from indexfoundry.surfaces.http.errors import HttpProblem
from indexfoundry.surfaces.http.guard import Guard, RequestKey
from indexfoundry.surfaces.http.holder import RunHolder
from indexfoundry.surfaces.http.page import PAGE_CSP, static_text
from indexfoundry.surfaces.http.settings import HttpSettings

RUN_ID = r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"


def _admit(request: Request, key: str | None) -> None:
    """Rate limit and authenticate like the data endpoints; a namespace-limited key is refused."""
    guard: Guard = request.app.state.guard
    holder: RunHolder = request.app.state.holder
    principal = guard.client(request, key, holder.current)
    if principal is not None and principal.namespaces is not None:
        error = IndexFoundryError(
            "the runs dashboard shows every run of the runs folder; this key may read only some namespaces",
            code="AUTH_REQUIRED",
            suggestion="Use a key that is not limited to namespaces",
        )
        raise HttpProblem(403, error)


def runs_router(settings: HttpSettings) -> APIRouter:
    """The dashboard's pages and its two endpoints."""
    base = settings.base_path
    page = static_text("runs.html").replace("{{BASE_PATH}}", html.escape(base, quote=True))
    page = page.replace("{{TITLE}}", html.escape(settings.api_info.title))
    router = APIRouter()

    @router.api_route("/runs", methods=["GET", "HEAD"], include_in_schema=False)
    def runs_page() -> HTMLResponse:
        return HTMLResponse(page, headers={"Content-Security-Policy": PAGE_CSP})

    @router.api_route("/runs/{run_id}", methods=["GET", "HEAD"], include_in_schema=False)
    def run_page(run_id: Annotated[str, PathParam(pattern=RUN_ID)]) -> HTMLResponse:
        return HTMLResponse(page, headers={"Content-Security-Policy": PAGE_CSP})

    @router.get(f"{base}/dashboard/runs", response_model=RunHistory, include_in_schema=False)
    def history(request: Request, key: RequestKey) -> RunHistory:
        """Every pipeline of the runs folder with its runs, oldest first."""
        _admit(request, key)
        return api.run_history(runs_dir=settings.runs_dir)

    @router.get(f"{base}/dashboard/runs/{{run_id}}", response_model=RunDetail, include_in_schema=False)
    def detail(request: Request, key: RequestKey, run_id: Annotated[str, PathParam(pattern=RUN_ID)]) -> RunDetail:
        """One run and its diff against its pipeline's run before it."""
        _admit(request, key)
        return api.run_detail(run_id, runs_dir=settings.runs_dir)

    return router
