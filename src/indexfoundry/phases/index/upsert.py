"""The index phase's second half: a run's vectors written into its vector store by the upsert
mode, pruned once after the full upsert, and the store verified against the run; the metadata
every vector carries, and ``indexed/vector_manifest.json``.

The ``indexfoundry_index_upsert`` tool runs ``upsert_chunks`` too. On a remote executor a server
store is written by its workers (``workers.py``); the driver decides every row.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from indexfoundry.backends.stores import (
    VectorStore,
    describe_location,
    open_store,
    prepare_publish,
    takes_concurrent_writers,
)
from indexfoundry.errors import DbError
from indexfoundry.models.artifacts import VectorManifest
from indexfoundry.models.config import PipelineConfig, VectorDbConfig
from indexfoundry.phases.base import NullProgress
from indexfoundry.phases.executor import LOCAL, Executor
from indexfoundry.phases.index.embedding import Embedded
from indexfoundry.phases.index.rows import ROW_HASH_KEY, metadata_fields
from indexfoundry.phases.index.workers import UpsertBatch, UpsertOnWorker
from indexfoundry.storage.layout import RunLayout


def open_run_store(layout: RunLayout, config: PipelineConfig) -> VectorStore:
    """The vector store a run writes to and is searched in."""
    return open_store(config.index.vector_db, layout)


def verify_ids(store: VectorStore, wanted: set[str]) -> tuple[list[str], list[str]]:
    """(missing, extra): run ids the store lacks, and store ids the run does not have."""
    present = set(store.all_ids())
    return sorted(wanted - present), sorted(present - wanted)


def upsert_chunks(
    store: VectorStore,
    embedded: Embedded,
    vdb: VectorDbConfig,
    progress: Any = None,
    executor: Executor = LOCAL,
    layout: RunLayout | None = None,
    known: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Write a run's vectors into ``store`` by ``vdb.upsert_mode``; prune once; verify.

    - ``upsert``: new and changed vectors are written, unchanged ones left alone, ids no longer
      in the run pruned once at the end; the store must then hold exactly the run's ids.
    - ``insert``: only ids the store lacks are written; nothing is overwritten or pruned (a
      collection shared by several runs); every run id must be present.
    - ``replace``: the collection (or the namespace) is emptied first, then everything written.

    ``known`` (store id -> row hash) is what the store holds when the caller knows it: a run's own
    embedded store as its last completed index phase left it, or a fresh copy of another run's
    (``IndexPhase``); else every id's row hash is read from the store.

    With a remote ``executor`` (Ray) and a store that takes concurrent writers (a server store:
    ``takes_concurrent_writers``), the batches are written by the cluster's workers at once; an
    embedded store is written here only. Either way this process decides every row, then
    prunes and verifies.
    """
    progress = progress or NullProgress()
    mode = vdb.upsert_mode
    rows = embedded.rows()  # every chunk's vector, and the windows of long chunks
    store.ensure_collection(embedded.model_id, embedded.dimensions, reset=mode == "replace")
    ids = [store_id for store_id, _c, _h in rows]
    row_hashes = embedded.row_hashes(vdb)
    if mode == "replace":
        existing: dict[str, str | None] = {}
    elif known is not None:
        existing = dict(known)
    else:
        held = store.existing(ids)
        existing = {sid: str(meta[ROW_HASH_KEY]) if ROW_HASH_KEY in meta else None for sid, meta in held.items()}
    if mode == "insert":
        to_write = [row for row in rows if row[0] not in existing]
    else:
        to_write = [row for row in rows if existing.get(row[0]) != row_hashes[row[0]]]
    batch = max(1, min(vdb.batch_size, store.max_batch_size()))
    batches = [
        UpsertBatch(
            [store_id for store_id, _c, _h in part],
            np.stack([embedded.vector(text_hash) for _s, _c, text_hash in part]),
            [embedded.chunk(chunk_id).content.text for _s, chunk_id, _h in part] if vdb.store_text else None,
            [embedded.metadata(store_id, vdb) for store_id, _c, _h in part],
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
        vectors=embedded.chunk_count + sum(len(w) for w in embedded.windows.values()),
        # Chunks longer than the model's window, embedded in windows too (each window one vector).
        **({"chunks_in_windows": len(embedded.windows)} if embedded.windows else {}),
    )
