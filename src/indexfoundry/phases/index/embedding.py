"""The index phase's first half: every chunk's text (and the windows of long chunks) embedded
through the runs folder's cache, and ``indexed/embeddings.jsonl`` written (sorted by chunk id).

The ``indexfoundry_index_embed`` tool runs ``embed_chunks`` too, so the tool and the phase
embed alike. On a remote executor only the cache misses go to its workers (``workers.py``).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from indexfoundry.backends.embedding.base import Embedder, Vectors, l2_normalize
from indexfoundry.backends.embedding.cache import EmbeddingCache
from indexfoundry.backends.embedding.windows import local_window_texts, model_window, window_id
from indexfoundry.backends.stores import TEXT_HASH_KEY, Metadata
from indexfoundry.models.config import IndexConfig, VectorDbConfig
from indexfoundry.models.records import DocumentChunk
from indexfoundry.phases.base import NullProgress
from indexfoundry.phases.executor import LOCAL, Executor
from indexfoundry.phases.index.rows import ROW_HASH_KEY, chunk_metadata, metadata_fields, row_hash
from indexfoundry.phases.index.workers import EmbedBatch, EmbedOnWorker, embed_batch
from indexfoundry.storage.atomic import atomic_write_jsonl
from indexfoundry.storage.hashing import sha256_json, sha256_text
from indexfoundry.storage.layout import RunLayout, cache_dir
from indexfoundry.storage.workcache import WorkCache


def encode_vector(vector: Vectors) -> str:
    """base64 of little-endian float32."""
    return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")


def decode_vector(data: str) -> Vectors:
    return np.frombuffer(base64.b64decode(data), dtype="<f4").astype(np.float32)


def cache_model_key(model_id: str, device: str) -> str:
    """The embedding cache's model key: the model id for vectors made on the CPU; the model id and
    ``|cuda`` for vectors made on GPUs, which equal the CPU's only to float tolerance, so that a
    CPU run never reuses them (and stays byte-identical to every other CPU run)."""
    return model_id if device == "cpu" else f"{model_id}|{device}"


def embed_with_cache(
    cache_path: Path,
    embedder: Embedder,
    texts_by_hash: dict[str, str],
    batch_size: int,
    progress: Any = None,
    executor: Executor = LOCAL,
) -> tuple[dict[str, Vectors], int, int]:
    """Vectors for every text hash: from the cache, or embedded in batches and cached.

    Returns (vectors, reused count, newly embedded count). A failed batch raises EMBED_ERROR
    naming the provider, model and batch; batches before it stay cached, so a rerun resumes.
    With a remote ``executor`` (Ray) only the cache misses are sent, batch by batch, to its
    workers; the cache is read and written here, by the driver.
    """
    progress = progress or NullProgress()
    cache = EmbeddingCache(cache_path)
    device = executor.embedding_device(embedder)
    key = cache_model_key(embedder.model_id, device)
    try:
        vectors = cache.get_many(key, texts_by_hash)
        # Similar lengths side by side: a batching embedder pads less (vectors do not depend on it).
        missing = sorted((h for h in texts_by_hash if h not in vectors), key=lambda h: (len(texts_by_hash[h]), h))
        reused = len(vectors)
        batches = (len(missing) + batch_size - 1) // batch_size
        parts = [missing[start : start + batch_size] for start in range(0, len(missing), batch_size)]
        with progress.task(f"embed ({embedder.model_id})", total=len(missing)) as task:

            def keep(index: int, result: Vectors) -> None:
                fresh = {h: result[i] for i, h in enumerate(parts[index])}
                cache.put_many(key, fresh)
                vectors.update(fresh)
                task.advance(len(fresh))

            if executor.remote:
                items = [
                    EmbedBatch(number, batches, [texts_by_hash[h] for h in batch])
                    for number, batch in enumerate(parts, start=1)
                ]
                executor.map(EmbedOnWorker(embedder), items, kind="embed", on_result=keep)
            else:
                for number, batch in enumerate(parts, start=1):
                    where = f"batch {number}/{batches} ({len(batch)} texts) of model {embedder.model_id}"
                    keep(number - 1, embed_batch(embedder, [texts_by_hash[h] for h in batch], where, number))
        return vectors, reused, len(missing)
    finally:
        cache.close()


@dataclass
class Embedded:
    """What ``embed_chunks`` produced (and wrote to ``indexed/embeddings.jsonl``)."""

    chunks: list[DocumentChunk]  # sorted by chunk id
    hashes: dict[str, str]  # chunk id -> text hash
    vectors: dict[str, Vectors]  # text hash -> vector (normalised if configured)
    model_id: str
    dimensions: int
    reused: int
    embedded: int
    # chunk id -> text hashes of its windows after the first (``index.long_chunks: windows``)
    windows: dict[str, list[str]] = field(default_factory=dict)
    # store_rows' last answer, by the store settings it was made for
    _rows: tuple[tuple[tuple[str, ...], bool], dict[str, Metadata]] | None = field(default=None, repr=False)

    def rows(self) -> list[tuple[str, DocumentChunk, str]]:
        """(store id, chunk, text hash) of every vector: each chunk, then its windows; by store id."""
        out = [(c.chunk_id, c, self.hashes[c.chunk_id]) for c in self.chunks]
        by_id = {c.chunk_id: c for c in self.chunks}
        for cid, hashes in self.windows.items():
            out.extend((window_id(cid, n), by_id[cid], h) for n, h in enumerate(hashes, start=1))
        return sorted(out, key=lambda row: row[0])

    def store_rows(self, vdb: VectorDbConfig) -> dict[str, Metadata]:
        """Store id -> the metadata a store holds for that vector under ``vdb``'s settings, its
        row hash (model, metadata, stored text) under ``rows.ROW_HASH_KEY``."""
        fields = metadata_fields(vdb)
        key = (fields, vdb.store_text)
        if self._rows is not None and self._rows[0] == key:
            return self._rows[1]
        out: dict[str, Metadata] = {}
        by_chunk: dict[str, Metadata] = {}
        for store_id, chunk, text_hash in self.rows():
            base = by_chunk.get(chunk.chunk_id)
            if base is None:  # a chunk's windows share its metadata but for the text hash
                base = by_chunk[chunk.chunk_id] = chunk_metadata(chunk, "", fields)
            meta = dict(base)
            meta[TEXT_HASH_KEY] = text_hash
            meta[ROW_HASH_KEY] = row_hash(self.model_id, meta, chunk.content.text if vdb.store_text else None)
            out[store_id] = meta
        self._rows = (key, out)
        return out


def chunk_windows(
    chunks: list[DocumentChunk],
    texts: dict[str, str],
    model_id: str,
    config: IndexConfig,
    cache: WorkCache | None = None,
) -> dict[str, list[str]]:
    """chunk id -> texts of its windows after the first, for chunks longer than the model's
    window (``index.long_chunks: windows`` and a model whose window is known); else empty. With
    ``cache`` (the runs folder's work cache) a chunk split by an earlier run is not tokenized again."""
    window = model_window(model_id)
    if config.long_chunks != "windows" or window is None:
        return {}
    split = local_window_texts(window)
    keys = {c.chunk_id: sha256_json([texts[c.chunk_id], c.content.text]) for c in chunks} if cache else {}
    kind = windows_cache_kind(window)
    stored = cache.get_many(kind, keys.values()) if cache is not None else {}
    fresh: dict[str, list[str]] = {}
    out: dict[str, list[str]] = {}
    for c in chunks:
        known = stored.get(keys[c.chunk_id]) if cache is not None else None
        if isinstance(known, list):
            found = [str(t) for t in known]
        else:
            found = split(texts[c.chunk_id], c.content.text)
            if cache is not None:
                fresh[keys[c.chunk_id]] = found
        if found:
            out[c.chunk_id] = found
    if cache is not None:
        cache.put_many(kind, fresh)
    return out


def windows_cache_kind(window: int) -> str:
    """What a chunk's window texts depend on besides its texts: the tokenizer, the window and the
    splitting rule (this version of IndexFoundry)."""
    from indexfoundry import __version__
    from indexfoundry.backends.embedding.onnx_fp32 import local_tokenizer_id

    return f"windows/{local_tokenizer_id()}/{window}/indexfoundry-{__version__}"


def embed_chunks(
    layout: RunLayout,
    chunks: list[DocumentChunk],
    embedder: Embedder,
    config: IndexConfig,
    progress: Any = None,
    embeddings_path: Path | None = None,
    executor: Executor = LOCAL,
) -> Embedded:
    """Embed chunks through the cache and write the embeddings file (sorted by chunk id)."""
    texts = {c.chunk_id: c.embedding_text() for c in chunks}
    hashes = {cid: sha256_text(text) for cid, text in texts.items()}
    texts_by_hash = {hashes[cid]: text for cid, text in texts.items()}
    with WorkCache.for_runs(layout.runs_dir) as work:  # window splits of earlier runs
        extra = chunk_windows(chunks, texts, embedder.model_id, config, work)
    windows = {cid: [sha256_text(t) for t in found] for cid, found in extra.items()}
    for cid, found in extra.items():
        texts_by_hash.update(zip(windows[cid], found, strict=True))
    cache_path = cache_dir(layout.runs_dir) / "embeddings.sqlite"
    vectors, reused, embedded = embed_with_cache(
        cache_path, embedder, texts_by_hash, config.batch_size, progress, executor
    )
    if config.normalize_vectors and vectors:
        keys = sorted(vectors)
        matrix = l2_normalize(np.stack([vectors[k] for k in keys]))
        vectors = {k: matrix[i] for i, k in enumerate(keys)}
    dimensions = int(next(iter(vectors.values())).shape[0]) if vectors else int(embedder.dimensions)
    ordered = sorted(chunks, key=lambda c: c.chunk_id)
    result = Embedded(ordered, hashes, vectors, embedder.model_id, dimensions, reused, embedded, windows)
    stored = result.store_rows(config.vector_db)
    encoded = {text_hash: encode_vector(vector) for text_hash, vector in vectors.items()}
    # EmbeddingRecord's lines, written as plain rows (the same canonical JSON; tens of thousands
    # of models built only to be dumped again cost more than the file)
    records = [
        {
            "chunk_id": store_id,
            "text_hash": text_hash,
            "vector": encoded[text_hash],
            "model": embedder.model_id,
            "dimensions": dimensions,
            "row_hash": str(stored[store_id][ROW_HASH_KEY]),
        }
        for store_id, _chunk, text_hash in result.rows()
    ]
    target = embeddings_path or layout.embeddings
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_jsonl(target, records)
    return result
