"""Prometheus metrics of the MCP server over Streamable HTTP: ``GET /metrics`` beside ``/mcp``.

The same figures as the HTTP API's, for tools: calls by tool and outcome (``ok`` or the error
code), the calls refused by a rate limit, a latency histogram per tool, HTTP requests by
status, and the served run's figures (``RunFigures``: the run an agent's call reads when it
names none). With a bearer token the scrape needs it too.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from prometheus_client import CONTENT_TYPE_PLAIN_0_0_4, CollectorRegistry, Counter, Histogram, generate_latest
from starlette.requests import Request
from starlette.responses import Response

from indexfoundry.errors import IndexFoundryError
from indexfoundry.surfaces.http.metrics import SEARCH_BUCKETS, MetricsMiddleware, RunFigures
from indexfoundry.surfaces.mcp.retrieval import FixedRuns, RunSource
from indexfoundry.surfaces.mcp.security import tokens_equal

METRICS_PATH = "/metrics"


class ToolMetrics:
    """The MCP server's registry and what its tool runner and transport record."""

    def __init__(self, runs_dir: Path, served: Callable[[], str | None]) -> None:
        self.registry = CollectorRegistry()
        self.calls = Counter(
            "indexfoundry_mcp_tool_calls",
            "Tool calls answered, by tool and outcome (ok, or the error code)",
            ["tool", "outcome"],
            registry=self.registry,
        )
        self.rate_limited = Counter(
            "indexfoundry_mcp_rate_limited_calls",
            "Tool calls refused by a rate limit (RATE_LIMITED), by tool",
            ["tool"],
            registry=self.registry,
        )
        self.seconds = Histogram(
            "indexfoundry_mcp_tool_duration_seconds",
            "Time to answer a tool call, by tool",
            ["tool"],
            buckets=SEARCH_BUCKETS,
            registry=self.registry,
        )
        self.requests = Counter(
            "indexfoundry_mcp_http_requests",
            "HTTP requests answered by the MCP server, by route and status",
            ["route", "method", "status"],
            registry=self.registry,
        )
        self.registry.register(RunFigures(runs_dir, served))

    def observe(self, tool: str, outcome: str, seconds: float) -> None:
        """One answered call of ``tool``: ``ok`` or its error code, and how long it took."""
        self.calls.labels(tool=tool, outcome=outcome).inc()
        self.seconds.labels(tool=tool).observe(seconds)
        if outcome == "RATE_LIMITED":
            self.rate_limited.labels(tool=tool).inc()

    def timer(self) -> Callable[[str, str], None]:
        """Start timing a call; the returned function records it with its tool and outcome."""
        started = time.perf_counter()
        return lambda tool, outcome: self.observe(tool, outcome, time.perf_counter() - started)


def served_run(source: RunSource) -> Callable[[], str | None]:
    """The run a call naming none reads, or None while there is none. A scrape never builds:
    docs mode reports the run it serves now (its ``run_id``), not a fresh one."""

    def served() -> str | None:
        if not isinstance(source, FixedRuns):
            current = getattr(source, "run_id", None)
            return current if isinstance(current, str) else None
        try:
            return source.default_run()
        except IndexFoundryError:
            return None

    return served


def add_metrics(app: Any, metrics: ToolMetrics, token: str | None) -> Any:
    """``app`` (the SDK's Starlette app) with ``GET /metrics`` and request counting."""

    async def scrape(request: Request) -> Response:
        if token is not None:
            scheme, _, given = request.headers.get("authorization", "").partition(" ")
            if scheme.lower() != "bearer" or not tokens_equal(given.strip(), token):
                return Response("a valid bearer token is required\n", status_code=401)
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_PLAIN_0_0_4)

    app.add_route(METRICS_PATH, scrape, methods=["GET"])
    app.add_middleware(MetricsMiddleware, requests=metrics.requests)
    return app
