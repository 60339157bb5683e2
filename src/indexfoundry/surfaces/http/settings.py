"""Runtime settings of the HTTP API: the run's ``serve`` config plus command-line overrides."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field

from indexfoundry.models.base import Strict
from indexfoundry.models.config import ApiInfo, RateLimitConfig, ServeConfig, ServeEndpoint
from indexfoundry.models.ids import LATEST
from indexfoundry.models.retrieval import AllowedFilter

DEFAULT_PORT = 8080


class HttpSettings(Strict):
    """Everything the app factory needs; built from a run's ``serve`` config (see ``from_config``)."""

    runs_dir: Path = Field(description="Runs folder the served run lives in")
    run_id: str = Field(default=LATEST, description="Run to serve, or 'latest' (follows new completed runs)")
    host: str = Field(default="127.0.0.1", description="Bind address")
    port: int = Field(default=DEFAULT_PORT, ge=0, le=65535, description="Port (0: any free port)")
    api_info: ApiInfo = Field(default_factory=ApiInfo, description="Title, version, base path")
    endpoints: list[ServeEndpoint] = Field(description="Endpoints offered")
    cors_origins: list[str] = Field(default_factory=list, description="CORS origins")
    rate_limit: RateLimitConfig = Field(default_factory=RateLimitConfig, description="Per-client rate limit")
    log_requests: bool = Field(default=True, description="Write logs/requests.ndjson")
    trusted_proxies: list[str] = Field(
        default_factory=list, description="Proxies whose X-Forwarded-* headers are believed (empty: none)"
    )
    require_auth: bool = Field(
        default=False,
        description="Require a key (also required whenever the served run's profile says so); shapes the spec",
    )
    api_keys_env: str = Field(default="INDEXFOUNDRY_API_KEYS", description="Env var with comma-separated keys")
    api_key_file: Path | None = Field(default=None, description="JSON file of API keys")
    max_request_bytes: int = Field(default=16384, ge=1024, description="Largest request body")
    max_query_chars: int = Field(default=2048, ge=1, le=4096, description="Longest query")
    max_top_k: int = Field(default=100, ge=1, le=100, description="Largest top_k")
    allowed_filters: list[AllowedFilter] | None = Field(
        default=None,
        description="Filters the search body accepts (the retrieval profile's); None: any field, checked per run",
    )
    freshness_reuse_s: float = Field(
        default=300, ge=0, le=86400, description="/freshness reuses a source's check for this long (0: never)"
    )
    reload_interval_s: float = Field(
        default=2.0, ge=0.05, le=3600, description="How often 'latest' checks for a newer completed run"
    )

    @classmethod
    def from_config(cls, serve: ServeConfig, runs_dir: Path, run_id: str, **overrides: Any) -> HttpSettings:
        """Settings from a run's ``serve`` section; ``overrides`` (not None) win."""
        data: dict[str, Any] = {
            "runs_dir": runs_dir,
            "run_id": run_id,
            "host": serve.host,
            "port": serve.port or DEFAULT_PORT,
            "api_info": serve.api_info,
            "endpoints": list(serve.endpoints),
            "cors_origins": list(serve.cors_origins),
            "rate_limit": serve.rate_limit,
            "log_requests": serve.log_requests,
            "trusted_proxies": list(serve.trusted_proxies),
            "require_auth": serve.require_auth,
            "api_keys_env": serve.api_keys_env,
            "api_key_file": Path(serve.api_key_file) if serve.api_key_file else None,
            "max_request_bytes": serve.max_request_bytes,
            "max_query_chars": serve.max_query_chars,
            "max_top_k": serve.max_top_k,
            "freshness_reuse_s": serve.freshness_reuse_s,
        }
        data.update({key: value for key, value in overrides.items() if value is not None})
        return cls.model_validate(data)

    def proxy_options(self) -> dict[str, Any]:
        """uvicorn's proxy settings: X-Forwarded-For is believed only from ``trusted_proxies``.

        uvicorn's own default trusts it from 127.0.0.1, so any local process (or a proxy that
        passes the header through) could pick its address for the rate limit and the log.
        """
        return {"proxy_headers": bool(self.trusted_proxies), "forwarded_allow_ips": list(self.trusted_proxies)}

    @property
    def base_path(self) -> str:
        return self.api_info.base_path.rstrip("/")
