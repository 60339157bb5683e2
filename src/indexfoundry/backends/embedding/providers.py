"""Embedding providers behind one small interface (``base.Embedder``), opened by name.

Each provider is described by its entry in ``models/embedders.py``, which names the module and
function that open it:

- ``local``, ``local-int8``, ``sentence-transformers:<name or path>``: models run on this
  machine (``local.py``; the ONNX Runtime exports in ``onnx_fp32.py`` and ``onnx_int8.py``).
- ``hash``: deterministic feature hashing of words; no model, for tests and benchmarks
  (``hashing.py``).
- ``openai:<model>``, ``cohere:<model>``: the official SDKs (``remote.py``).

Embedders return the model's own vectors; the index phase L2-normalises them when
``normalize_vectors`` is on (the cache keeps the model's output). API keys are read from the
environment variable the config names, only when a request is made, and never logged.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from indexfoundry.backends.embedding.base import Embedder
from indexfoundry.models.config import IndexConfig
from indexfoundry.models.embedders import EMBEDDERS
from indexfoundry.models.embedding import parse_embedding_model


def resolve_embedder(
    spec: str, config: IndexConfig | None = None, warn: Callable[[str], None] | None = None
) -> Embedder:
    """Build the embedder that ``index.embedding_model`` (or a manifest's model id) names.

    ``local`` | ``local-int8`` | ``hash`` | ``hash:<dims>`` | ``sentence-transformers:<name or path>``
    | ``openai:<model>`` | ``cohere:<model>``: the provider's entry in ``models/embedders.py``
    names the function that opens it. ``warn`` hears about a fallback (``local`` without ONNX
    Runtime).
    """
    parsed = parse_embedding_model(spec)
    entry = EMBEDDERS[parsed.provider]
    opener = getattr(importlib.import_module(entry.module_name), entry.opener_name)
    embedder: Embedder = opener(parsed, config or IndexConfig(), warn)
    return embedder


def prepare_embedder(spec: str, config: IndexConfig | None = None) -> None:
    """Load what ``spec``'s embedder loads at its first use (a local model's ONNX Runtime
    session), into the process caches a later ``resolve_embedder`` of the same spec reads:
    done ahead, on a background thread, of an index phase that will embed (``Phase.prepare_ahead``)."""
    load = getattr(resolve_embedder(spec, config), "load", None)
    if callable(load):
        load()
