"""Rerankers: score (query, text) pairs so the best candidates of a search come first.

A reranker is chosen by ``reranker.model`` in the run's retrieval profile:

- ``cross-encoder:<local folder>``: a sentence-transformers ``CrossEncoder`` loaded offline
  (``cross_encoder.py``). Pairs are padded to a length bucket and run in fixed-size batches, so
  a pair's score never depends on what else is scored with it.
- ``cohere:<model>``: the Cohere rerank API through the official SDK (``remote.py``).
- ``http:<base_url>``: the ``/rerank`` endpoint shape of Text Embeddings Inference, Infinity,
  Jina and vLLM (``remote.py``).

Every reranker returns one score per text, in the order given; higher is more relevant.
Failures raise ``RerankError``; the search service then keeps the retrieval order and says so.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from indexfoundry.errors import ConfigInvalid
from indexfoundry.models.retrieval import RerankerConfig


@runtime_checkable
class Reranker(Protocol):
    """Scores texts against a query. ``model_id`` names the model in responses and evaluations."""

    model_id: str

    def score(self, query: str, texts: list[str]) -> list[float]: ...


def resolve_reranker(config: RerankerConfig) -> Reranker:
    """Build the reranker that ``config.model`` names (``CONFIG_INVALID`` when it names none)."""
    if config.model is None:
        raise ConfigInvalid("reranker.model is not set", suggestion="Set reranker.model, e.g. cross-encoder:./model")
    provider, _, target = config.model.partition(":")
    if provider == "cross-encoder":
        from indexfoundry.backends.rerank.cross_encoder import CrossEncoderReranker

        return CrossEncoderReranker(target, batch_size=config.batch_size, max_length=config.max_length)
    if provider == "cohere":
        from indexfoundry.backends.rerank.remote import CohereReranker

        return CohereReranker(target, config)
    if provider == "http":
        from indexfoundry.backends.rerank.remote import HttpReranker

        return HttpReranker(target, config)
    raise ConfigInvalid(
        f"unknown reranker '{config.model}'",
        suggestion="Use cross-encoder:<local folder>, cohere:<model> or http:<base_url>",
    )


__all__ = ["Reranker", "resolve_reranker"]
