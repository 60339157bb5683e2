"""The embedders that call an API.

- ``openai:<model>``: the official ``openai`` SDK; ``base_url`` makes any OpenAI-compatible
  server work (Ollama, vLLM, LM Studio, TEI).
- ``cohere:<model>``: the official ``cohere`` SDK (extra ``cohere``).

API keys are read from the environment variable the config names, only when a request is
made, and never logged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from indexfoundry.backends.embedding.base import Embedder, Vectors
from indexfoundry.backends.remote_api import (
    Failure,
    KeyedBackend,
    api_key,
    call_with_retries,
    classify_cohere,
    cohere_client,
    retry_after,
)
from indexfoundry.errors import EmbedError, missing_extra
from indexfoundry.models.config import IndexConfig, RetryConfig
from indexfoundry.models.embedding import CohereModel, OpenAIModel


def _base_tag(base_url: str | None) -> str:
    """``host:port/path`` of a base URL, without credentials or query (part of a model id)."""
    if not base_url:
        return ""
    parts = urlsplit(base_url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return f"{host}{parts.path.rstrip('/')}"


def api_model_id(provider: str, model: str, dimensions: int | None, base_url: str | None) -> str:
    """Model id of an API model: what produced the vectors (model, dimensions, server)."""
    model_id = f"{provider}:{model}"
    if dimensions:
        model_id += f";dims={dimensions}"
    tag = _base_tag(base_url)
    if tag:
        model_id += f";base={tag}"
    return model_id


def _check_rows(rows: Any, count: int, what: str) -> Vectors:
    """Validate an API's embeddings: one numeric row per text, all the same length."""
    try:
        matrix = np.asarray(rows, dtype=np.float32)
    except (TypeError, ValueError):
        matrix = None
    if matrix is None or matrix.ndim != 2 or matrix.shape[0] != count or matrix.shape[1] == 0:
        shape = "?" if matrix is None else "x".join(str(d) for d in matrix.shape)
        raise EmbedError(
            f"{what} returned a malformed response: expected {count} vectors, got shape {shape}",
            recoverable=False,
            suggestion="Check that base_url points to an OpenAI-compatible embeddings endpoint",
        )
    if not np.all(np.isfinite(matrix)):
        raise EmbedError(f"{what} returned non-finite values", recoverable=False, suggestion="Check the server")
    return matrix


class _ApiEmbedder(KeyedBackend):
    """What the API embedders share: model, server, key variable, dimensions, retries, timeout."""

    provider = "api"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key_env: str = "EMBEDDING_API_KEY",
        dimensions: int | None = None,
        retry: RetryConfig | None = None,
        timeout_ms: int = 60000,
    ) -> None:
        self._require()
        self.model = model
        self.base_url = base_url
        self.api_key_env = api_key_env
        self.requested_dimensions = dimensions
        self.dimensions = dimensions or 0
        self.retry = retry or RetryConfig()
        self.timeout_s = timeout_ms / 1000
        self.model_id = api_model_id(self.provider, model, dimensions, base_url)
        self._client: Any = None
        self._key: str | None = None

    def _require(self) -> None:
        """Refuse early when the provider's SDK (an extra) is missing."""

    def _matrix(self, rows: Any, count: int, what: str) -> Vectors:
        matrix = _check_rows(rows, count, what)
        self.dimensions = int(matrix.shape[1])
        return matrix


class OpenAIEmbedder(_ApiEmbedder):
    """OpenAI embeddings (or any OpenAI-compatible server via ``base_url``) with the official SDK."""

    provider = "openai"

    @property
    def client(self) -> Any:
        if self._client is None:
            import openai

            # A local OpenAI-compatible server usually needs no key; api.openai.com always does.
            self._key = api_key(self.api_key_env, "openai", required=self.base_url is None)
            self._client = openai.OpenAI(
                api_key=self._key or "not-needed",
                base_url=self.base_url,
                timeout=self.timeout_s,
                max_retries=0,  # retries are ours: configurable backoff, the same for every provider
            )
        return self._client

    def _classify(self, exc: Exception) -> Failure:
        import openai

        if isinstance(exc, openai.APITimeoutError):
            return Failure(True, "request timed out")
        if isinstance(exc, openai.APIConnectionError):
            return Failure(True, f"cannot connect to the server ({type(exc).__name__})")
        if isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            recoverable = status in (408, 409, 429) or status >= 500
            return Failure(recoverable, f"HTTP {status} ({type(exc).__name__})", retry_after(exc.response.headers))
        if isinstance(exc, openai.APIResponseValidationError | openai.APIError):
            return Failure(False, f"malformed response ({type(exc).__name__})")
        return Failure(False, f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}")

    def embed(self, texts: list[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        what = f"openai model {self.model}"
        kwargs: dict[str, Any] = {"model": self.model, "input": texts, "encoding_format": "float"}
        if self.requested_dimensions:
            kwargs["dimensions"] = self.requested_dimensions

        def call() -> Any:
            return self.client.embeddings.create(**kwargs)

        response = call_with_retries(call, self._classify, self.retry, what, self._redact)
        data = getattr(response, "data", None)
        if not isinstance(data, list) or not all(hasattr(item, "embedding") for item in data):
            raise EmbedError(
                f"{what} returned a malformed response (no 'data' list of embeddings)",
                recoverable=False,
                suggestion="Check that base_url points to an OpenAI-compatible embeddings endpoint",
            )
        try:
            ordered = sorted(data, key=lambda item: int(item.index))
        except (TypeError, ValueError, AttributeError):
            ordered = data
        return self._matrix([item.embedding for item in ordered], len(texts), what)


class CohereEmbedder(_ApiEmbedder):
    """Cohere embeddings through the official SDK (v2 API); queries use ``input_type=search_query``."""

    provider = "cohere"

    def _require(self) -> None:
        try:
            import cohere  # noqa: F401
        except ImportError:
            raise missing_extra("cohere", "cohere", "the cohere embedding provider") from None

    @property
    def client(self) -> Any:
        if self._client is None:
            self._key = api_key(self.api_key_env, "cohere", required=True)
            self._client = cohere_client(self._key or "", self.base_url, self.timeout_s)
        return self._client

    def _embed(self, texts: list[str], input_type: str) -> Vectors:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        what = f"cohere model {self.model}"
        kwargs: dict[str, Any] = {
            "model": self.model,
            "texts": texts,
            "input_type": input_type,
            "embedding_types": ["float"],
            "request_options": {"max_retries": 0},
        }
        if self.requested_dimensions:
            kwargs["output_dimension"] = self.requested_dimensions

        def call() -> Any:
            return self.client.embed(**kwargs)

        response = call_with_retries(call, classify_cohere, self.retry, what, self._redact)
        rows = getattr(getattr(response, "embeddings", None), "float_", None)
        return self._matrix(rows, len(texts), what)

    def embed(self, texts: list[str]) -> Vectors:
        return self._embed(texts, "search_document")

    def embed_queries(self, texts: list[str]) -> Vectors:
        return self._embed(texts, "search_query")


# ---------------------------------------------------------------- opening
# Opened through its entry in ``models/embedders.py``: ``opener(spec, config, warn)``.
def _api_settings(config: IndexConfig) -> dict[str, Any]:
    return {
        "base_url": config.base_url,
        "api_key_env": config.api_key_env,
        "dimensions": config.dimensions,
        "retry": config.retry_config,
        "timeout_ms": config.timeout_ms,
    }


def open_openai(spec: OpenAIModel, config: IndexConfig, warn: Callable[[str], None] | None) -> Embedder:
    """An OpenAI (or OpenAI-compatible) embedding model."""
    return OpenAIEmbedder(spec.model, **_api_settings(config))


def open_cohere(spec: CohereModel, config: IndexConfig, warn: Callable[[str], None] | None) -> Embedder:
    """A Cohere embedding model."""
    return CohereEmbedder(spec.model, **_api_settings(config))
