"""Phase 4, index: embed every chunk (through the cache) and upsert into the vector store.

Reads ``normalized/chunks.jsonl``; writes ``indexed/embeddings.jsonl`` (sorted by chunk id),
``upsert_stats.json`` and ``vector_manifest.json``. After the full upsert, ids that are no
longer in the run are pruned once, and the store is verified against the run.

- ``phase.py``: ``IndexPhase``, the phase itself;
- ``embedding.py``: ``embed_chunks`` (the cache, windows of long chunks, the embeddings file);
- ``upsert.py``: ``upsert_chunks`` (upsert modes, prune, verify), the vector manifest,
  ``open_run_store``;
- ``rows.py``: what a store holds per vector (the chunk's flat metadata) and the row hash;
- ``workers.py``: what a remote executor's workers run (a batch to embed, a batch to upsert).

The two halves are plain functions so that the ``indexfoundry_index_embed`` / ``_upsert`` tools
run exactly the same code as the phase.
"""

from indexfoundry.phases.index.embedding import Embedded, decode_vector, embed_chunks, encode_vector
from indexfoundry.phases.index.phase import IndexPhase
from indexfoundry.phases.index.rows import chunk_metadata, metadata_fields
from indexfoundry.phases.index.upsert import (
    open_run_store,
    upsert_chunks,
    vector_manifest,
    verify_ids,
)

__all__ = [
    "Embedded",
    "IndexPhase",
    "chunk_metadata",
    "decode_vector",
    "embed_chunks",
    "encode_vector",
    "metadata_fields",
    "open_run_store",
    "upsert_chunks",
    "vector_manifest",
    "verify_ids",
]
