"""Phase 4, index (``IndexPhase``): embed (``embedding.py``), upsert (``upsert.py``), the BM25
keyword index, and the phase's artifacts and manifest figures; ``publish`` switches a staging
store (pgvector) when the run becomes ``latest``.
"""

from __future__ import annotations

import functools
import shutil
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from indexfoundry.backends.embedding.base import Embedder, embedding_backend
from indexfoundry.backends.embedding.providers import prepare_embedder, resolve_embedder
from indexfoundry.backends.stores import provider_of, publish, run_store_path, seed_from_base, takes_concurrent_writers
from indexfoundry.errors import IndexFoundryError
from indexfoundry.models.artifacts import UpsertStats
from indexfoundry.models.config import PipelineConfig
from indexfoundry.models.manifests import PhaseManifest
from indexfoundry.models.records import DocumentChunk
from indexfoundry.phases.base import (
    LazyItems,
    Phase,
    PhaseContext,
    PhaseOutcome,
    completed_phase,
    followed_phase,
    link_followed_artifacts,
    package_version,
    upstream_artifact_hashes,
)
from indexfoundry.phases.executor import Executor
from indexfoundry.phases.index.carry import PreviousRows, previous_keywords, previous_rows, split_chunks
from indexfoundry.phases.index.embedding import Embedded, embed_chunks
from indexfoundry.phases.index.upsert import open_run_store, upsert_chunks, vector_manifest
from indexfoundry.storage.artifacts import write_artifact
from indexfoundry.storage.atomic import iter_jsonl, loads_json, read_json
from indexfoundry.storage.filehashes import file_sha256_many
from indexfoundry.storage.hashing import sha256_json
from indexfoundry.storage.layout import RunLayout
from indexfoundry.storage.workcache import WorkCache


class IndexPhase(Phase):
    name = "index"
    # 4: each embeddings row records its chunk's line hash (a rerun carries unchanged chunks' rows).
    version = "4"

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

    def prepare_ahead(self, ctx: PhaseContext) -> tuple[str | Callable[[], object], ...]:
        # The store's client, bm25s (with scipy.sparse) for the keyword index built at the end, and
        # a local model's session when this process embeds (a one-vector edit waits ~0.35 s for it).
        config = ctx.config.index
        ahead: list[str | Callable[[], object]] = [*provider_of(config.vector_db).preload, "bm25s"]
        if ctx.embedder_override is None and not ctx.executor.remote:
            ahead.append(functools.partial(prepare_embedder, config.embedding_model, config))
        return tuple(ahead)

    def start_early(self, ctx: PhaseContext) -> Callable[[], None] | None:
        # The copy of the followed run's embedded store (hundreds of MB at 20,000 files) begins
        # with the run, beside the earlier phases; a copy the phase did not take (it was skipped,
        # or the run failed before it) is removed when the run ends.
        target = run_store_path(ctx.config.index.vector_db, ctx.layout)
        if ctx.force or ctx.follows is None or target is None or target.exists():
            return None
        key = str(ctx.layout.root)
        with _early_lock:
            if key in _EARLY_COPIES:
                return None
            _EARLY_COPIES[key] = _SeedCopy(ctx, ctx.follows)

        def end() -> None:
            with _early_lock:
                left = _EARLY_COPIES.pop(key, None)
            if left is not None:
                left.undo()

        return end

    def publish(self, ctx: PhaseContext) -> None:
        """The run becomes ``latest``: a store that stages runs (pgvector) switches to its vectors."""
        if not provider_of(ctx.config.index.vector_db).publishes:
            return
        store = open_run_store(ctx.layout, ctx.config)
        try:
            publish(store)
        finally:
            store.close()

    def run(self, ctx: PhaseContext) -> PhaseOutcome:
        layout = ctx.layout
        config = ctx.config.index
        embedder: Embedder = ctx.embedder_override or resolve_embedder(
            config.embedding_model, config, warn=lambda message: ctx.log(f"warning: {message}")
        )
        taken = _take_followed(ctx, embedder.model_id)
        if taken is not None:
            return taken
        # The followed run's embedded store is copied on a second thread (from the run's start:
        # ``start_early``) while the chunks are read and embedded here.
        seed = ctx.follows
        seeding = _seeding(ctx)
        try:
            # A rerun's unchanged chunks keep their rows (carry.py); only the others are read as models.
            tools = self.tool_versions()
            previous = previous_rows(
                ctx,
                sha256_json(self.config_slice(ctx.config)),
                self.version,
                tools,
                _model_details(embedder, ctx.executor),
            )
            split = split_chunks(layout.chunks.read_bytes().splitlines(keepends=True), previous)
            chunks = [DocumentChunk.model_validate(loads_json(line)) for line in split.lines]
            committed = _rows_of(previous) if _holds(previous, layout) else stored_rows(layout, ctx.previous_phase)
            embedded = embed_chunks(
                layout,
                chunks,
                embedder,
                config,
                ctx.progress,
                executor=ctx.executor,
                carried=split.carried,
                chunk_lines=split.line_hashes,
            )
        except BaseException:
            seeding.undo()
            raise
        seeded = seeding.result(embedder.model_id)
        known = _known_rows(ctx, seed if seeded else None, committed, previous)
        store = open_run_store(layout, ctx.config)
        try:
            upsert = upsert_chunks(store, embedded, config.vector_db, ctx.progress, ctx.executor, layout, known)
        finally:
            store.close()
        store_ops = upsert.pop("stats")
        # Not in the artifact: who wrote the store differs by executor (see upsert_chunks).
        by_workers = ctx.executor.remote and takes_concurrent_writers(config.vector_db)
        # The artifact counts changes against the run's last committed index, not the live store, so
        # a run resumed after dying between its upsert and its manifest writes the same file as a clean
        # run. What this attempt actually sent to the store goes to the phase manifest's stats.
        upsert["stats"] = changes_since({sid: row.vector for sid, row in (committed or {}).items()}, embedded)
        write_artifact(layout.upsert_stats, UpsertStats.model_validate(upsert))
        write_artifact(layout.vector_manifest, vector_manifest(layout, config.vector_db, embedded))
        # BM25 for keyword/hybrid search: the followed run's files when its index phase had this
        # fingerprint (the same chunks and settings: a no-change nightly run), else built.
        keyword_files = _keyword_index_of(ctx, seed)
        if keyword_files is None:
            keyword_files = _build_keyword_index(ctx, embedded, previous)
        carried = len(split.carried.rows) if split.carried is not None else 0
        # Every distinct text of the run not embedded now: from the cache, or in a carried row.
        not_embedded = len({text_hash for _s, _c, text_hash in embedded.rows()}) - embedded.embedded
        return PhaseOutcome(
            artifacts=[layout.embeddings, layout.upsert_stats, layout.vector_manifest, *keyword_files],
            output_count=embedded.chunk_count,
            stats={
                **upsert["stats"],
                "store_writes": store_ops["vectors_sent"],
                # The run whose store this one started as a copy of (the base or the replaced 'latest').
                "store_copied_from": seed.run_id if seeded and seed is not None else None,
                "store_pruned": store_ops["vectors_pruned"],
                "texts_embedded": embedded.embedded,
                "texts_from_cache": not_embedded,
                "chunks_in_windows": len(embedded.windows),
                "window_vectors": sum(len(w) for w in embedded.windows.values()),
            },
            details={
                # On a remote executor the devices its workers embedded on, known once they did.
                **_model_details(embedder, ctx.executor),
                # Who wrote the store: on a cluster, its workers (a server store) or the driver.
                **({"store_written_by": "workers" if by_workers else "driver"} if ctx.executor.remote else {}),
                **({"rows_carried": carried} if previous is not None else {}),
            },
            reused=not_embedded,
            new=embedded.embedded,
            record_counts={"indexed/embeddings.jsonl": len(embedded.rows())},
        )


def _build_keyword_index(ctx: PhaseContext, embedded: Embedded, previous: PreviousRows | None) -> list[Path]:
    """The run's BM25 index: from the previous output's index when its files verify (only the
    changed texts tokenized), else from every text, its tokens from the work cache where earlier
    runs found them. A carried chunk is validated only when its text is read."""
    from indexfoundry.backends.keyword.bm25 import keyword_text, write_keyword_index

    ids = sorted(embedded.hashes)
    texts = LazyItems(len(ids), lambda i: keyword_text(embedded.chunk(ids[i])))
    keys = [embedded.hashes[chunk_id] for chunk_id in ids]
    with WorkCache.for_runs(ctx.runs_dir) as work:  # tokens of chunks earlier runs indexed
        cache = None if ctx.force else work
        return write_keyword_index(ctx.layout, ids, texts, keys, cache, previous_keywords(previous))


def _holds(previous: PreviousRows | None, layout: RunLayout) -> bool:
    return previous is not None and previous.run.root == layout.root


def _rows_of(previous: PreviousRows | None) -> dict[str, StoredRow] | None:
    """What ``stored_rows`` would read from the previous rows' file, from the rows already read."""
    if previous is None:
        return None
    return {
        store_id: StoredRow(f"{row['model']}|{row['text_hash']}", row.get("row_hash"))
        for _line_hash, rows in previous.by_chunk.values()
        for store_id, _line, row in rows
    }


def _take_followed(ctx: PhaseContext, model_id: str) -> PhaseOutcome | None:
    """The followed run's index, taken whole by a new run whose index phase has its fingerprint
    (the same chunks, settings, model and libraries: a no-change nightly run): its embedded store
    copied (``_seed_store``), its embeddings file, vector manifest and BM25 files linked after
    their hashes verify, and this run's own upsert stats written (every vector new to this run,
    as in a run from scratch). Nothing is embedded, compared or read back. None when the phase
    has to run: forced, a rerun in place, another fingerprint, errors, files that no longer
    verify, another model, or a store that cannot be copied (a server store)."""
    seed = ctx.follows
    running = ctx.manifest.phases.get("index") if ctx.manifest is not None else None
    if ctx.previous_phase is not None or seed is None or running is None:
        return None
    theirs = followed_phase(ctx, "index", running.fingerprint)
    if theirs is None:
        return None
    try:
        manifest = read_json(seed.vector_manifest)
        upsert = read_json(seed.upsert_stats)
    except (OSError, ValueError):
        return None
    if manifest.get("model_used") != model_id or not _seeding(ctx).result(model_id):
        return None
    layout = ctx.layout
    link_followed_artifacts(ctx, theirs, leave=frozenset({layout.upsert_stats.relative_to(layout.root).as_posix()}))
    vectors = int(upsert["stats"]["vectors"])
    upsert["stats"] = {
        "vectors": vectors,
        "vectors_inserted": vectors,
        "vectors_updated": 0,
        "vectors_unchanged": 0,
        "vectors_pruned": 0,
        "vectors_failed": 0,
    }
    write_artifact(layout.upsert_stats, UpsertStats.model_validate(upsert))
    return PhaseOutcome(
        artifacts=[layout.root / a.path for a in theirs.artifacts],
        output_count=theirs.outputs.count,
        stats={
            **upsert["stats"],
            "store_writes": 0,
            "store_copied_from": seed.run_id,
            "store_pruned": 0,
            "texts_embedded": 0,
            "texts_from_cache": 0,
            "chunks_in_windows": theirs.stats.get("chunks_in_windows", 0),
            "window_vectors": theirs.stats.get("window_vectors", 0),
        },
        details={
            **{k: v for k, v in theirs.details.items() if k not in ("reused", "new", "executor")},
            "taken_from": seed.run_id,
        },
        reused=vectors,
        new=0,
        record_counts={"indexed/embeddings.jsonl": vectors},
    )


def _seed_store(ctx: PhaseContext, base: RunLayout) -> bool:
    """Copy ``base``'s embedded store (the base run, or the 'latest' a plain rerun replaces)
    when its index phase completed with the same store settings: the run then writes only what
    changed. False (an empty store, every vector written) when it cannot be copied. Whether it
    holds this run's model's vectors is checked when the copy is used (``_SeedCopy.result``)."""
    from indexfoundry.storage.manifest import load_run_config, read_manifest

    try:
        entry = read_manifest(base).phases.get("index")
        same = (
            entry is not None
            and entry.status == "completed"
            and load_run_config(base).index.vector_db == ctx.config.index.vector_db
        )
    except (IndexFoundryError, OSError, ValueError):
        return False
    return same and seed_from_base(ctx.config.index.vector_db, ctx.layout, base)


class _SeedCopy:
    """``_seed_store`` of ``seed`` on a thread of its own, started at once (nothing without a
    seed, or when forced): the copy runs in the kernel, outside the GIL, while this process goes
    on. ``result(model_id)`` waits for it and keeps it when the copied store holds that model's
    vectors; ``undo()`` waits and removes a copy, so the run's folder is as if it never started."""

    def __init__(self, ctx: PhaseContext, seed: RunLayout | None) -> None:
        self._ctx = ctx
        self._seed = seed
        self._seeded = False
        self._thread: threading.Thread | None = None
        if ctx.force or seed is None:
            return

        def copy() -> None:
            self._seeded = _seed_store(ctx, seed)

        self._thread = threading.Thread(target=copy, name="indexfoundry-seed-store", daemon=True)
        self._thread.start()

    def _wait(self) -> bool:
        if self._thread is not None:
            self._thread.join()
        return self._seeded

    def result(self, model_id: str) -> bool:
        if not self._wait():
            return False
        try:
            model_used = read_json(self._seed.vector_manifest).get("model_used") if self._seed else None
        except (OSError, ValueError):
            model_used = None
        if model_used != model_id:
            self.undo()
            return False
        return True

    def undo(self) -> None:
        if self._wait():
            self._seeded = False
            target = run_store_path(self._ctx.config.index.vector_db, self._ctx.layout)
            if target is not None:
                shutil.rmtree(target, ignore_errors=True)


# Copies started when a run began (``IndexPhase.start_early``), by run folder, until the run's
# index phase takes its own or the run ends.
_EARLY_COPIES: dict[str, _SeedCopy] = {}
_early_lock = threading.Lock()


def _seeding(ctx: PhaseContext) -> _SeedCopy:
    """The copy of the followed run's store this run began with, or one started now."""
    with _early_lock:
        early = _EARLY_COPIES.pop(str(ctx.layout.root), None)
    return early if early is not None else _SeedCopy(ctx, ctx.follows)


def _keyword_index_of(ctx: PhaseContext, source: RunLayout | None) -> list[Path] | None:
    """``source``'s BM25 files linked into this run, when its completed index phase has the
    fingerprint this phase is running under; None (build it) otherwise."""
    from indexfoundry.backends.keyword.bm25 import link_keyword_index
    from indexfoundry.storage.manifest import read_manifest

    running = ctx.manifest.phases.get("index") if ctx.manifest is not None else None
    if ctx.force or source is None or running is None:
        return None
    try:
        theirs = read_manifest(source).phases.get("index")
    except (IndexFoundryError, OSError, ValueError):
        return None
    if theirs is None or theirs.status != "completed" or theirs.fingerprint != running.fingerprint:
        return None
    return link_keyword_index(ctx.layout, source, {a.path: a.sha256 for a in theirs.artifacts})


@dataclass(frozen=True)
class StoredRow:
    """A vector a completed index phase recorded (``indexed/embeddings.jsonl``)."""

    vector: str  # "<model>|<text hash>": what was embedded
    row: str | None  # the row hash the store got (None in files written before it was recorded)


def stored_rows(layout: RunLayout, phase: PhaseManifest | None) -> dict[str, StoredRow] | None:
    """Store id -> what ``phase`` (a completed index phase of the run at ``layout``) recorded for
    it, if its embeddings file still has its recorded hash; else None."""
    if phase is None or phase.status != "completed":
        return None
    recorded = {a.path: a.sha256 for a in phase.artifacts}
    rel = layout.embeddings.relative_to(layout.root).as_posix()
    if rel not in recorded or file_sha256_many([layout.embeddings])[0] != recorded[rel]:
        return None
    return {
        row["chunk_id"]: StoredRow(f"{row['model']}|{row['text_hash']}", row.get("row_hash"))
        for row in iter_jsonl(layout.embeddings)
    }


def _known_rows(
    ctx: PhaseContext,
    seeded_from: RunLayout | None,
    committed: dict[str, StoredRow] | None,
    previous: PreviousRows | None = None,
) -> dict[str, str] | None:
    """Store id -> row hash of what the run's embedded store holds, when it is known without
    reading the store: a fresh copy of ``seeded_from``'s store holds what that run's completed
    index phase recorded; a run's own store, in a rerun in place, what its last completed index
    phase recorded (an attempt that died since leaves no completed phase). None otherwise: a
    forced phase, a server store (other runs write it), files without row hashes."""
    if ctx.force:
        return None
    if seeded_from is not None:
        rows = (
            _rows_of(previous)
            if _holds(previous, seeded_from)
            else stored_rows(seeded_from, completed_phase(seeded_from, "index"))
        )
    elif run_store_path(ctx.config.index.vector_db, ctx.layout) is not None:
        rows = committed
    else:
        rows = None
    if rows is None or any(row.row is None for row in rows.values()):
        return None
    return {sid: row.row for sid, row in rows.items() if row.row is not None}


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


def _model_details(embedder: Embedder, executor: Executor) -> dict[str, Any]:
    """The phase's details on the model: its id, the hash of its weights and how it ran."""
    return {
        "model": embedder.model_id,
        "model_sha256": _model_hash(embedder.model_id),
        **_backend_details(embedder, executor),
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
        from indexfoundry.backends.embedding.local import LOCAL_MODEL_SHA256

        return LOCAL_MODEL_SHA256
    return None
