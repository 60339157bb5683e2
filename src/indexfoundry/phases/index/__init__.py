"""Phase 4, index: embed every chunk (through the cache) and upsert into the vector store.

Reads ``normalized/chunks.jsonl``; writes ``indexed/embeddings.jsonl`` (sorted by chunk id),
``upsert_stats.json`` and ``vector_manifest.json``. After the full upsert, ids that are no
longer in the run are pruned once, and the store is verified against the run.

The two halves are plain functions (``embed_chunks``, ``upsert_chunks``) so that the design's
``indexfoundry_index_embed`` / ``_upsert`` tools run exactly the same code as the phase.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from indexfoundry.backends.embedding.cache import EmbeddingCache
from indexfoundry.backends.embedding.devices import CPU, Device, place
from indexfoundry.backends.embedding.providers import (
    Embedder,
    Vectors,
    embedding_backend,
    l2_normalize,
    resolve_embedder,
)
from indexfoundry.backends.embedding.windows import local_window_texts, model_window, window_id
from indexfoundry.backends.stores import (
    PUBLISHING_PROVIDERS,
    TEXT_HASH_KEY,
    Metadata,
    VectorStore,
    describe_location,
    open_store,
    prepare_publish,
    publish,
    seed_from_base,
    takes_concurrent_writers,
)
from indexfoundry.errors import DbError, EmbedError, IndexFoundryError
from indexfoundry.models.artifacts import UpsertStats, VectorManifest
from indexfoundry.models.config import IndexConfig, PipelineConfig, VectorDbConfig
from indexfoundry.models.manifests import PhaseManifest
from indexfoundry.models.records import DocumentChunk, EmbeddingRecord
from indexfoundry.phases.base import (
    NullProgress,
    Phase,
    PhaseContext,
    PhaseOutcome,
    package_version,
    upstream_artifact_hashes,
)
from indexfoundry.phases.executor import LOCAL, Executor
from indexfoundry.storage.artifacts import write_artifact
from indexfoundry.storage.atomic import atomic_write_jsonl, iter_jsonl, read_json
from indexfoundry.storage.hashing import sha256_file, sha256_json, sha256_text
from indexfoundry.storage.layout import RunLayout, cache_dir

# Chunk fields always copied into the store's metadata (filterable), besides the configured ones.
BASE_METADATA_FIELDS: tuple[str, ...] = (
    "doc_id",
    "chunk_index",
    "source.uri",
    "source.type",
    "source.record_id",
    "position.section",
    "position.page",
    "metadata.heading_path",
    "metadata.title",
    "metadata.language",
)
# Hash of everything written for a chunk (vector model, text, metadata, text stored or not):
# an upsert rewrites a vector only when it changed.
ROW_HASH_KEY = "_row_hash"


def encode_vector(vector: Vectors) -> str:
    """base64 of little-endian float32."""
    return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")


def decode_vector(data: str) -> Vectors:
    return np.frombuffer(base64.b64decode(data), dtype="<f4").astype(np.float32)


def _field(chunk: dict[str, Any], dotted: str) -> Any:
    value: Any = chunk
    for part in dotted.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


def metadata_fields(config: VectorDbConfig | None = None) -> tuple[str, ...]:
    """The built-in metadata fields plus the configured ones, sorted."""
    extra = config.metadata_fields if config is not None else []
    return tuple(sorted(set(BASE_METADATA_FIELDS) | set(extra)))


def chunk_metadata(chunk: DocumentChunk, text_hash: str, fields: tuple[str, ...] = BASE_METADATA_FIELDS) -> Metadata:
    """Flat metadata for the store: dotted field names, no None values, lists joined by commas."""
    data = chunk.model_dump(mode="json")
    meta: Metadata = {TEXT_HASH_KEY: text_hash}
    for name in fields:
        value = _field(data, name)
        if isinstance(value, list):
            value = ",".join(str(v) for v in value)
        if isinstance(value, str | int | float | bool):
            meta[name] = value
    return meta


def open_run_store(layout: RunLayout, config: PipelineConfig) -> VectorStore:
    """The vector store a run writes to and is searched in."""
    return open_store(config.index.vector_db, layout)


def _embed_batch(embedder: Embedder, texts: list[str], where: str, number: int) -> Vectors:
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
        return _embed_batch(self.embedder, batch.texts, where, batch.number)


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
                    keep(number - 1, _embed_batch(embedder, [texts_by_hash[h] for h in batch], where, number))
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

    def rows(self) -> list[tuple[str, DocumentChunk, str]]:
        """(store id, chunk, text hash) of every vector: each chunk, then its windows; by store id."""
        out = [(c.chunk_id, c, self.hashes[c.chunk_id]) for c in self.chunks]
        by_id = {c.chunk_id: c for c in self.chunks}
        for cid, hashes in self.windows.items():
            out.extend((window_id(cid, n), by_id[cid], h) for n, h in enumerate(hashes, start=1))
        return sorted(out, key=lambda row: row[0])


def chunk_windows(
    chunks: list[DocumentChunk], texts: dict[str, str], model_id: str, config: IndexConfig
) -> dict[str, list[str]]:
    """chunk id -> texts of its windows after the first, for chunks longer than the model's
    window (``index.long_chunks: windows`` and a model whose window is known); else empty."""
    window = model_window(model_id)
    if config.long_chunks != "windows" or window is None:
        return {}
    split = local_window_texts(window)
    out: dict[str, list[str]] = {}
    for c in chunks:
        found = split(texts[c.chunk_id], c.content.text)
        if found:
            out[c.chunk_id] = found
    return out


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
    extra = chunk_windows(chunks, texts, embedder.model_id, config)
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
    records = [
        EmbeddingRecord(
            chunk_id=store_id,
            text_hash=text_hash,
            vector=encode_vector(vectors[text_hash]),
            model=embedder.model_id,
            dimensions=dimensions,
        )
        for store_id, _chunk, text_hash in result.rows()
    ]
    target = embeddings_path or layout.embeddings
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_jsonl(target, records)
    return result


def _row_hash(model_id: str, meta: Metadata, text: str | None) -> str:
    return sha256_json({"model": model_id, "metadata": meta, "text": text})


def verify_ids(store: VectorStore, wanted: set[str]) -> tuple[list[str], list[str]]:
    """(missing, extra): run ids the store lacks, and store ids the run does not have."""
    present = set(store.all_ids())
    return sorted(wanted - present), sorted(present - wanted)


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


def upsert_chunks(
    store: VectorStore,
    embedded: Embedded,
    vdb: VectorDbConfig,
    progress: Any = None,
    executor: Executor = LOCAL,
    layout: RunLayout | None = None,
) -> dict[str, Any]:
    """Write a run's vectors into ``store`` by ``vdb.upsert_mode``; prune once; verify.

    - ``upsert``: new and changed vectors are written, unchanged ones left alone, ids no longer
      in the run pruned once at the end; the store must then hold exactly the run's ids.
    - ``insert``: only ids the store lacks are written; nothing is overwritten or pruned (a
      collection shared by several runs); every run id must be present.
    - ``replace``: the collection (or the namespace) is emptied first, then everything written.

    With a remote ``executor`` (Ray) and a store that takes concurrent writers (a server store:
    ``takes_concurrent_writers``), the batches are written by the cluster's workers at once; an
    embedded store is written here only. Either way this process decides every row, then
    prunes and verifies.
    """
    progress = progress or NullProgress()
    mode = vdb.upsert_mode
    fields = metadata_fields(vdb)
    rows = embedded.rows()  # every chunk's vector, and the windows of long chunks
    store.ensure_collection(embedded.model_id, embedded.dimensions, reset=mode == "replace")
    ids = [store_id for store_id, _c, _h in rows]
    existing = {} if mode == "replace" else store.existing(ids)
    metas: dict[str, Metadata] = {}
    for store_id, c, text_hash in rows:
        meta = chunk_metadata(c, text_hash, fields)
        meta[ROW_HASH_KEY] = _row_hash(embedded.model_id, meta, c.content.text if vdb.store_text else None)
        metas[store_id] = meta
    if mode == "insert":
        to_write = [row for row in rows if row[0] not in existing]
    else:
        to_write = [row for row in rows if existing.get(row[0], {}).get(ROW_HASH_KEY) != metas[row[0]][ROW_HASH_KEY]]
    batch = max(1, min(vdb.batch_size, store.max_batch_size()))
    batches = [
        UpsertBatch(
            [store_id for store_id, _c, _h in part],
            np.stack([embedded.vectors[text_hash] for _s, _c, text_hash in part]),
            [c.content.text for _s, c, _h in part] if vdb.store_text else None,
            [metas[store_id] for store_id, _c, _h in part],
        )
        for part in (to_write[start : start + batch] for start in range(0, len(to_write), batch))
    ]
    by_workers = executor.remote and layout is not None and takes_concurrent_writers(vdb)
    with progress.task("upsert", total=len(to_write)) as task:
        if by_workers and layout is not None:
            write = UpsertOnWorker(vdb, layout, embedded.model_id, embedded.dimensions)
            executor.map(write, batches, kind="store", on_result=lambda index, count: task.advance(count))
        else:
            for part in batches:
                store.upsert(part.ids, part.vectors, part.texts, part.metadatas)
                task.advance(len(part.ids))
    # One listing of the store after the writes both verifies them and finds what to prune: the
    # run's ids it lacks are missing (a write that did not land), the others are stale (pruned once,
    # in upsert and replace modes) or, in insert mode, another run's (counted as extra).
    wanted = set(ids)
    missing, extra = verify_ids(store, wanted)
    stale: list[str] = []
    if mode != "insert" and extra:
        stale, extra = extra, []
        store.delete(stale)
    if missing:
        raise DbError(
            f"vector store does not match the run after upsert: {len(missing)} missing, {len(extra)} extra ids",
            recoverable=True,
            suggestion="Rerun 'indexfoundry index --run-id ... --force'",
            details={"missing": missing[:20], "extra": extra[:20]},
        )
    # Only a store that matches the run may become the served index; the switch itself (pgvector's
    # view) waits for the runner's commit point (``IndexPhase.publish``), after the later guards.
    prepare_publish(store)
    updated = sum(1 for row in to_write if row[0] in existing)
    return {
        "stats": {
            "vectors_sent": len(to_write),
            "vectors_inserted": len(to_write) - updated,
            "vectors_updated": updated,
            "vectors_unchanged": len(rows) - len(to_write),
            "vectors_pruned": len(stale),
            "vectors_failed": 0,
        },
        "upsert_mode": mode,
        "batch_size": batch,
        "verified": True,
        "extra_ids": len(extra),
    }


def vector_manifest(layout: RunLayout, vdb: VectorDbConfig, embedded: Embedded) -> VectorManifest:
    """``indexed/vector_manifest.json``: where the vectors are and what produced them."""
    return VectorManifest(
        collection=vdb.collection,
        namespace=vdb.namespace,
        model_used=embedded.model_id,
        dimensions=embedded.dimensions,
        metadata_schema=list(metadata_fields(vdb)),
        store_text=vdb.store_text,
        store=describe_location(vdb, layout),
        vectors=len(embedded.chunks) + sum(len(w) for w in embedded.windows.values()),
        # Chunks longer than the model's window, embedded in windows too (each window one vector).
        **({"chunks_in_windows": len(embedded.windows)} if embedded.windows else {}),
    )


class IndexPhase(Phase):
    name = "index"
    version = "2"

    def config_slice(self, config: PipelineConfig) -> Any:
        return config.index.model_dump(mode="json")

    def tool_versions(self) -> dict[str, str]:
        return {
            **super().tool_versions(),
            "chromadb": package_version("chromadb"),
            "sentence-transformers": package_version("sentence-transformers"),
            "torch": package_version("torch"),
            "onnxruntime": package_version("onnxruntime"),
            # The keyword index is built here too: its tokenizer and stemmer shape it.
            "bm25s": package_version("bm25s"),
            "PyStemmer": package_version("PyStemmer"),
        }

    def input_hashes(self, ctx: PhaseContext) -> list[str]:
        return upstream_artifact_hashes(ctx, "normalize")

    def publish(self, ctx: PhaseContext) -> None:
        """The run becomes ``latest``: a store that stages runs (pgvector) switches to its vectors."""
        if ctx.config.index.vector_db.provider not in PUBLISHING_PROVIDERS:
            return
        store = open_run_store(ctx.layout, ctx.config)
        try:
            publish(store)
        finally:
            store.close()

    def run(self, ctx: PhaseContext) -> PhaseOutcome:
        layout = ctx.layout
        config = ctx.config.index
        chunks = [DocumentChunk.model_validate(row) for row in iter_jsonl(layout.chunks)]
        embedder: Embedder = ctx.embedder_override or resolve_embedder(
            config.embedding_model, config, warn=lambda message: ctx.log(f"warning: {message}")
        )
        committed = committed_vectors(layout, ctx.previous_phase)
        embedded = embed_chunks(layout, chunks, embedder, config, ctx.progress, executor=ctx.executor)
        ordered = embedded.chunks
        seeded = not ctx.force and ctx.base_layout is not None and _seed_store(ctx, ctx.base_layout, embedded.model_id)
        store = open_run_store(layout, ctx.config)
        try:
            upsert = upsert_chunks(store, embedded, config.vector_db, ctx.progress, ctx.executor, layout)
        finally:
            store.close()
        store_ops = upsert.pop("stats")
        # Not in the artifact: who wrote the store differs by executor (see upsert_chunks).
        by_workers = ctx.executor.remote and takes_concurrent_writers(config.vector_db)
        # The artifact counts changes against the run's last committed index, not the live store, so
        # a run resumed after dying between its upsert and its manifest writes the same file as a clean
        # run. What this attempt actually sent to the store goes to the phase manifest's stats.
        upsert["stats"] = changes_since(committed, embedded)
        write_artifact(layout.upsert_stats, UpsertStats.model_validate(upsert))
        write_artifact(layout.vector_manifest, vector_manifest(layout, config.vector_db, embedded))
        from indexfoundry.backends.keyword.bm25 import build_keyword_index

        keyword_files = build_keyword_index(layout, ordered)  # BM25 for keyword/hybrid search
        return PhaseOutcome(
            artifacts=[layout.embeddings, layout.upsert_stats, layout.vector_manifest, *keyword_files],
            output_count=len(ordered),
            stats={
                **upsert["stats"],
                "store_writes": store_ops["vectors_sent"],
                "store_copied_from_base": seeded,
                "store_pruned": store_ops["vectors_pruned"],
                "texts_embedded": embedded.embedded,
                "texts_from_cache": embedded.reused,
                "chunks_in_windows": len(embedded.windows),
                "window_vectors": sum(len(w) for w in embedded.windows.values()),
            },
            details={
                "model": embedded.model_id,
                "model_sha256": _model_hash(embedded.model_id),
                **_backend_details(embedder, ctx.executor),
                # Who wrote the store: on a cluster, its workers (a server store) or the driver.
                **({"store_written_by": "workers" if by_workers else "driver"} if ctx.executor.remote else {}),
            },
            reused=embedded.reused,
            new=embedded.embedded,
            record_counts={"indexed/embeddings.jsonl": len(embedded.rows())},
        )


def _seed_store(ctx: PhaseContext, base: RunLayout, model_id: str) -> bool:
    """Copy the base run's embedded store when it holds this model's vectors with the same
    store settings (``--base`` runs then write only what changed)."""
    from indexfoundry.storage.manifest import load_manifest, load_run_config

    try:
        entry = load_manifest(base).phases.get("index")
        same = (
            entry is not None
            and entry.status == "completed"
            and load_run_config(base).index.vector_db == ctx.config.index.vector_db
            and read_json(base.vector_manifest).get("model_used") == model_id
        )
    except (IndexFoundryError, OSError, ValueError):
        return False
    return same and seed_from_base(ctx.config.index.vector_db, ctx.layout, base)


def committed_vectors(layout: RunLayout, previous: PhaseManifest | None) -> dict[str, str]:
    """chunk id -> (model, text hash) of the run's last committed index, if its embeddings still verify."""
    if previous is None:
        return {}
    recorded = {a.path: a.sha256 for a in previous.artifacts}
    rel = layout.embeddings.relative_to(layout.root).as_posix()
    if rel not in recorded or not layout.embeddings.is_file() or sha256_file(layout.embeddings) != recorded[rel]:
        return {}
    return {row["chunk_id"]: f"{row['model']}|{row['text_hash']}" for row in iter_jsonl(layout.embeddings)}


def changes_since(committed: dict[str, str], embedded: Embedded) -> dict[str, int]:
    """Vectors inserted / updated / unchanged / pruned relative to the last committed index."""
    current = {store_id: f"{embedded.model_id}|{text_hash}" for store_id, _c, text_hash in embedded.rows()}
    inserted = sum(1 for cid in current if cid not in committed)
    updated = sum(1 for cid, key in current.items() if cid in committed and committed[cid] != key)
    return {
        "vectors": len(current),
        "vectors_inserted": inserted,
        "vectors_updated": updated,
        "vectors_unchanged": len(current) - inserted - updated,
        "vectors_pruned": sum(1 for cid in committed if cid not in current),
        "vectors_failed": 0,
    }


def _backend_details(embedder: Embedder, executor: Executor) -> dict[str, Any]:
    """Which backend ran a local model (ONNX Runtime or the sentence-transformers fallback), the
    hash of the ONNX file it ran and the device(s) it ran on (this process: the CPU; a remote
    executor's workers: what they reported, per worker in ``details.executor.devices``);
    nothing for API and hash models."""
    backend = embedding_backend(embedder)
    if backend not in ("onnxruntime", "sentence-transformers"):
        return {}
    devices = executor.embedding_devices()
    return {
        "embedding_backend": backend,
        "model_file_sha256": getattr(embedder, "file_sha256", None),
        "embedding_device": ",".join(devices) if devices else "cpu",
    }


def _model_hash(model_id: str) -> str | None:
    if model_id.startswith(("local:", "local-int8:")):
        from indexfoundry.backends.embedding.providers import LOCAL_MODEL_SHA256

        return LOCAL_MODEL_SHA256
    return None
