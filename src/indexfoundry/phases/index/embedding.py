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
from indexfoundry.backends.embedding.windows import (
    chunk_of,
    is_window,
    local_window_texts,
    model_window,
    window_id,
    window_number,
)
from indexfoundry.backends.stores import TEXT_HASH_KEY, Metadata
from indexfoundry.models.config import IndexConfig, VectorDbConfig
from indexfoundry.models.records import DocumentChunk
from indexfoundry.phases.base import NullProgress
from indexfoundry.phases.executor import LOCAL, Executor
from indexfoundry.phases.index.rows import ROW_HASH_KEY, chunk_metadata, metadata_fields, row_hash
from indexfoundry.phases.index.workers import EmbedBatch, EmbedOnWorker, embed_batch
from indexfoundry.storage.atomic import atomic_write_bytes, jsonl_line, loads_json
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


@dataclass(frozen=True)
class CarriedRow:
    """A line of the previous ``indexed/embeddings.jsonl`` kept as it was: its chunk's line in
    ``chunks.jsonl`` is the one the row was made from, under the same settings and model."""

    line: bytes  # the embeddings file's line, newline included
    text_hash: str
    row_hash: str
    vector: str  # base64 of little-endian float32, as in the line


@dataclass(frozen=True)
class Carried:
    """Rows taken from the previous embeddings file (``carry.py``), and the chunk lines they
    were made from: such a chunk is validated only when something needs its fields."""

    rows: dict[str, CarriedRow]  # store id -> row (a chunk's own, and its windows')
    chunk_lines: dict[str, bytes]  # chunk id -> its line in chunks.jsonl
    dimensions: int  # the rows' vectors' dimensions


@dataclass
class Embedded:
    """What ``embed_chunks`` produced (and wrote to ``indexed/embeddings.jsonl``).

    ``chunks`` are the chunks embedded (or taken from the cache) by this call; a rerun's
    unchanged chunks may instead be ``carried``: their rows come as lines of the previous
    embeddings file, and ``chunk`` validates one of them only when asked."""

    chunks: list[DocumentChunk]  # sorted by chunk id
    hashes: dict[str, str]  # chunk id -> text hash (every chunk, carried ones too)
    vectors: dict[str, Vectors]  # text hash -> vector (normalised if configured) of ``chunks``
    model_id: str
    dimensions: int
    reused: int
    embedded: int
    # chunk id -> text hashes of its windows after the first (``index.long_chunks: windows``)
    windows: dict[str, list[str]] = field(default_factory=dict)
    carried: Carried | None = None
    # store_rows' last answer, by the store settings it was made for
    _rows: tuple[tuple[tuple[str, ...], bool], dict[str, Metadata]] | None = field(default=None, repr=False)
    _chunks: dict[str, DocumentChunk] = field(default_factory=dict, repr=False)
    _carried_vectors: dict[str, str] = field(default_factory=dict, repr=False)

    def rows(self) -> list[tuple[str, str, str]]:
        """(store id, chunk id, text hash) of every vector: each chunk, then its windows; by store id."""
        out = [(cid, cid, text_hash) for cid, text_hash in self.hashes.items()]
        for cid, hashes in self.windows.items():
            out.extend((window_id(cid, n), cid, h) for n, h in enumerate(hashes, start=1))
        return sorted(out, key=lambda row: row[0])

    @property
    def chunk_count(self) -> int:
        """Every chunk of the run, carried ones included."""
        return len(self.hashes)

    def chunk(self, chunk_id: str) -> DocumentChunk:
        """A chunk of the run: embedded now, or carried (validated from its line once)."""
        if not self._chunks:
            self._chunks.update((c.chunk_id, c) for c in self.chunks)
        found = self._chunks.get(chunk_id)
        if found is None:
            assert self.carried is not None, chunk_id
            line = self.carried.chunk_lines[chunk_id]
            found = self._chunks[chunk_id] = DocumentChunk.model_validate(loads_json(line))
        return found

    def vector(self, text_hash: str) -> Vectors:
        """A vector of the run by its text hash (a carried row's decoded from its line)."""
        found = self.vectors.get(text_hash)
        if found is not None or self.carried is None:
            return self.vectors[text_hash]
        if not self._carried_vectors:
            self._carried_vectors.update((row.text_hash, row.vector) for row in self.carried.rows.values())
        return decode_vector(self._carried_vectors[text_hash])

    def row_hashes(self, vdb: VectorDbConfig) -> dict[str, str]:
        """Store id -> the row hash a store holds for that vector under ``vdb``'s settings (a
        carried row's as it was recorded: the phase carries rows only under the same settings)."""
        out = {sid: str(meta[ROW_HASH_KEY]) for sid, meta in self.store_rows(vdb).items()}
        if self.carried is not None:
            out.update((sid, row.row_hash) for sid, row in self.carried.rows.items())
        return out

    def metadata(self, store_id: str, vdb: VectorDbConfig) -> Metadata:
        """The metadata a store holds for one vector (``store_rows``' entry, or a carried row's)."""
        made = self.store_rows(vdb).get(store_id)
        if made is not None:
            return made
        assert self.carried is not None, store_id
        row = self.carried.rows[store_id]
        chunk = self.chunk(chunk_of(store_id))
        return _row_metadata(chunk_metadata(chunk, "", metadata_fields(vdb)), row.text_hash, self.model_id, chunk, vdb)

    def store_rows(self, vdb: VectorDbConfig) -> dict[str, Metadata]:
        """Store id -> the metadata a store holds for that vector under ``vdb``'s settings, its
        row hash (model, metadata, stored text) under ``rows.ROW_HASH_KEY``: every vector of
        ``chunks`` (carried rows are not made again; see ``metadata``)."""
        fields = metadata_fields(vdb)
        key = (fields, vdb.store_text)
        if self._rows is not None and self._rows[0] == key:
            return self._rows[1]
        out: dict[str, Metadata] = {}
        by_id = {c.chunk_id: c for c in self.chunks}
        bases: dict[str, Metadata] = {}  # a chunk's windows share its metadata but for the text hash
        for store_id, chunk_id, text_hash in self.rows():
            chunk = by_id.get(chunk_id)
            if chunk is None:
                continue  # carried: its rows are not made again
            base = bases.get(chunk_id)
            if base is None:
                base = bases[chunk_id] = chunk_metadata(chunk, "", fields)
            out[store_id] = _row_metadata(base, text_hash, self.model_id, chunk, vdb)
        self._rows = (key, out)
        return out


def _row_metadata(base: Metadata, text_hash: str, model_id: str, chunk: DocumentChunk, vdb: VectorDbConfig) -> Metadata:
    """A store row's metadata: the chunk's ``base`` with this vector's text hash and its row hash."""
    meta = dict(base)
    meta[TEXT_HASH_KEY] = text_hash
    meta[ROW_HASH_KEY] = row_hash(model_id, meta, chunk.content.text if vdb.store_text else None)
    return meta


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
    carried: Carried | None = None,
    chunk_lines: dict[str, str] | None = None,
) -> Embedded:
    """Embed chunks through the cache and write the embeddings file (sorted by chunk id).

    ``carried``: the rows of a rerun's unchanged chunks, written as they were (their chunks are
    not in ``chunks``). ``chunk_lines``: chunk id -> SHA-256 of its line in ``chunks.jsonl``,
    recorded in its rows (``EmbeddingRecord.chunk_line``) so that the next run can carry them."""
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
    if carried is not None:
        hashes, windows = _with_carried(hashes, windows, carried)
        if not vectors and carried.rows:
            dimensions = carried.dimensions
    ordered = sorted(chunks, key=lambda c: c.chunk_id)
    result = Embedded(ordered, hashes, vectors, embedder.model_id, dimensions, reused, embedded, windows, carried)
    stored = result.store_rows(config.vector_db)
    encoded = {text_hash: encode_vector(vector) for text_hash, vector in vectors.items()}
    # EmbeddingRecord's lines, written as plain rows (the same canonical JSON; tens of thousands
    # of models built only to be dumped again cost more than the file); a carried row's line as it was
    lines: list[bytes] = []
    for store_id, chunk_id, text_hash in result.rows():
        if store_id not in stored:
            assert carried is not None, store_id
            lines.append(carried.rows[store_id].line)
            continue
        record = {
            "chunk_id": store_id,
            "text_hash": text_hash,
            "vector": encoded[text_hash],
            "model": embedder.model_id,
            "dimensions": dimensions,
            "row_hash": str(stored[store_id][ROW_HASH_KEY]),
        }
        if chunk_lines is not None and chunk_id in chunk_lines:
            record["chunk_line"] = chunk_lines[chunk_id]
        lines.append((jsonl_line(record) + "\n").encode("utf-8"))
    target = embeddings_path or layout.embeddings
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(target, b"".join(lines))
    return result


def _with_carried(
    hashes: dict[str, str], windows: dict[str, list[str]], carried: Carried
) -> tuple[dict[str, str], dict[str, list[str]]]:
    """Every chunk's text hash and window hashes: the embedded chunks' and the carried rows'."""
    hashes = dict(hashes)
    windows = dict(windows)
    carried_windows: dict[str, list[tuple[int, str]]] = {}
    for store_id, row in carried.rows.items():
        if is_window(store_id):
            carried_windows.setdefault(chunk_of(store_id), []).append((window_number(store_id), row.text_hash))
        else:
            hashes[store_id] = row.text_hash
    for chunk_id, found in carried_windows.items():
        windows[chunk_id] = [text_hash for _n, text_hash in sorted(found)]
    return hashes, windows
