"""Running the MCP server: stdio (default) or Streamable HTTP.

stdio: only protocol messages go to stdout. The SDK's stdio transport serves the wire from a
private duplicate of fd 1 and points fd 1 at stderr, so a stray print or a library's
progress bar lands on stderr; the CLI sets logging to stderr and switches progress bars off.

Streamable HTTP: ``/mcp`` on the given host and port, with DNS-rebinding protection (Host and
Origin headers checked against the loopback names and any allowed extras) and optional
bearer-token auth; Prometheus metrics of its tools at ``/metrics`` (``metrics.py``).
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Sequence
from typing import Any

from mcp.server.transport_security import TransportSecuritySettings

from indexfoundry.surfaces.mcp.security import default_allowed_hosts, default_allowed_origins
from indexfoundry.surfaces.mcp.server import ServerOptions, create_server

MCP_PATH = "/mcp"


def quiet_libraries() -> None:
    """Keep libraries off stdout and quiet: logs to stderr, no progress bars, no telemetry."""
    os.environ.setdefault("TQDM_DISABLE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(name)s: %(message)s")
    logging.getLogger("indexfoundry").setLevel(logging.INFO)


def serve_stdio(options: ServerOptions) -> None:
    """Serve over stdin/stdout until the client closes the connection."""
    quiet_libraries()
    server, _ = create_server(options)
    server.run("stdio")


def http_app(
    options: ServerOptions,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    token: str | None = None,
    allowed_origins: Sequence[str] = (),
    allowed_hosts: Sequence[str] = (),
) -> Any:
    """The Starlette app serving MCP over Streamable HTTP at ``/mcp``, and its metrics at ``/metrics``."""
    # Imported here: the stdio server needs neither the metrics nor the HTTP surface's modules.
    from indexfoundry.surfaces.mcp.metrics import ToolMetrics, add_metrics, served_run
    from indexfoundry.surfaces.mcp.retrieval import RunSource

    metrics: ToolMetrics | None = None

    def make_metrics(source: RunSource) -> ToolMetrics:
        nonlocal metrics
        metrics = ToolMetrics(source.runs_dir, served_run(source))
        return metrics

    server, _ = create_server(
        options, bearer_token=token, public_url=f"http://{_url_host(host)}:{port}", metrics=make_metrics
    )
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=default_allowed_hosts(_url_host(host), port, allowed_hosts),
        allowed_origins=default_allowed_origins(_url_host(host), port, allowed_origins),
    )
    app = server.streamable_http_app(streamable_http_path=MCP_PATH, transport_security=security, host=host)
    assert metrics is not None  # made by create_server
    return add_metrics(app, metrics, token)


def serve_http(
    options: ServerOptions,
    *,
    host: str,
    port: int,
    token: str | None = None,
    allowed_origins: Sequence[str] = (),
    allowed_hosts: Sequence[str] = (),
) -> None:
    """Serve Streamable HTTP with uvicorn until interrupted."""
    import uvicorn

    quiet_libraries()
    app = http_app(
        options, host=host, port=port, token=token, allowed_origins=allowed_origins, allowed_hosts=allowed_hosts
    )
    print(
        f"indexfoundry: MCP over Streamable HTTP at http://{_url_host(host)}:{port}{MCP_PATH}"
        + (" (bearer token required)" if token else ""),
        file=sys.stderr,
        flush=True,
    )
    # No proxy headers: uvicorn would otherwise believe X-Forwarded-For from 127.0.0.1.
    uvicorn.run(app, host=host, port=port, log_level="warning", proxy_headers=False)


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host
