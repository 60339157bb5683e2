"""Phase 4, index: embed every chunk (through the cache) and upsert into the vector store.

Reads ``normalized/chunks.jsonl``; writes ``indexed/embeddings.jsonl`` (sorted by chunk id),
``upsert_stats.json`` and ``vector_manifest.json``. After the full upsert, ids that are no
longer in the run are pruned once, and the store is verified against the run.
"""

from __future__ import annotations

import base64
from typing import Any

import numpy as np

from indexfoundry.errors import DbError
from indexfoundry.models.config import PipelineConfig
from indexfoundry.models.records import DocumentChunk, EmbeddingRecord
from indexfoundry.phases.base import (
    Phase,
    PhaseContext,
    PhaseOutcome,
    package_version,
    upstream_artifact_hashes,
)
from indexfoundry.phases.index.cache import EmbeddingCache
from indexfoundry.phases.index.embedders import Embedder, Vectors, resolve_embedder
from indexfoundry.phases.index.stores import Metadata, VectorStore, describe_location, open_store
from indexfoundry.storage.atomic import atomic_write_json, atomic_write_jsonl, iter_jsonl
from indexfoundry.storage.hashing import sha256_text
from indexfoundry.storage.layout import RunLayout, cache_dir

# Chunk fields copied into the store's metadata (filterable), besides the configured ones.
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


def chunk_metadata(chunk: DocumentChunk, text_hash: str, fields: tuple[str, ...] = BASE_METADATA_FIELDS) -> Metadata:
    """Flat metadata for the store: dotted field names, no None values, tags joined."""
    data = chunk.model_dump(mode="json")
    meta: Metadata = {"_text_hash": text_hash}
    for name in fields:
        value = _field(data, name)
        if isinstance(value, list):
            value = ",".join(str(v) for v in value)
        if isinstance(value, str | int | float | bool):
            meta[name] = value
    return meta


def open_run_store(layout: RunLayout, config: PipelineConfig) -> VectorStore:
    """The vector store a run writes to and is searched in."""
    return open_store(config.index.vector_db, layout.chroma_dir, layout.root)


def embed_with_cache(
    ctx: PhaseContext, embedder: Embedder, texts_by_hash: dict[str, str], batch_size: int
) -> tuple[dict[str, Vectors], int, int]:
    """Vectors for every text hash: from the cache, or embedded in batches and cached.

    Returns (vectors, reused count, newly embedded count).
    """
    cache = EmbeddingCache(cache_dir(ctx.runs_dir) / "embeddings.sqlite")
    try:
        vectors = cache.get_many(embedder.model_id, texts_by_hash)
        missing = [h for h in sorted(texts_by_hash) if h not in vectors]
        reused = len(vectors)
        with ctx.progress.task(f"embed ({embedder.model_id})", total=len(missing)) as task:
            for start in range(0, len(missing), batch_size):
                batch = missing[start : start + batch_size]
                try:
                    result = embedder.embed([texts_by_hash[h] for h in batch])
                except Exception as exc:
                    from indexfoundry.errors import EmbedError, IndexFoundryError

                    if isinstance(exc, IndexFoundryError):
                        raise
                    raise EmbedError(
                        f"embedding batch {start // batch_size + 1} ({len(batch)} texts) with "
                        f"{embedder.model_id} failed: {type(exc).__name__}: {exc}",
                        suggestion="Rerun the index phase; texts already embedded are cached",
                    ) from None
                fresh = {h: np.asarray(result[i], dtype=np.float32) for i, h in enumerate(batch)}
                cache.put_many(embedder.model_id, fresh)
                vectors.update(fresh)
                task.advance(len(batch))
        return vectors, reused, len(missing)
    finally:
        cache.close()


class IndexPhase(Phase):
    name = "index"
    version = "1"

    def config_slice(self, config: PipelineConfig) -> Any:
        return config.index.model_dump(mode="json")

    def tool_versions(self) -> dict[str, str]:
        return {
            **super().tool_versions(),
            "chromadb": package_version("chromadb"),
            "sentence-transformers": package_version("sentence-transformers"),
            "torch": package_version("torch"),
        }

    def input_hashes(self, ctx: PhaseContext) -> list[str]:
        return upstream_artifact_hashes(ctx, "normalize")

    def run(self, ctx: PhaseContext) -> PhaseOutcome:
        layout = ctx.layout
        config = ctx.config.index
        chunks = [DocumentChunk.model_validate(row) for row in iter_jsonl(layout.chunks)]
        embedder: Embedder = ctx.embedder_override or resolve_embedder(config.embedding_model, config)
        texts = {c.chunk_id: c.embedding_text() for c in chunks}
        hashes = {cid: sha256_text(text) for cid, text in texts.items()}
        texts_by_hash = {hashes[cid]: text for cid, text in texts.items()}
        vectors, reused, embedded = embed_with_cache(ctx, embedder, texts_by_hash, config.batch_size)
        ordered = sorted(chunks, key=lambda c: c.chunk_id)
        records = [
            EmbeddingRecord(
                chunk_id=c.chunk_id,
                text_hash=hashes[c.chunk_id],
                vector=encode_vector(vectors[hashes[c.chunk_id]]),
                model=embedder.model_id,
                dimensions=embedder.dimensions,
            )
            for c in ordered
        ]
        atomic_write_jsonl(layout.embeddings, records)
        upsert = self._upsert(ctx, embedder, ordered, hashes, vectors)
        vector_manifest = {
            "collection": config.vector_db.collection,
            "namespace": config.vector_db.namespace,
            "model_used": embedder.model_id,
            "dimensions": embedder.dimensions,
            "metadata_schema": sorted(BASE_METADATA_FIELDS),
            "store": describe_location(config.vector_db, layout.chroma_dir, layout.root),
            "vectors": len(records),
        }
        atomic_write_json(layout.upsert_stats, upsert)
        atomic_write_json(layout.vector_manifest, vector_manifest)
        return PhaseOutcome(
            artifacts=[layout.embeddings, layout.upsert_stats, layout.vector_manifest],
            output_count=len(records),
            stats={**upsert["stats"], "texts_embedded": embedded, "texts_from_cache": reused},
            details={"model": embedder.model_id, "model_sha256": _model_hash(embedder)},
            reused=reused,
            new=embedded,
            record_counts={"indexed/embeddings.jsonl": len(records)},
        )

    def _upsert(
        self,
        ctx: PhaseContext,
        embedder: Embedder,
        chunks: list[DocumentChunk],
        hashes: dict[str, str],
        vectors: dict[str, Vectors],
    ) -> dict[str, Any]:
        store = open_run_store(ctx.layout, ctx.config)
        store.ensure_collection(embedder.model_id, embedder.dimensions)
        ids = [c.chunk_id for c in chunks]
        existing = store.existing(ids)
        to_write = [c for c in chunks if existing.get(c.chunk_id, {}).get("_text_hash") != hashes[c.chunk_id]]
        batch = max(1, min(ctx.config.index.batch_size * 8, store.max_batch_size()))
        store_text = True
        with ctx.progress.task("upsert", total=len(to_write)) as task:
            for start in range(0, len(to_write), batch):
                part = to_write[start : start + batch]
                store.upsert(
                    [c.chunk_id for c in part],
                    np.stack([vectors[hashes[c.chunk_id]] for c in part]),
                    [c.content.text for c in part] if store_text else None,
                    [chunk_metadata(c, hashes[c.chunk_id]) for c in part],
                )
                task.advance(len(part))
        wanted = set(ids)
        stale = sorted(set(store.all_ids()) - wanted)
        if stale:
            store.delete(stale)
        present = set(store.all_ids())
        missing = sorted(wanted - present)
        extra = sorted(present - wanted)
        if missing or extra:
            raise DbError(
                f"vector store does not match the run after upsert: {len(missing)} missing, {len(extra)} extra ids",
                recoverable=True,
                suggestion="Rerun 'indexfoundry index --run-id ... --force'",
            )
        updated = sum(1 for c in to_write if c.chunk_id in existing)
        return {
            "stats": {
                "vectors_sent": len(to_write),
                "vectors_inserted": len(to_write) - updated,
                "vectors_updated": updated,
                "vectors_unchanged": len(chunks) - len(to_write),
                "vectors_pruned": len(stale),
                "vectors_failed": 0,
            },
            "verified": True,
        }


def _model_hash(embedder: Embedder) -> str | None:
    if embedder.model_id.startswith("local:"):
        from indexfoundry.phases.index.embedders import LOCAL_MODEL_SHA256

        return LOCAL_MODEL_SHA256
    return None
