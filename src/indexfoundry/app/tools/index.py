"""The index tools: ``indexfoundry_index_embed`` and ``indexfoundry_index_upsert``,
plus ``verify_run`` (``indexfoundry index verify``).

The tools run the same functions as the index phase (``embed_chunks``, ``upsert_chunks``) on
one run's files, under the run lock, with the settings given in the call instead of the run's
config. They write the run's index artifacts; the run manifest's ``index`` entry is written
only by the phase runner (``indexfoundry index --run-id ID``).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from indexfoundry.app.tools.registry import tool
from indexfoundry.errors import ConfigInvalid, NotFound
from indexfoundry.models.artifacts import UpsertStats as UpsertStatsFile
from indexfoundry.models.base import Strict, config_field
from indexfoundry.models.config import IndexConfig, RetryConfig, VectorDbConfig, VectorProvider
from indexfoundry.models.embedders import ToolProvider, tool_entries
from indexfoundry.models.embedding import DEFAULT_HASH_DIMENSIONS, parse_embedding_model, spec_string
from indexfoundry.models.ids import RunId
from indexfoundry.models.records import DocumentChunk, EmbeddingRecord
from indexfoundry.pipeline.session import RunSession
from indexfoundry.storage.artifacts import write_artifact
from indexfoundry.storage.atomic import iter_jsonl
from indexfoundry.storage.hashing import sha256_json
from indexfoundry.storage.layout import RunLayout

_DEFAULT_CHUNKS = "normalized/chunks.jsonl"
_DEFAULT_EMBEDDINGS = "indexed/embeddings.jsonl"
_DEFAULT_METADATA_FIELDS = ["source.uri", "source.type", "metadata.language", "position.page"]


# ------------------------------------------------------------------ inputs (the catalogue's schemas)
class EmbedModel(Strict):
    """Which model embeds the chunks."""

    provider: ToolProvider = Field(description="Embedding provider ('hash' is a deterministic test embedder)")
    model_name: str = Field(
        description=(
            "Model identifier, e.g. 'text-embedding-3-small'; for local: 'all-MiniLM-L6-v2' or "
            "'all-MiniLM-L6-v2-int8'; for sentence-transformers: a model name or local path"
        )
    )
    dimensions: int | None = Field(default=None, ge=1, description="Override output dimensions if model supports")
    api_key_env: str = Field(default="EMBEDDING_API_KEY", description="Environment variable containing the API key")
    base_url: str | None = Field(
        default=None, description="API base URL (openai: any OpenAI-compatible server; cohere: a proxy)"
    )


class IndexEmbedInput(Strict):
    """Input of ``indexfoundry_index_embed``."""

    run_id: RunId = Field(description="Run directory to work in")
    chunks_path: str = Field(default=_DEFAULT_CHUNKS, description="Chunks file, relative to the run folder")
    model: EmbedModel = Field(description="Embedding model")
    batch_size: int = Field(default=100, ge=1, le=500, description="Chunks to embed per API call")
    normalize_vectors: bool = config_field(IndexConfig, "normalize_vectors", description="L2 normalize output vectors")
    retry_config: RetryConfig | None = Field(default=None, description="Retries on 429, 5xx and timeouts")
    force: bool = Field(default=False, description="Embed again even if the embeddings file is up to date")


class UpsertConnection(Strict):
    """Where the vector store is: host, port, key variable, collection, namespace; or an embedded store's path/uri."""

    host: str | None = Field(
        default=None, description="Server host (chroma, qdrant) or index data-plane host (pinecone)"
    )
    port: int | None = Field(default=None, ge=1, le=65535, description="Server port")
    api_key_env: str | None = Field(default=None, description="Environment variable holding the server's API key")
    collection: str = Field(description="Collection/index name")
    namespace: str | None = Field(default=None, description="Namespace within collection")
    path: str | None = Field(default=None, description="Folder of an embedded store (chroma, local, qdrant local mode)")
    url: str | None = Field(default=None, description="Server URL (qdrant; weaviate REST, its gRPC on port 50051)")
    uri: str | None = Field(default=None, description="Milvus Lite file or Milvus server URI")
    token_env: str | None = Field(default=None, description="Environment variable holding a Milvus token")
    dsn: str | None = Field(default=None, description="PostgreSQL connection string without a password (pgvector)")
    dsn_env: str | None = Field(default=None, description="Environment variable holding the PostgreSQL DSN (pgvector)")


class IndexUpsertInput(Strict):
    """Input of ``indexfoundry_index_upsert``."""

    run_id: RunId = Field(description="Run directory to work in")
    embeddings_path: str = Field(default=_DEFAULT_EMBEDDINGS, description="Embeddings file, relative to the run")
    chunks_path: str = Field(default=_DEFAULT_CHUNKS, description="Chunks file, relative to the run folder")
    provider: VectorProvider = Field(description="Vector database provider")
    connection: UpsertConnection = Field(description="Connection and collection")
    metadata_fields: list[str] = Field(
        default_factory=lambda: list(_DEFAULT_METADATA_FIELDS), description="Chunk fields to store as vector metadata"
    )
    store_text: bool = Field(default=True, description="Store chunk text in vector metadata")
    upsert_mode: Literal["insert", "upsert", "replace"] = Field(default="upsert", description="How to write")
    batch_size: int = Field(default=100, ge=1, le=1000, description="Vectors per request (capped by the store)")
    force: bool = Field(default=False, description="Taken as by every tool; upserts write only what changed anyway")


# ------------------------------------------------------------------ outputs
class EmbedStats(Strict):
    chunks: int = Field(description="Chunks with a vector in the embeddings file")
    texts_embedded: int = Field(description="Texts sent to the model in this call")
    texts_from_cache: int = Field(description="Texts whose vectors came from the embedding cache")
    dimensions: int = Field(description="Vector dimensions")


class IndexEmbedOutput(Strict):
    success: bool = Field(description="Whether embedding succeeded")
    output_path: str = Field(description="The embeddings file written")
    model_used: str = Field(description="Model id recorded with every vector")
    stats: EmbedStats
    skipped: bool = Field(default=False, description="True if the embeddings were up to date and !force")


class UpsertStats(Strict):
    vectors_sent: int = Field(description="Vectors written in this call")
    vectors_inserted: int = Field(description="Vectors new to the store")
    vectors_updated: int = Field(description="Vectors rewritten because they changed")
    vectors_failed: int = Field(description="Vectors that could not be written")
    vectors_unchanged: int = Field(description="Vectors already in the store as they are")
    vectors_pruned: int = Field(description="Ids no longer in the run, removed after the upsert")
    duration_ms: int = Field(description="Wall time of the upsert")


class VectorManifestOut(Strict):
    collection: str = Field(description="Collection name")
    namespace: str | None = Field(default=None, description="Namespace within the collection")
    model_used: str = Field(description="Embedding model of the vectors")
    dimensions: int = Field(description="Vector dimensions")
    metadata_schema: list[str] = Field(description="Metadata fields stored with each vector")


class IndexUpsertOutput(Strict):
    success: bool = Field(description="Whether the upsert succeeded and the store matches the run")
    stats: UpsertStats
    vector_manifest: VectorManifestOut


class VerifyOutput(Strict):
    """``indexfoundry index verify``: the store's ids against the run's embeddings."""

    run_id: str = Field(description="Run verified")
    provider: str = Field(description="Vector store provider")
    collection: str = Field(description="Collection name")
    namespace: str | None = Field(default=None, description="Namespace within the collection")
    expected: int = Field(description="Ids in the run's indexed/embeddings.jsonl")
    present: int = Field(description="Ids in the store (namespace)")
    missing: list[str] = Field(description="Run ids the store lacks")
    extra: list[str] = Field(description="Store ids the run does not have")
    ok: bool = Field(description="True when nothing is missing or extra")


# ------------------------------------------------------------------ helpers
def _layout(run_id: str, runs_dir: str | Path | None) -> RunLayout:
    from indexfoundry.app.runs import runs_dir_for

    return RunLayout.existing(runs_dir_for(runs_dir), run_id)


def _file(layout: RunLayout, relative: str, hint: str) -> Path:
    path = layout.resolve_inside(relative)
    if not path.is_file():
        raise NotFound(f"'{relative}' does not exist in run {layout.run_id}", suggestion=hint)
    return path


def model_spec(model: EmbedModel) -> str:
    """The ``index.embedding_model`` string for a tool's model object."""
    entries = tool_entries(model.provider)
    packaged = [entry for entry in entries if entry.tool_models]
    if packaged:
        name = model.model_name.rsplit("/", 1)[-1].lower()
        for entry in packaged:
            if name in (alias.lower() for alias in entry.tool_models):
                return entry.name
        names = " or ".join(entry.tool_models[0] for entry in packaged)
        raise ConfigInvalid(
            f"unknown {model.provider} model '{model.model_name}'",
            suggestion=f"Use {names} (or provider sentence-transformers)",
        )
    if entries[0].naming == "dims":
        return spec_string(parse_embedding_model(f"{model.provider}:{model.dimensions or DEFAULT_HASH_DIMENSIONS}"))
    return spec_string(parse_embedding_model(f"{model.provider}:{model.model_name}", "model"))


def _up_to_date(path: Path, model_id: str, chunks: list[DocumentChunk]) -> bool:
    from indexfoundry.backends.embedding.windows import is_window
    from indexfoundry.storage.hashing import sha256_text

    if not path.is_file():
        return False
    wanted = {c.chunk_id: sha256_text(c.embedding_text()) for c in chunks}
    seen: dict[str, str] = {}
    for row in iter_jsonl(path):
        if row.get("model") != model_id:
            return False
        if not is_window(row["chunk_id"]):  # a long chunk's windows follow from its text
            seen[row["chunk_id"]] = row["text_hash"]
    return seen == wanted


# ------------------------------------------------------------------ tools
@tool("indexfoundry_index_embed", IndexEmbedInput, read_only=False, destructive=False, idempotent=True, open_world=True)
def index_embed(
    payload: IndexEmbedInput, runs_dir: str | Path | None = None, progress: Any = None, **_: Any
) -> IndexEmbedOutput:
    """Generate embeddings with a pinned model for a run's chunks (through the embedding cache);
    writes indexed/embeddings.jsonl (chunk id, base64 float32 vector, model, dimensions)."""
    config = IndexConfig(
        embedding_model=model_spec(payload.model),
        batch_size=payload.batch_size,
        normalize_vectors=payload.normalize_vectors,
        dimensions=None if tool_entries(payload.model.provider)[0].naming == "dims" else payload.model.dimensions,
        api_key_env=payload.model.api_key_env,
        base_url=payload.model.base_url,
        retry_config=payload.retry_config or RetryConfig(),
    )
    key = sha256_json(payload.model_dump(mode="json"))
    return embed_run(payload.run_id, payload.chunks_path, config, payload.force, key, runs_dir, progress)


def embed_run(
    run_id: str,
    chunks_path: str,
    config: IndexConfig,
    force: bool,
    key: str,
    runs_dir: str | Path | None = None,
    progress: Any = None,
) -> IndexEmbedOutput:
    """What ``indexfoundry_index_embed`` does once its model is an ``IndexConfig``; ``key`` is
    recorded in the manifest's index entry for the call."""
    from indexfoundry.backends.embedding.providers import resolve_embedder
    from indexfoundry.phases.index import IndexPhase, embed_chunks

    layout = _layout(run_id, runs_dir)
    with RunSession.open(layout) as session:
        chunks_file = _file(layout, chunks_path, "Run the normalize phase first")
        chunks = [DocumentChunk.model_validate(row) for row in iter_jsonl(chunks_file)]
        embedder = resolve_embedder(config.embedding_model, config)
        if not force and _up_to_date(layout.embeddings, embedder.model_id, chunks):
            first = next(iter_jsonl(layout.embeddings), None)
            dims = int(first["dimensions"]) if first else embedder.dimensions
            return IndexEmbedOutput(
                success=True,
                output_path=str(layout.embeddings),
                model_used=embedder.model_id,
                stats=EmbedStats(chunks=len(chunks), texts_embedded=0, texts_from_cache=0, dimensions=dims),
                skipped=True,
            )
        embedded = embed_chunks(layout, chunks, embedder, config, progress)
        # Recorded in the manifest's index entry: the next pipeline run sees the phase as changed.
        session.record_tool(
            IndexPhase(),
            "normalize",
            "indexfoundry_index_embed",
            key,
            [layout.embeddings],
            len(embedded.chunks),
            layout.embeddings,
        )
    return IndexEmbedOutput(
        success=True,
        output_path=str(layout.embeddings),
        model_used=embedded.model_id,
        stats=EmbedStats(
            chunks=len(embedded.chunks),
            texts_embedded=embedded.embedded,
            texts_from_cache=embedded.reused,
            dimensions=embedded.dimensions,
        ),
    )


def load_embedded(layout: RunLayout, embeddings_path: Path, chunks_path: Path) -> Any:
    """Rebuild what ``embed_chunks`` produced from the files it wrote."""
    from indexfoundry.backends.embedding.windows import chunk_of, is_window, window_number
    from indexfoundry.phases.index import Embedded, decode_vector

    chunks = {row["chunk_id"]: DocumentChunk.model_validate(row) for row in iter_jsonl(chunks_path)}
    records = [EmbeddingRecord.model_validate(row) for row in iter_jsonl(embeddings_path)]
    if not records:
        raise NotFound(f"run {layout.run_id} has no embeddings", suggestion="Run indexfoundry_index_embed first")
    models = {r.model for r in records}
    if len(models) != 1:
        raise ConfigInvalid(
            f"the embeddings file mixes models: {', '.join(sorted(models))}", suggestion="Embed again with one model"
        )
    unknown = [r.chunk_id for r in records if chunk_of(r.chunk_id) not in chunks]
    if unknown:
        raise NotFound(
            f"{len(unknown)} embedded chunk ids are not in the chunks file",
            suggestion="Embed the current chunks again (indexfoundry_index_embed)",
        )
    own = [r for r in records if not is_window(r.chunk_id)]
    own_ids = {r.chunk_id for r in own}
    windows: dict[str, list[str]] = {}
    # A chunk's windows in their order (#w1, #w2 ...; the file is sorted by id, so #w10 < #w2).
    for r in sorted((r for r in records if is_window(r.chunk_id)), key=lambda r: window_number(r.chunk_id)):
        windows.setdefault(chunk_of(r.chunk_id), []).append(r.text_hash)
    ordered = sorted((chunks[r.chunk_id] for r in own), key=lambda c: c.chunk_id)
    return Embedded(
        chunks=ordered,
        hashes={r.chunk_id: r.text_hash for r in own},
        vectors={r.text_hash: decode_vector(r.vector) for r in records},
        model_id=records[0].model,
        dimensions=records[0].dimensions,
        reused=0,
        embedded=0,
        windows={cid: windows[cid] for cid in sorted(windows) if cid in own_ids},
    )


@tool(
    "indexfoundry_index_upsert", IndexUpsertInput, read_only=False, destructive=True, idempotent=True, open_world=True
)
def index_upsert(
    payload: IndexUpsertInput, runs_dir: str | Path | None = None, progress: Any = None, **_: Any
) -> IndexUpsertOutput:
    """Upsert a run's vectors into a vector database (chroma, local, qdrant, milvus), prune ids no
    longer in the run once at the end, and verify the store's ids against the run."""
    conn = payload.connection.model_dump(exclude_none=True, exclude={"collection", "namespace"})
    vdb = VectorDbConfig(
        provider=payload.provider,
        collection=payload.connection.collection,
        namespace=payload.connection.namespace,
        connection=conn,
        metadata_fields=payload.metadata_fields,
        store_text=payload.store_text,
        upsert_mode=payload.upsert_mode,
        batch_size=payload.batch_size,
    )
    key = sha256_json(payload.model_dump(mode="json"))
    return upsert_run(payload.run_id, payload.embeddings_path, payload.chunks_path, vdb, key, runs_dir, progress)


def upsert_run(
    run_id: str,
    embeddings_path: str,
    chunks_path: str,
    vdb: VectorDbConfig,
    key: str,
    runs_dir: str | Path | None = None,
    progress: Any = None,
) -> IndexUpsertOutput:
    """What ``indexfoundry_index_upsert`` does once its store is a ``VectorDbConfig``; ``key`` is
    recorded in the manifest's index entry for the call."""
    from indexfoundry.backends.stores import open_store, publish
    from indexfoundry.phases.index import IndexPhase, upsert_chunks, vector_manifest

    layout = _layout(run_id, runs_dir)
    with RunSession.open(layout) as session:
        embedded = load_embedded(
            layout,
            _file(layout, embeddings_path, "Run indexfoundry_index_embed first"),
            _file(layout, chunks_path, "Run the normalize phase first"),
        )
        started = time.monotonic()
        store = open_store(vdb, layout)
        try:
            result = upsert_chunks(store, embedded, vdb, progress)
            # The step-by-step tool is its own commit point: a verified upsert is served at once.
            publish(store)
        finally:
            store.close()
        duration = int((time.monotonic() - started) * 1000)
        manifest = vector_manifest(layout, vdb, embedded)
        write_artifact(layout.upsert_stats, UpsertStatsFile.model_validate(result))
        write_artifact(layout.vector_manifest, manifest)
        session.record_tool(
            IndexPhase(),
            "normalize",
            "indexfoundry_index_upsert",
            key,
            [layout.upsert_stats, layout.vector_manifest],
            len(embedded.chunks),
            None,
        )
    return IndexUpsertOutput(
        success=True,
        stats=UpsertStats(**result["stats"], duration_ms=duration),
        vector_manifest=VectorManifestOut(
            collection=manifest.collection,
            namespace=manifest.namespace,
            model_used=manifest.model_used,
            dimensions=manifest.dimensions,
            metadata_schema=manifest.metadata_schema,
        ),
    )


def verify_run(run_id: str, runs_dir: str | Path | None = None) -> VerifyOutput:
    """Compare the run's vector store (as its config names it) with ``indexed/embeddings.jsonl``."""
    from indexfoundry.phases.index import open_run_store, verify_ids
    from indexfoundry.storage.manifest import load_run_config

    layout = _layout(run_id, runs_dir)
    embeddings = _file(layout, _DEFAULT_EMBEDDINGS, f"Run 'indexfoundry index --run-id {run_id}' first")
    wanted = {row["chunk_id"] for row in iter_jsonl(embeddings)}
    config = load_run_config(layout)
    vdb = config.index.vector_db
    store = open_run_store(layout, config)
    try:
        missing, extra = verify_ids(store, wanted)
    finally:
        store.close()
    return VerifyOutput(
        run_id=layout.run_id,
        provider=vdb.provider,
        collection=vdb.collection,
        namespace=vdb.namespace,
        expected=len(wanted),
        present=len(wanted) - len(missing) + len(extra),
        missing=missing,
        extra=extra,
        ok=not missing and not extra,
    )
