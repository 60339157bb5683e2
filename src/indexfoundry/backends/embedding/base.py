"""What every embedder offers: the ``Embedder`` interface, the vectors type, and the functions
that work on any embedder (query embedding, L2 normalisation, which backend ran it)."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

Vectors = npt.NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into float32 vectors. ``model_id`` names the model in caches and manifests."""

    model_id: str
    dimensions: int

    def embed(self, texts: list[str]) -> Vectors: ...


def embed_queries(embedder: Embedder, texts: list[str]) -> Vectors:
    """Vectors for search queries: ``embedder.embed_queries`` when the model embeds queries
    differently from documents (cohere's ``input_type``), else ``embedder.embed``."""
    method = getattr(embedder, "embed_queries", None)
    if callable(method):
        result: Vectors = method(texts)
        return result
    return embedder.embed(texts)


def l2_normalize(vectors: Vectors) -> Vectors:
    """Row-wise L2 normalisation (zero rows stay zero)."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    out: Vectors = (vectors / norms).astype(np.float32)
    return out


def embedding_backend(embedder: Embedder) -> str:
    """What ran the model: ``onnxruntime``, ``sentence-transformers``, ``api`` or ``hash`` (each
    embedder's ``backend``; an embedder that names none calls an API)."""
    backend = getattr(embedder, "backend", None)
    return backend if isinstance(backend, str) else "api"
