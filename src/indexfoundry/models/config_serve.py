"""The serve section of a pipeline config: the HTTP API a run offers and its limits."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from indexfoundry.models.base import Strict
from indexfoundry.models.retrieval import AllowedFilter, RetrievalConfig

ServeEndpoint = Literal[
    "search",
    "search_semantic",
    "search_hybrid",
    "search_keyword",
    "get_document",
    "get_chunk",
    "health",
    "stats",
    "check_freshness",
]
ALL_SERVE_ENDPOINTS: tuple[ServeEndpoint, ...] = (
    "search",
    "search_semantic",
    "search_hybrid",
    "search_keyword",
    "get_document",
    "get_chunk",
    "health",
    "stats",
    "check_freshness",
)


class ApiInfo(Strict):
    """The ``api_info`` of ``indexfoundry_serve_openapi``: title, version, description, base path."""

    title: str = Field(default="IndexFoundry Search API", min_length=1, max_length=200, description="API title")
    version: str = Field(default="1.0.0", min_length=1, max_length=50, description="API version")
    description: str | None = Field(default=None, max_length=5000, description="API description")
    base_path: str = Field(
        default="/api/v1",
        pattern=r"^(/[A-Za-z0-9._~-]+)*$",
        max_length=200,
        description="Path prefix of every endpoint ('' for none), e.g. '/api/v1'",
    )


class RateLimitConfig(Strict):
    """Per-client token bucket: ``burst`` requests at once, refilled at ``requests_per_minute``."""

    enabled: bool = Field(default=True, description="Limit requests per client (false: no limit)")
    requests_per_minute: int = Field(default=60, ge=1, le=1_000_000, description="Sustained requests per minute")
    burst: int = Field(default=10, ge=1, le=100_000, description="Requests a client may make at once")


class ServeConfig(Strict):
    auto_start: bool = Field(default=False, description="Start the HTTP API after the run")
    host: str = Field(default="127.0.0.1", description="Bind address")
    port: int | None = Field(default=None, ge=1024, le=65535, description="Port")
    api_info: ApiInfo = Field(default_factory=ApiInfo, description="Title, version and base path of the API")
    endpoints: list[ServeEndpoint] = Field(
        default_factory=lambda: list(ALL_SERVE_ENDPOINTS), description="Endpoints the HTTP API offers"
    )
    cors_origins: list[str] = Field(default_factory=list, description="Origins allowed by CORS (empty: none)")
    rate_limit: RateLimitConfig = Field(default_factory=RateLimitConfig, description="Per-client rate limit")
    log_requests: bool = Field(default=True, description="Log each request to the run's logs/requests.ndjson")
    trusted_proxies: list[str] = Field(
        default_factory=list,
        description=(
            "Addresses or networks (CIDR) of reverse proxies whose X-Forwarded-For / X-Forwarded-Proto "
            "headers are believed, for the rate limit and the request log; empty (default): none, the "
            "connecting address is the client"
        ),
    )
    require_auth: bool = Field(default=False, description="Require an API key (written to the retrieval profile)")
    allowed_namespaces: list[str] | None = Field(
        default=None, description="Namespaces that may be searched (written to the retrieval profile)"
    )
    api_keys_env: str = Field(
        default="INDEXFOUNDRY_API_KEYS", description="Environment variable holding comma-separated API keys"
    )
    api_key_file: str | None = Field(
        default=None, description="JSON file of API keys (keys never go in this config file)"
    )
    max_request_bytes: int = Field(default=16384, ge=1024, le=10_485_760, description="Largest request body")
    max_query_chars: int = Field(default=2048, ge=1, le=4096, description="Longest search query")
    max_top_k: int = Field(default=100, ge=1, le=100, description="Largest top_k a request may ask for")
    freshness_reuse_s: float = Field(
        default=300, ge=0, le=86400, description="/freshness reuses a source's check for this long (0: never)"
    )
    retrieval: RetrievalConfig = Field(
        default_factory=RetrievalConfig,
        description="Retrieval profile: default top_k, search modes offered, hybrid fusion",
    )
    allowed_filters: list[AllowedFilter] | None = Field(
        default=None, description="Filterable fields and operators (None: the built-in list)"
    )

    @field_validator("trusted_proxies")
    @classmethod
    def _proxies_are_addresses(cls, value: list[str]) -> list[str]:
        import ipaddress

        for entry in value:
            try:
                ipaddress.ip_network(entry, strict=False)
            except ValueError:
                raise ValueError(
                    f"trusted_proxies entry '{entry}' is not an IP address or network (e.g. 10.0.0.5, 10.0.0.0/24)"
                ) from None
        return value
