"""The HTTP surface's side of ``app.serving.HttpSurface``: what the use cases below the
surfaces ask of it (the OpenAPI spec of the app a server runs, a server in the background).

The package offers ``HTTP_SURFACE`` through its entry point ``indexfoundry.surfaces: http``
(``pyproject.toml``); ``app.serving`` loads it when it first needs it, and FastAPI loads only then.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from indexfoundry.models.config import RateLimitConfig, ServeConfig
    from indexfoundry.models.serve import ServeStartOutput


class HttpSurfaceProvider:
    """``app.serving.HttpSurface`` over this package's app and processes."""

    def openapi_spec(
        self, serve: ServeConfig, runs_dir: Path, run_id: str, overrides: dict[str, Any], include_schemas: bool
    ) -> dict[str, Any]:
        from indexfoundry.surfaces.http.app import openapi_spec
        from indexfoundry.surfaces.http.settings import HttpSettings

        settings = HttpSettings.from_config(serve, runs_dir, run_id, **overrides)
        return openapi_spec(settings, include_schemas=include_schemas)

    def start_background(
        self,
        runs_dir: Path,
        run_spec: str,
        *,
        host: str,
        port: int,
        cors_origins: list[str] | None,
        rate_limit: RateLimitConfig | None,
        log_requests: bool | None,
        timeout_s: float,
    ) -> ServeStartOutput:
        from indexfoundry.surfaces.http.processes import start_background

        return start_background(
            runs_dir,
            run_spec,
            host=host,
            port=port,
            cors_origins=cors_origins,
            rate_limit=rate_limit,
            log_requests=log_requests,
            timeout_s=timeout_s,
        )


HTTP_SURFACE = HttpSurfaceProvider()
