"""What the index phase writes into a store for each vector: the chunk's flat metadata and a
hash of the whole row, by which an upsert tells an unchanged row from a changed one (the
embeddings file records it, so a run that starts from a copy of another run's store knows what
that store holds without reading it back)."""

from __future__ import annotations

from indexfoundry.backends.stores import TEXT_HASH_KEY, Metadata
from indexfoundry.models.config import VectorDbConfig
from indexfoundry.models.records import DocumentChunk, chunk_field
from indexfoundry.storage.hashing import sha256_json

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


def metadata_fields(config: VectorDbConfig | None = None) -> tuple[str, ...]:
    """The built-in metadata fields plus the configured ones, sorted."""
    extra = config.metadata_fields if config is not None else []
    return tuple(sorted(set(BASE_METADATA_FIELDS) | set(extra)))


def chunk_metadata(chunk: DocumentChunk, text_hash: str, fields: tuple[str, ...] = BASE_METADATA_FIELDS) -> Metadata:
    """Flat metadata for the store: dotted field names, no None values, lists joined by commas."""
    data = chunk.model_dump(mode="json", include={name.split(".", 1)[0] for name in fields})
    meta: Metadata = {TEXT_HASH_KEY: text_hash}
    for name in fields:
        value = chunk_field(data, name)
        if isinstance(value, list):
            value = ",".join(str(v) for v in value)
        if isinstance(value, str | int | float | bool):
            meta[name] = value
    return meta


def row_hash(model_id: str, meta: Metadata, text: str | None) -> str:
    return sha256_json({"model": model_id, "metadata": meta, "text": text})
