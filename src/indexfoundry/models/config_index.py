"""The index section of a pipeline config: the embedding model and the vector store."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from indexfoundry.models.base import Strict
from indexfoundry.models.embedding import EmbeddingModelSpec, parse_embedding_model
from indexfoundry.models.stores import VectorProvider as VectorProvider


class VectorDbConfig(Strict):
    provider: VectorProvider = Field(default="chroma", description="Vector database provider")
    collection: str = Field(default="indexfoundry", description="Collection name")
    namespace: str | None = Field(default=None, description="Namespace within the collection")
    connection: dict[str, Any] = Field(
        default_factory=dict,
        description=(
            "Provider connection: chroma {path} (embedded) or {host, port}; local {path}; qdrant {path} "
            "(local mode) or {url} / {host, port}, api_key_env; milvus {uri} (Milvus Lite file or server URL), "
            "token_env; pgvector {dsn} or {dsn_env} (no password: PGPASSWORD or password_env), schema"
        ),
    )
    metadata_fields: list[str] = Field(
        default_factory=lambda: ["source.uri", "source.type", "metadata.language", "position.page"],
        description="Chunk fields (dotted paths) stored as filterable vector metadata, besides the built-in ones",
    )
    store_text: bool = Field(default=True, description="Store chunk text in the vector store")
    upsert_mode: Literal["insert", "upsert", "replace"] = Field(
        default="upsert",
        description=(
            "upsert: write new and changed vectors, prune ids no longer in the run; insert: only add ids the "
            "store lacks, never overwrite or prune; replace: empty the collection (or namespace) first"
        ),
    )
    batch_size: int = Field(
        default=100, ge=1, le=1000, description="Vectors per upsert request (capped by the store's own limit)"
    )


class RetryConfig(Strict):
    max_retries: int = Field(default=3, ge=0, le=20, description="Retries after a 429, 5xx or timeout")
    backoff_ms: int = Field(
        default=1000, ge=0, le=600000, description="First backoff; doubles on each retry (Retry-After wins)"
    )


class IndexConfig(Strict):
    embedding_model: str = Field(
        default="local",
        description=(
            "'local' (offline MiniLM), 'local-int8' (its int8 ONNX export), 'hash', or 'provider:model' "
            "(sentence-transformers:<name|path>, openai:<model>, cohere:<model>)"
        ),
    )
    batch_size: int = Field(default=32, ge=1, le=500, description="Texts per embedding call")
    long_chunks: Literal["windows", "truncate"] = Field(
        default="windows",
        description=(
            "A chunk longer than the embedding model's token window (known for local and local-int8: 256): "
            "'windows' embeds it in overlapping windows too and search scores it by its best window; "
            "'truncate' embeds what the model reads (its first window) only"
        ),
    )
    normalize_vectors: bool = Field(default=True, description="L2-normalise vectors")
    dimensions: int | None = Field(
        default=None, ge=1, description="Output dimensions, for models that support shortening (openai, cohere)"
    )
    api_key_env: str = Field(default="EMBEDDING_API_KEY", description="Env var holding the API key")
    base_url: str | None = Field(
        default=None, description="API base URL (openai: any OpenAI-compatible server, e.g. http://127.0.0.1:11434/v1)"
    )
    timeout_ms: int = Field(default=60000, ge=1000, le=600000, description="Timeout of one embedding request")
    retry_config: RetryConfig = Field(default_factory=RetryConfig, description="Retries of API providers")
    vector_db: VectorDbConfig = Field(default_factory=VectorDbConfig, description="Where vectors go")

    @property
    def embedding_spec(self) -> EmbeddingModelSpec:
        """``embedding_model`` as the typed spec (CONFIG_INVALID if it names no known model)."""
        return parse_embedding_model(self.embedding_model)
