"""API rerankers: ``cohere:<model>`` (official SDK) and ``http:<base_url>`` (self-hosted servers).

Both send the query and every candidate text in one request, ask for every score back
(``top_n`` = the number of texts) and map the answer's indexes to the order given. Keys come
from the environment variable ``reranker.api_key_env``, read when the first request is made,
and are redacted from every message. 429, 5xx and timeouts are retried with backoff (the
embedders' retry loop, ``Retry-After`` honoured); other failures are not retried.

``http:<base_url>`` posts ``{query, texts, documents, top_n, return_documents: false}``
(``texts`` is what Text Embeddings Inference reads, ``documents`` what Infinity, Jina and vLLM
read; each ignores the other) to ``<base_url>/rerank`` (unless the URL already ends in
``/rerank``), with ``model`` when ``reranker.request_model`` is set, and reads either TEI's list
of ``{index, score}`` or the ``{results: [{index, relevance_score}]}`` of the others.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from indexfoundry.backends.remote_api import (
    Failure,
    KeyedBackend,
    api_key,
    call_with_retries,
    classify_cohere,
    classify_httpx,
    cohere_client,
)
from indexfoundry.errors import EmbedError, RerankError, missing_extra
from indexfoundry.models.config import RetryConfig
from indexfoundry.models.retrieval import RerankerConfig


def _call(
    call: Callable[[], Any],
    classify: Callable[[Exception], Failure],
    config: RerankerConfig,
    what: str,
    redact: Callable[[str], str],
) -> Any:
    retry = RetryConfig(max_retries=config.max_retries, backoff_ms=config.backoff_ms)
    try:
        return call_with_retries(call, classify, retry, what, redact)
    except EmbedError as exc:
        raise RerankError(
            exc.message,
            recoverable=exc.recoverable,
            suggestion="Retry later, or check reranker.model, the key variable and the server"
            if exc.recoverable
            else "Check reranker.model, reranker.api_key_env and the server URL",
        ) from None


def scores_from_results(results: Any, count: int, what: str) -> list[float]:
    """One score per text from ``[{index, relevance_score | score}]`` (every index exactly once)."""
    if not isinstance(results, list):
        raise RerankError(f"{what} returned a malformed response (no result list)", recoverable=False)
    scores: list[float | None] = [None] * count
    for item in results:
        get = item.get if isinstance(item, dict) else lambda name, item=item: getattr(item, name, None)
        index, value = get("index"), get("relevance_score")
        if value is None:
            value = get("score")
        if not isinstance(index, int) or not 0 <= index < count or scores[index] is not None:
            raise RerankError(f"{what} returned a bad or repeated index {index!r}", recoverable=False)
        if not isinstance(value, int | float) or not math.isfinite(float(value)):
            raise RerankError(f"{what} returned a non-numeric score for index {index}", recoverable=False)
        scores[index] = float(value)
    missing = [i for i, s in enumerate(scores) if s is None]
    if missing:
        raise RerankError(f"{what} scored {count - len(missing)} of {count} texts", recoverable=False)
    return [s for s in scores if s is not None]


class CohereReranker(KeyedBackend):
    """Cohere's rerank endpoint (v2) through the official SDK."""

    def __init__(self, model: str, config: RerankerConfig) -> None:
        try:
            import cohere  # noqa: F401
        except ImportError:
            raise missing_extra("cohere", "cohere", "the cohere reranker") from None
        self.model = model
        self.config = config
        self.model_id = f"cohere:{model}"
        self._client: Any = None
        self._key: str | None = None

    @property
    def client(self) -> Any:
        if self._client is None:
            self._key = api_key(self.config.api_key_env, "cohere", required=True)
            self._client = cohere_client(self._key or "", self.config.base_url, self.config.timeout_ms / 1000)
        return self._client

    def score(self, query: str, texts: list[str]) -> list[float]:
        if not texts:
            return []
        what = f"cohere reranker {self.model}"
        client = self.client

        def call() -> Any:
            return client.rerank(
                model=self.model,
                query=query,
                documents=texts,
                top_n=len(texts),
                request_options={"max_retries": 0},
            )

        response = _call(call, classify_cohere, self.config, what, self._redact)
        return scores_from_results(getattr(response, "results", None), len(texts), what)


class HttpReranker(KeyedBackend):
    """A self-hosted rerank server (TEI, Infinity, Jina, vLLM) over plain HTTP with httpx."""

    def __init__(self, base_url: str, config: RerankerConfig) -> None:
        import httpx

        url = base_url.rstrip("/")
        try:
            parts = httpx.URL(url)
        except httpx.InvalidURL:
            parts = None
        if parts is None or parts.scheme not in ("http", "https") or not parts.host:
            from indexfoundry.errors import ConfigInvalid

            raise ConfigInvalid(
                f"reranker URL '{base_url}' is not an http(s) URL", suggestion="Use http:<http://host:port>"
            )
        self.url = url if url.endswith("/rerank") else url + "/rerank"
        self.config = config
        tag = f"{parts.host}:{parts.port}" if parts.port else parts.host
        self.model_id = f"http:{tag}{parts.path.rstrip('/')}" + (
            f";model={config.request_model}" if config.request_model else ""
        )
        self._key: str | None = None
        self._client: httpx.Client | None = None

    @property
    def client(self) -> Any:
        if self._client is None:
            import httpx

            self._key = api_key(self.config.api_key_env, "http reranker", required=False)
            headers = {"Authorization": f"Bearer {self._key}"} if self._key else {}
            # Operator-configured server: no proxies from the environment, no redirects.
            self._client = httpx.Client(
                timeout=self.config.timeout_ms / 1000, headers=headers, trust_env=False, follow_redirects=False
            )
        return self._client

    def score(self, query: str, texts: list[str]) -> list[float]:
        if not texts:
            return []
        what = f"rerank server {self.model_id}"
        body: dict[str, Any] = {
            "query": query,
            "texts": texts,
            "documents": texts,
            "top_n": len(texts),
            "return_documents": False,
            "return_text": False,
        }
        if self.config.request_model:
            body["model"] = self.config.request_model
        client = self.client

        def call() -> Any:
            response = client.post(self.url, json=body)
            response.raise_for_status()
            return response.json()

        payload = _call(call, classify_httpx, self.config, what, self._redact)
        results = payload.get("results") if isinstance(payload, dict) else payload
        return scores_from_results(results, len(texts), what)
