"""Typed, versioned models of the JSON artifacts a run writes besides its manifest.

Every one carries ``schema_version``; ``storage/artifacts.py`` writes and reads them (a file
from a newer IndexFoundry is refused with one clear error). Field order and ``None`` values
are kept as written before the models existed, so existing fields stay byte-identical.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field

from indexfoundry.models.base import Strict


class VersionedArtifact(Strict):
    """Base of a versioned artifact: ``SCHEMA_VERSION`` is the newest format this code reads."""

    SCHEMA_VERSION: ClassVar[int] = 1
    ARTIFACT: ClassVar[str] = "artifact"

    schema_version: int = Field(default=1, description="Format version of this file")


class VectorManifest(VersionedArtifact):
    """``indexed/vector_manifest.json``: where a run's vectors are and what produced them."""

    ARTIFACT: ClassVar[str] = "vector_manifest.json"

    collection: str = Field(description="Collection (or index/table) name")
    namespace: str | None = Field(default=None, description="Namespace inside the collection")
    model_used: str = Field(description="Embedding model id")
    dimensions: int = Field(description="Vector dimensions")
    metadata_schema: list[str] = Field(default_factory=list, description="Metadata fields stored with each vector")
    store_text: bool = Field(default=True, description="Whether chunk texts are stored with the vectors")
    store: dict[str, Any] = Field(default_factory=dict, description="Where the store is (no secrets)")
    vectors: int = Field(description="Vectors of the run (a long chunk's windows included)")
    chunks_in_windows: int | None = Field(
        default=None, description="Chunks longer than the model's window, embedded in windows too (index.long_chunks)"
    )


class UpsertChanges(Strict):
    """Vectors changed relative to the run's last committed index (or sent, for the tool)."""

    vectors: int | None = Field(default=None, description="Vectors of the run")
    vectors_sent: int | None = Field(default=None, description="Vectors written to the store")
    vectors_inserted: int = Field(description="New vectors")
    vectors_updated: int = Field(description="Vectors rewritten")
    vectors_unchanged: int = Field(description="Vectors left alone")
    vectors_pruned: int = Field(description="Vectors removed (no longer in the run)")
    vectors_failed: int = Field(default=0, description="Vectors that could not be written")


class UpsertStats(VersionedArtifact):
    """``indexed/upsert_stats.json``: what the upsert into the vector store did."""

    ARTIFACT: ClassVar[str] = "upsert_stats.json"

    stats: UpsertChanges = Field(description="Vector counts")
    upsert_mode: Literal["upsert", "insert", "replace"] = Field(description="Upsert mode used")
    batch_size: int = Field(description="Vectors per store request")
    verified: bool = Field(description="The store's ids were checked against the run")
    extra_ids: int = Field(description="Store ids that are not the run's (insert mode: other runs')")


class FrozenConfigFile(VersionedArtifact):
    """``config.json``: the run's frozen pipeline config, plus its ``schema_version``.

    Only the version is modelled here; the rest is a ``PipelineConfig`` (``storage.manifest``).
    """

    ARTIFACT: ClassVar[str] = "config.json"


class ToolBookkeeping(VersionedArtifact):
    """What a step-by-step tool adds to a report so an identical second call is skipped."""

    tool_key: str | None = Field(default=None, description="Hash of the tool call that wrote the file")
    input_sha256: str | None = Field(default=None, description="SHA-256 of the file the tool read")
    output_sha256: str | None = Field(default=None, description="SHA-256 of the file the tool wrote")


class ExtractionReport(VersionedArtifact):
    """``extracted/extraction_report.json``: what the extract phase (or its tools) did."""

    ARTIFACT: ClassVar[str] = "extraction_report.json"

    extractor_versions: dict[str, str] = Field(default_factory=dict, description="Extractor library versions")
    pdf_mode: str | None = Field(default=None, description="PDF extraction mode")
    documents_extracted: int | None = Field(default=None, description="Documents written")
    documents_by_format: dict[str, int] | None = Field(default=None, description="Documents per format")
    files_failed: int | None = Field(default=None, description="Raw files that failed")
    failures: list[dict[str, Any]] | None = Field(default=None, description="Each failure: uri, code, message")
    files_skipped: list[dict[str, Any]] | None = Field(default=None, description="Raw files skipped, and why")
    chars_extracted: int | None = Field(default=None, description="Characters extracted")
    pdf: dict[str, Any] | None = Field(default=None, description="PDF figures (pages, OCR)")
    warnings: list[str] | None = Field(default=None, description="Warnings, 'uri: message'")
    tool_runs: dict[str, dict[str, Any]] | None = Field(
        default=None, description="Extract tools' calls by raw uri (key, files, result), for skipping"
    )


class ChunkStatsReport(ToolBookkeeping):
    """``normalized/chunk_stats.json``: chunk counts and sizes, and the chunker settings."""

    ARTIFACT: ClassVar[str] = "chunk_stats.json"

    stats: dict[str, Any] = Field(description="Chunk figures (counts, sizes, model window)")
    chunker_config: dict[str, Any] = Field(description="Chunker settings used")


class DedupeReport(ToolBookkeeping):
    """``normalized/dedupe_report.json``: every removed chunk and the chunk it duplicated."""

    ARTIFACT: ClassVar[str] = "dedupe_report.json"

    method: str | None = Field(default=None, description="exact, minhash or embedding (None: dedupe off)")
    scope: str | None = Field(default=None, description="global or per document")
    similarity_threshold: float | None = Field(default=None, description="Near-duplicate threshold")
    stats: dict[str, int] = Field(description="input_chunks, output_chunks, duplicates_removed, duplicate_groups")
    removed: list[dict[str, Any]] = Field(default_factory=list, description="Removed chunks")
    groups: list[dict[str, Any]] = Field(default_factory=list, description="Kept chunk and its removed duplicates")


class EnrichmentReport(ToolBookkeeping):
    """``normalized/enrichment_report.json``: what metadata enrichment added."""

    ARTIFACT: ClassVar[str] = "enrichment_report.json"

    rules: dict[str, Any] = Field(default_factory=dict, description="Enrichment rules applied")
    detect_language: bool = Field(default=False, description="Whether languages were detected")
    language_detector: str | None = Field(default=None, description="Language detector used")
    chunks: int = Field(description="Chunks read")
    chunks_enriched: int = Field(description="Chunks whose metadata changed")
    languages: dict[str, int] = Field(default_factory=dict, description="Chunks per detected language")
    tags: dict[str, int] = Field(default_factory=dict, description="Chunks per tag")
    sections: dict[str, int] = Field(default_factory=dict, description="Chunks per matched section rule")
    dates_found: int = Field(default=0, description="Dates found")
