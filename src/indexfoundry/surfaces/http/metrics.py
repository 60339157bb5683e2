"""Prometheus metrics of the HTTP server: ``GET /metrics`` in the text exposition format.

Requests by route (the route's template, so ids never become labels), method and status; the
requests refused by the rate limit; a latency histogram per search mode; and, read when the
scraper asks, which run is served, its documents, chunks and vectors, and how old the served
run and the newest completed run of the runs folder are (``RunFigures``, shared with the MCP
server). Each app has its own registry, so two servers in one process never mix their counts.
"""

# No ``from __future__ import annotations`` here: FastAPI reads the route signatures at runtime.

import contextlib
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request, Response
from prometheus_client import CONTENT_TYPE_PLAIN_0_0_4, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from indexfoundry import api
from indexfoundry.errors import IndexFoundryError
from indexfoundry.surfaces.http.auth import auth_error
from indexfoundry.surfaces.http.errors import HttpProblem
from indexfoundry.surfaces.http.guard import Guard, RequestKey
from indexfoundry.surfaces.http.holder import RunHolder

SEARCH_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


def iso_seconds(value: str | None) -> float | None:
    """An ISO 8601 time as Unix seconds (None when absent or unreadable)."""
    if not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


class RunFigures(Collector):
    """The served run's figures and the age of the newest completed run, read at scrape time.

    ``served`` names the run served now (None while none is). A run's counts never change once
    it completed, so they are read from its manifest once per run id."""

    def __init__(self, runs_dir: Path, served: Callable[[], str | None], prefix: str = "indexfoundry") -> None:
        self.runs_dir = runs_dir
        self.served = served
        self.prefix = prefix
        self._status: dict[str, Any] = {}

    def _run_status(self, run_id: str) -> Any:
        if run_id not in self._status:
            self._status = {run_id: api.status(run_id, runs_dir=self.runs_dir)}
        return self._status[run_id]

    def _latest_completed_at(self) -> float | None:
        for item in api.runs(runs_dir=self.runs_dir, limit=100):
            if item.status in ("completed", "partial"):
                return iso_seconds(item.completed_at)
        return None

    def collect(self) -> Iterable[Metric]:
        p = self.prefix
        info = GaugeMetricFamily(f"{p}_served_run_info", "The run being served (value 1)", labels=["run_id"])
        counts = {
            what: GaugeMetricFamily(f"{p}_served_{what}", f"{what.capitalize()} in the served run")
            for what in ("documents", "chunks", "vectors")
        }
        served_age = GaugeMetricFamily(f"{p}_served_run_age_seconds", "Seconds since the served run completed")
        latest_age = GaugeMetricFamily(
            f"{p}_latest_run_age_seconds", "Seconds since the newest completed run of the runs folder completed"
        )
        now = time.time()
        try:
            run_id = self.served()
            if run_id is not None:
                status = self._run_status(run_id)
                info.add_metric([run_id], 1)
                counts["documents"].add_metric([], status.totals.documents_extracted)
                counts["chunks"].add_metric([], status.totals.chunks_created)
                counts["vectors"].add_metric([], status.totals.vectors_indexed)
                completed = iso_seconds(status.completed_at)
                if completed is not None:
                    served_age.add_metric([], max(0.0, now - completed))
            latest = self._latest_completed_at()
            if latest is not None:
                latest_age.add_metric([], max(0.0, now - latest))
        except (IndexFoundryError, OSError):  # a scrape reports what it can; a missing run is no figure
            pass
        yield from (info, *counts.values(), served_age, latest_age)


class HttpMetrics:
    """The HTTP server's registry and the metrics its middleware and routes record."""

    def __init__(self, runs_dir: Path, served: Callable[[], str | None]) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "indexfoundry_http_requests",
            "HTTP requests answered, by route template, method and status",
            ["route", "method", "status"],
            registry=self.registry,
        )
        self.rate_limited = Counter(
            "indexfoundry_http_rate_limited_requests",
            "Requests refused by the rate limit (429), by route template",
            ["route"],
            registry=self.registry,
        )
        self.search_seconds = Histogram(
            "indexfoundry_search_duration_seconds",
            "Time to answer a search, by search mode",
            ["mode"],
            buckets=SEARCH_BUCKETS,
            registry=self.registry,
        )
        self.registry.register(RunFigures(runs_dir, served))

    @contextlib.contextmanager
    def timed_search(self, mode: str) -> Iterator[None]:
        """Time one search in ``mode`` (recorded whether it answered or failed)."""
        started = time.perf_counter()
        try:
            yield
        finally:
            self.search_seconds.labels(mode=mode).observe(time.perf_counter() - started)

    def exposition(self) -> tuple[bytes, str]:
        """The registry in the text exposition format, and its content type."""
        return generate_latest(self.registry), CONTENT_TYPE_PLAIN_0_0_4


def route_label(scope: Scope) -> str:
    """The matched route's template (``/documents/{doc_id}``), or ``unmatched``."""
    route = scope.get("route")
    path = getattr(route, "path", None)
    if isinstance(path, str):
        return path
    return "/static" if str(scope.get("path", "")).startswith("/static/") else "unmatched"


class MetricsMiddleware:
    """Pure ASGI middleware counting each answered request by route template, method and status."""

    def __init__(self, app: ASGIApp, requests: Counter, rate_limited: Counter | None = None) -> None:
        self.app = app
        self.requests = requests
        self.rate_limited = rate_limited

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = 500

        async def send_wrapper(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            route = route_label(scope)
            self.requests.labels(route=route, method=str(scope.get("method", "")), status=str(status)).inc()
            if status == 429 and self.rate_limited is not None:
                self.rate_limited.labels(route=route).inc()


def metrics_router(metrics: HttpMetrics) -> APIRouter:
    """``GET /metrics``: the exposition, behind the same key check as the data endpoints (a
    scrape is never rate limited, so a busy server stays observable)."""
    router = APIRouter()

    @router.get("/metrics", include_in_schema=False)
    def scrape(request: Request, key: RequestKey) -> Response:
        guard: Guard = request.app.state.guard
        holder: RunHolder = request.app.state.holder
        principal = guard.keys.authenticate(key) if key else None
        if guard.auth_required(holder.current) and principal is None:
            raise HttpProblem(401, auth_error(), {"WWW-Authenticate": "Bearer"})
        body, content_type = metrics.exposition()
        return Response(body, media_type=content_type)

    return router
