"""What the index phase sends to a remote executor's workers (Ray): a batch of texts to embed
and a batch of vectors to upsert, and the per-batch functions that run them there.

A worker keeps what it loads between batches (the embedder placed on its device, the run's
store connection), so a model is loaded once per worker however many batches it gets. The
driver decides everything (which texts, which rows, in canonical order); a worker only computes
or writes. ``embed_batch`` is also the driver's own path for one batch.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from indexfoundry.backends.embedding.base import Embedder, Vectors
from indexfoundry.backends.embedding.devices import CPU, Device, place
from indexfoundry.backends.stores import Metadata, VectorStore, open_store
from indexfoundry.errors import EmbedError, IndexFoundryError
from indexfoundry.models.config import VectorDbConfig
from indexfoundry.storage.layout import RunLayout


def embed_batch(embedder: Embedder, texts: list[str], where: str, number: int) -> Vectors:
    """One batch through ``embedder``; every failure becomes an EMBED_ERROR naming ``where``."""
    try:
        result = np.asarray(embedder.embed(texts), dtype=np.float32)
    except IndexFoundryError as exc:
        if exc.code != "EMBED_ERROR":
            raise
        raise EmbedError(
            f"{where}: {exc.message}",
            recoverable=exc.recoverable,
            suggestion=exc.suggestion,
            details={**exc.details, "model": embedder.model_id, "batch": number},
        ) from None
    except Exception as exc:
        raise EmbedError(
            f"{where} failed: {type(exc).__name__}: {' '.join(str(exc).split())[:300]}",
            suggestion="Rerun the index phase; texts already embedded are cached",
            details={"model": embedder.model_id, "batch": number},
        ) from None
    if result.ndim != 2 or result.shape[0] != len(texts):
        raise EmbedError(
            f"{where}: the embedder returned {result.shape[0] if result.ndim else 0} vectors",
            suggestion="Check the embedding provider",
        )
    return result


# Embedders of a worker process, by model id and device: a worker keeps the first one it was
# sent, placed on its device, so the model is loaded once per worker however many batches it embeds.
_WORKER_EMBEDDERS: dict[tuple[str, str], tuple[Embedder, Device]] = {}


@dataclass(frozen=True)
class EmbedBatch:
    """One batch of texts (cache misses only) to embed on an executor's worker."""

    number: int
    batches: int
    texts: list[str]


@dataclass(frozen=True)
class EmbedOnWorker:
    """The per-batch function an executor runs: the driver's embedder, loaded once per worker.

    An embedding worker calls ``placed(its device)`` first (``devices.detect_device``: the GPU it
    was given, else the CPU); ``device`` is then where the model really runs."""

    embedder: Embedder
    device: Device | None = None

    def placed(self, device: Device) -> EmbedOnWorker:
        key = (self.embedder.model_id, device.label)
        if key not in _WORKER_EMBEDDERS:
            _WORKER_EMBEDDERS[key] = place(self.embedder, device)
        embedder, where = _WORKER_EMBEDDERS[key]
        return EmbedOnWorker(embedder, where)

    def __call__(self, batch: EmbedBatch) -> Vectors:
        if self.device is None:
            return self.placed(CPU)(batch)
        where = f"batch {batch.number}/{batch.batches} ({len(batch.texts)} texts) of model {self.embedder.model_id}"
        return embed_batch(self.embedder, batch.texts, where, batch.number)


@dataclass(frozen=True)
class UpsertBatch:
    """One batch of the driver's upsert, written by a worker (a server store only)."""

    ids: list[str]
    vectors: Vectors
    texts: list[str] | None
    metadatas: list[Metadata]


# The store a worker process opened, by (store config, run): one connection per worker.
_WORKER_STORES: dict[tuple[str, str], VectorStore] = {}


@dataclass(frozen=True)
class UpsertOnWorker:
    """The per-batch function a remote executor runs for a server store: the worker opens the
    run's store once (its collection the driver already made) and upserts the batch it is sent.
    The driver chose every row (what changed, in canonical order) and prunes and verifies after."""

    vdb: VectorDbConfig
    layout: RunLayout
    model_id: str
    dimensions: int

    def __call__(self, batch: UpsertBatch) -> int:
        key = (self.vdb.model_dump_json(), str(self.layout.root))
        store = _WORKER_STORES.get(key)
        if store is None:
            # A worker process outlives the run: the store of an earlier run is closed first.
            while _WORKER_STORES:
                _WORKER_STORES.popitem()[1].close()
            store = open_store(self.vdb, self.layout)
            store.ensure_collection(self.model_id, self.dimensions, reset=False)
            _WORKER_STORES[key] = store
        store.upsert(batch.ids, batch.vectors, batch.texts, batch.metadatas)
        return len(batch.ids)
