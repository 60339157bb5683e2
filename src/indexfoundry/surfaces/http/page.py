"""The web page: ``GET /`` (a static search page with a strict Content-Security-Policy; it holds
no data and calls the API from the browser) and its files under ``/static``."""

# No ``from __future__ import annotations`` here: FastAPI reads the route signatures at runtime.
import html
from importlib import resources

from fastapi import APIRouter, FastAPI
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

from indexfoundry.surfaces.http.settings import HttpSettings

PAGE_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)


def static_text(name: str) -> str:
    return resources.files("indexfoundry.surfaces.http").joinpath("static", name).read_text(encoding="utf-8")


def page_router(settings: HttpSettings, serves_libraries: bool) -> APIRouter:
    """``GET`` and ``HEAD /``: the page, filled in with the base path and title."""
    base = settings.base_path
    page = static_text("index.html").replace("{{BASE_PATH}}", html.escape(base, quote=True))
    page = page.replace("{{TITLE}}", html.escape(settings.api_info.title))
    # With many libraries the page searches /libraries/search (every library, each result labelled).
    page = page.replace("{{LIBRARIES}}", "1" if serves_libraries else "")
    router = APIRouter()

    @router.api_route("/", methods=["GET", "HEAD"], include_in_schema=False)
    def index() -> HTMLResponse:
        return HTMLResponse(page, headers={"Content-Security-Policy": PAGE_CSP})

    return router


def mount_static(app: FastAPI) -> None:
    """Serve the page's script, style and vendored files under ``/static``."""
    app.mount("/static", StaticFiles(packages=[("indexfoundry.surfaces.http", "static")]), name="static")
