"""The serve phase's tools: ``indexfoundry_serve_openapi`` and ``indexfoundry_serve_start``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from indexfoundry.app.tools.registry import tool
from indexfoundry.models.config import RateLimitConfig
from indexfoundry.models.serve import ServeOpenapiInput, ServeOpenapiOutput, ServeStartInput, ServeStartOutput


def _runs_dir(context: dict[str, Any]) -> Path:
    from indexfoundry.app.runs import runs_dir_for

    return runs_dir_for(context.get("runs_dir"))


@tool(
    "indexfoundry_serve_openapi",
    ServeOpenapiInput,
    read_only=False,
    destructive=False,
    idempotent=True,
    open_world=False,
)
def serve_openapi(payload: ServeOpenapiInput, **context: Any) -> ServeOpenapiOutput:
    """Write the run's served/openapi.json: the OpenAPI 3.1 spec of the HTTP retrieval API,
    generated from the same app the server runs."""
    from indexfoundry.app import runs as api

    return api.serve_openapi(
        payload.run_id,
        runs_dir=_runs_dir(context),
        api_info=payload.api_info,
        endpoints=payload.endpoints,
        include_schemas=payload.include_schemas,
    )


@tool(
    "indexfoundry_serve_start", ServeStartInput, read_only=False, destructive=False, idempotent=True, open_world=False
)
def serve_start(payload: ServeStartInput, **context: Any) -> ServeStartOutput:
    """Start the HTTP retrieval API for a run (or 'latest') in the background on 127.0.0.1 by default;
    returns once it answers /health. Stop it with 'indexfoundry serve stop'."""
    from indexfoundry.app import runs as api

    rate = payload.rate_limit
    return api.serve_start(
        payload.run_id,
        runs_dir=_runs_dir(context),
        host=payload.host,
        port=payload.port,
        cors_origins=payload.cors_origins,
        rate_limit=RateLimitConfig(requests_per_minute=rate.requests_per_minute, burst=rate.burst) if rate else None,
        log_requests=payload.log_requests,
    )
