"""The operator's connections file: every destination and credential an agent may use, by name.

``indexfoundry mcp --connections connections.yaml`` loads it; an agent's config then names a
connection (``index.connection: team-pg``) and never writes a URL, host, port, DSN, path or
environment variable name itself. Four kinds, each a mapping of names to connections::

    embeddings: {NAME: {model, base_url, api_key_env, dimensions, timeout_ms, retry_config}}
    stores:     {NAME: {provider, collection, <the provider's connection keys>}}
    rerankers:  {NAME: {model, api_key_env, base_url, request_model, timeout_ms, ...}}
    fetch:      {NAME: {allowed_private_hosts, headers_env, headers_env_hosts}}

Every value is parsed once, here, with the parser the connecting code uses: URLs with
``canonical_url``, DSNs with libpq's own parser (``parse_dsn``), model specs with
``parse_embedding_model``; relative paths are resolved against the file's folder. A store key
that its provider does not take, a password in a DSN, an env name that is not one, or a
``headers_env`` with no host to send it to is ``CONFIG_INVALID`` when the file is loaded.

A connection resolves to exactly the config keys an operator would write by hand (``index``
and ``vector_db`` keys, a ``reranker`` block, ``connect`` keys), so a run built through a
named connection is the same run, byte for byte, as one built from the full config.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints, ValidationError, field_validator, model_validator

from indexfoundry.errors import ConfigInvalid
from indexfoundry.models.base import Strict
from indexfoundry.models.config import ENV_NAME, NetworkBounds, RetryConfig, VectorProvider, read_config_file
from indexfoundry.models.embedding import parse_embedding_model, spec_string
from indexfoundry.models.retrieval import RERANK_PROVIDERS
from indexfoundry.models.validation import validation_error
from indexfoundry.models.values import canonical_url, parse_dsn

# What a connection is called: lower-case letters, digits, '-' and '_' (no spaces, no dots).
NAME_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,63}$"
ConnectionName = Annotated[str, StringConstraints(pattern=NAME_PATTERN)]
EnvName = Annotated[str, StringConstraints(pattern=f"^{ENV_NAME.pattern}$")]
Kind = Literal["embeddings", "stores", "rerankers", "fetch"]
_LABELS: dict[str, str] = {"embeddings": "embedding", "stores": "store", "rerankers": "reranker", "fetch": "fetch"}

# The connection keys each store provider takes (``vector_db.connection``), besides its secrets' env names.
STORE_KEYS: dict[str, frozenset[str]] = {
    "chroma": frozenset({"path", "host", "port", "ssl", "api_key_env"}),
    "local": frozenset({"path"}),
    "qdrant": frozenset(
        {"path", "url", "host", "port", "https", "api_key_env", "timeout", "check_compatibility", "max_retries"}
    ),
    "milvus": frozenset({"uri", "token_env", "db_name", "index_type", "max_retries", "backoff_ms"}),
    "pgvector": frozenset(
        {
            "dsn",
            "dsn_env",
            "password_env",
            "schema",
            "connect_timeout",
            "maintenance_work_mem",
            "full_text_search",
            "text_search_config",
        }
    ),
    "pinecone": frozenset({"host", "api_key_env", "timeout", "max_retries"}),
    "weaviate": frozenset({"url", "grpc_url", "api_key_env", "timeout"}),
}


class EmbeddingConnection(Strict):
    """An embedding model and where it runs: the ``index`` keys an agent's run gets."""

    model: str = Field(description="index.embedding_model, e.g. openai:text-embedding-3-small (parsed once)")
    base_url: str | None = Field(default=None, description="API base URL (canonical form stored)")
    api_key_env: EnvName | None = Field(default=None, description="Env var holding the API key")
    dimensions: int | None = Field(default=None, ge=1, description="Output dimensions (models that shorten)")
    timeout_ms: int | None = Field(default=None, ge=1000, le=600000, description="Timeout of one request")
    retry_config: RetryConfig | None = Field(default=None, description="Retries of the API")

    @field_validator("model")
    @classmethod
    def _one_spec(cls, value: str) -> str:
        try:
            return spec_string(parse_embedding_model(value, "model"))
        except ConfigInvalid as error:
            raise ValueError(error.message) from None

    @field_validator("base_url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        return None if value is None else canonical_url(value, "base_url")

    def index_keys(self) -> dict[str, Any]:
        """The ``index`` keys this connection sets (only those it names)."""
        data = self.model_dump(mode="json", exclude_unset=True)
        data["embedding_model"] = data.pop("model")
        return data


class StoreConnection(Strict):
    """A vector store: the ``vector_db`` provider and connection an agent's run gets."""

    provider: VectorProvider = Field(description="Vector database provider")
    collection: str | None = Field(
        default=None, min_length=1, description="The only collection runs naming this store write (default: any)"
    )
    path: str | None = Field(default=None, description="Embedded store folder (chroma, local, qdrant local mode)")
    host: str | None = Field(default=None, description="Server host (chroma, qdrant) or data-plane host (pinecone)")
    port: int | None = Field(default=None, ge=1, le=65535, description="Server port")
    ssl: bool | None = Field(default=None, description="chroma: TLS")
    https: bool | None = Field(default=None, description="qdrant: TLS")
    url: str | None = Field(default=None, description="Server URL (qdrant, weaviate)")
    grpc_url: str | None = Field(default=None, description="weaviate: gRPC address")
    uri: str | None = Field(default=None, description="milvus: Milvus Lite file or server URL")
    dsn: str | None = Field(default=None, description="pgvector: connection string without a password")
    dsn_env: EnvName | None = Field(default=None, description="pgvector: env var holding the DSN")
    password_env: EnvName | None = Field(default=None, description="pgvector: env var holding the password")
    api_key_env: EnvName | None = Field(default=None, description="Env var holding the server's API key")
    token_env: EnvName | None = Field(default=None, description="milvus: env var holding the token")
    schema_: str | None = Field(default=None, alias="schema", description="pgvector: schema of the tables")
    db_name: str | None = Field(default=None, description="milvus: database")
    index_type: str | None = Field(default=None, description="milvus: index type")
    timeout: float | None = Field(default=None, gt=0, description="Request timeout (s)")
    connect_timeout: int | None = Field(default=None, ge=1, description="pgvector: connect timeout (s)")
    maintenance_work_mem: str | None = Field(default=None, description="pgvector: memory for index builds")
    full_text_search: bool | None = Field(default=None, description="pgvector: keyword search in PostgreSQL")
    text_search_config: str | None = Field(default=None, description="pgvector: text search configuration")
    check_compatibility: bool | None = Field(default=None, description="qdrant: client/server version check")
    max_retries: int | None = Field(default=None, ge=0, le=20, description="Retries on network errors")
    backoff_ms: int | None = Field(default=None, ge=0, description="milvus: first retry delay")

    @field_validator("url", "grpc_url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is None or "://" not in value:
            return None if value is None else value.strip()  # weaviate's grpc_url may be host:port
        return canonical_url(value, "url")

    @field_validator("host")
    @classmethod
    def _host(cls, value: str | None) -> str | None:
        if value is None:
            return None
        return canonical_url(value, "host") if "://" in value else value.strip().lower()

    @model_validator(mode="after")
    def _provider_keys(self) -> StoreConnection:
        named = set(self.model_fields_set) - {"provider", "collection"}
        keys = {"schema" if k == "schema_" else k for k in named}
        wrong = sorted(keys - STORE_KEYS[self.provider])
        if wrong:
            raise ValueError(
                f"provider {self.provider} takes no {', '.join(wrong)} "
                f"(it takes {', '.join(sorted(STORE_KEYS[self.provider]))})"
            )
        if self.dsn is not None and self.dsn_env is not None:
            raise ValueError("set dsn or dsn_env, not both")
        if self.dsn is not None:
            try:
                parse_dsn(self.dsn)
            except ConfigInvalid as error:
                raise ValueError(error.message) from None
            self.dsn = self.dsn.strip()
        if self.uri is not None and "://" in self.uri:
            self.uri = canonical_url(self.uri, "uri")
        return self

    def vector_db_keys(self) -> dict[str, Any]:
        """``{provider, connection}`` of ``vector_db`` (only the keys this connection names)."""
        data = self.model_dump(mode="json", exclude_unset=True, by_alias=True, exclude={"provider", "collection"})
        return {"provider": self.provider, "connection": data}

    def resolved_paths(self, base: Path) -> StoreConnection:
        """This connection with relative embedded-store paths made absolute (against ``base``)."""
        if self.path is not None:
            self.path = str((base / Path(self.path).expanduser()).resolve())
        if self.uri is not None and "://" not in self.uri:
            self.uri = str((base / Path(self.uri).expanduser()).resolve())
        return self


class RerankerConnection(Strict):
    """A reranker: the ``reranker`` block (less ``enabled`` and ``top_k_to_rerank``) an agent's profile gets."""

    model: str = Field(description="cross-encoder:<folder> | cohere:<model> | http:<base_url> (parsed once)")
    api_key_env: EnvName | None = Field(default=None, description="Env var holding the API key")
    base_url: str | None = Field(default=None, description="cohere: another Cohere-compatible server")
    request_model: str | None = Field(default=None, description="http: the 'model' field sent")
    batch_size: int | None = Field(default=None, ge=1, le=128, description="cross-encoder: pairs per pass")
    max_length: int | None = Field(default=None, ge=16, le=8192, description="cross-encoder: most tokens")
    timeout_ms: int | None = Field(default=None, ge=100, le=600000, description="Timeout per request")
    max_retries: int | None = Field(default=None, ge=0, le=20, description="Retries after 429, 5xx, timeout")
    backoff_ms: int | None = Field(default=None, ge=0, le=600000, description="First backoff")

    @field_validator("model")
    @classmethod
    def _one_spec(cls, value: str) -> str:
        provider, sep, target = value.strip().partition(":")
        provider, target = provider.strip().lower(), target.strip()
        if not sep or not target or provider not in RERANK_PROVIDERS:
            raise ValueError(f"model '{value}' is not cross-encoder:<folder>, cohere:<model> or http:<base_url>")
        if provider == "http":
            target = canonical_url(target, "model")
        return f"{provider}:{target}"

    @field_validator("base_url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        return None if value is None else canonical_url(value, "base_url")

    def resolved_paths(self, base: Path) -> RerankerConnection:
        provider, _, target = self.model.partition(":")
        if provider == "cross-encoder":
            self.model = f"cross-encoder:{(base / Path(target).expanduser()).resolve()}"
        return self

    def reranker_keys(self) -> dict[str, Any]:
        """The ``reranker`` keys this connection sets."""
        return self.model_dump(mode="json", exclude_unset=True)


class FetchConnection(Strict):
    """What an agent's fetches may reach besides public hosts, and the credentials sent there."""

    allowed_private_hosts: list[str] = Field(
        default_factory=list, description="Private or loopback 'host' / 'host:port' runs naming this may fetch"
    )
    headers_env_hosts: list[str] = Field(
        default_factory=list, description="Public 'host' / 'host:port' that also receive headers_env"
    )
    headers_env: dict[str, EnvName] = Field(
        default_factory=dict, description="Headers whose values come from env vars, sent only to these hosts"
    )

    @field_validator("allowed_private_hosts", "headers_env_hosts")
    @classmethod
    def _hosts(cls, value: list[str]) -> list[str]:
        return [entry.strip().lower().rstrip(".") for entry in value]

    @model_validator(mode="after")
    def _headers_have_hosts(self) -> FetchConnection:
        if self.headers_env and not (self.allowed_private_hosts or self.headers_env_hosts):
            raise ValueError("headers_env needs the hosts it is sent to: allowed_private_hosts or headers_env_hosts")
        return self

    @property
    def header_hosts(self) -> list[str]:
        """The hosts (``name`` or ``name:port``) that may receive ``headers_env``."""
        return list(dict.fromkeys([*self.allowed_private_hosts, *self.headers_env_hosts]))


class FetchGrant(NetworkBounds):
    """What an agent's fetches into an existing run may reach and carry: the server's private-network
    allowances plus, when the call names a fetch connection, its hosts and headers (sent to those
    hosts only). The run's own ``headers_env`` is never sent on an agent's call."""

    headers_env: dict[str, EnvName] = Field(default_factory=dict, description="Headers from env vars")
    headers_env_hosts: list[str] = Field(default_factory=list, description="The only hosts headers_env goes to")


class Connections(Strict):
    """The connections file (``connections.yaml``)."""

    embeddings: dict[ConnectionName, EmbeddingConnection] = Field(
        default_factory=dict, description="Embedding models and their APIs"
    )
    stores: dict[ConnectionName, StoreConnection] = Field(default_factory=dict, description="Vector stores")
    rerankers: dict[ConnectionName, RerankerConnection] = Field(default_factory=dict, description="Rerankers")
    fetch: dict[ConnectionName, FetchConnection] = Field(
        default_factory=dict, description="Private hosts and fetch credentials"
    )

    def names(self, kind: Kind) -> list[str]:
        return sorted(getattr(self, kind))

    def get(self, kind: Kind, name: str, where: str) -> Any:
        """The ``kind`` connection ``name``; CONFIG_INVALID listing the names there are otherwise."""
        found = getattr(self, kind).get(name)
        if found is not None:
            return found
        names = self.names(kind)
        label = _LABELS[kind]
        raise ConfigInvalid(
            f"{where}: '{name}' is not a {label} connection of this server"
            + (f" (its {label} connections: {', '.join(names)})" if names else f" (it has no {label} connections)"),
            suggestion=(
                f"Use one of: {', '.join(names)}"
                if names
                else f"The operator names {label} connections in the server's connections file (--connections FILE)"
            ),
            details={"key": where, "reason": "unknown_connection", "names": names},
        )


def load_connections(path: Path) -> Connections:
    """Load and check a connections file (YAML or JSON); relative paths are relative to it."""
    try:
        connections = Connections.model_validate(read_config_file(path))
    except ValidationError as exc:
        error = validation_error(exc, str(path), Connections)
        error.suggestion = (
            error.suggestion.split(";")[0] + " (docs/mcp.md, 'The connections file', shows every provider)"
            if error.suggestion
            else None
        )
        raise error from None
    base = path.resolve().parent
    for store in connections.stores.values():
        store.resolved_paths(base)
    for reranker in connections.rerankers.values():
        reranker.resolved_paths(base)
    return connections
