"""The normalize tools: ``indexfoundry_normalize_chunk``, ``_enrich`` and ``_dedupe``.

Each works on one run's files under the run lock, writes its artifacts atomically and records
them in the run manifest's ``normalize`` entry, so the later phases see the new chunks (the
index phase's inputs change) and a later ``indexfoundry normalize`` rerun from the pipeline
config does not mistake tool output for its own (the fingerprint changes). Repeating a call
with the same inputs and options is skipped (``skipped: true``) unless ``force``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from indexfoundry.app.tools.registry import tool
from indexfoundry.errors import ConfigInvalid, NotFound
from indexfoundry.models.artifacts import ChunkStatsReport, DedupeReport, EnrichmentReport, VersionedArtifact
from indexfoundry.models.base import Strict, config_field
from indexfoundry.models.config import ChunkStrategy, DedupeOptions, EnrichRules, ExtractConfig, NormalizeConfig
from indexfoundry.models.ids import RunId
from indexfoundry.models.records import DocumentChunk, ExtractedDocument
from indexfoundry.pipeline.session import RunSession
from indexfoundry.storage.artifacts import read_artifact_data, write_artifact
from indexfoundry.storage.atomic import atomic_write_jsonl, iter_jsonl
from indexfoundry.storage.hashing import sha256_file, sha256_json
from indexfoundry.storage.layout import RunLayout
from indexfoundry.storage.workcache import WorkCache

_DEFAULT_CHUNKS = "normalized/chunks.jsonl"


# ------------------------------------------------------------------ inputs (the catalogue's schemas)
class NormalizeChunkInput(Strict):
    """Input of ``indexfoundry_normalize_chunk``."""

    run_id: RunId = Field(description="Run directory to work in")
    input_paths: list[str] = Field(
        description="Paths to extracted text files (relative to the run folder); an empty list means every "
        "extracted document"
    )
    # Constraints and defaults come from NormalizeConfig (one truth); descriptions are the tool's own.
    strategy: ChunkStrategy = config_field(NormalizeConfig, "chunk_strategy")
    max_chars: int = config_field(NormalizeConfig, "max_chars")
    min_chars: int = config_field(NormalizeConfig, "min_chars")
    overlap_chars: int = config_field(NormalizeConfig, "overlap_chars", description="Character overlap between chunks")
    split_hierarchy: list[str] = config_field(
        NormalizeConfig, "split_hierarchy", description="Separator hierarchy for recursive splitting"
    )
    force: bool = Field(default=False, description="Re-chunk even if the same chunks exist")


class NormalizeEnrichInput(Strict):
    """Input of ``indexfoundry_normalize_enrich``."""

    run_id: RunId = Field(description="Run directory to work in")
    chunks_path: str = Field(default=_DEFAULT_CHUNKS, description="Chunks file, relative to the run folder")
    rules: EnrichRules = Field(description="Enrichment rules (no LLM)")
    force: bool = Field(default=False, description="Enrich again even if these rules were just applied")


class NormalizeDedupeInput(Strict):
    """Input of ``indexfoundry_normalize_dedupe``."""

    run_id: RunId = Field(description="Run directory to work in")
    chunks_path: str = Field(default=_DEFAULT_CHUNKS, description="Chunks file, relative to the run folder")
    method: Literal["exact", "simhash", "minhash"] = config_field(
        DedupeOptions, "method", description="Deduplication method"
    )
    similarity_threshold: float = config_field(
        DedupeOptions,
        "similarity_threshold",
        description="For fuzzy methods: minimum similarity to consider duplicate",
    )
    scope: Literal["global", "per_document"] = config_field(
        DedupeOptions, "scope", description="Dedupe across all docs or within each doc"
    )
    force: bool = Field(default=False, description="Dedupe again even if this was just done")


# ------------------------------------------------------------------ outputs
class ChunkStats(Strict):
    documents_processed: int = Field(description="Documents chunked")
    chunks_created: int = Field(description="Chunks written")
    chunks_below_min: int = Field(description="Chunks shorter than min_chars (warning: very small chunks)")
    chunks_at_max: int = Field(description="Chunks hard-cut at max_chars (no separator left)")
    avg_chunk_chars: float = Field(description="Mean characters per chunk")
    total_chars: int = Field(description="Characters in all chunks")


class ChunkerConfig(Strict):
    strategy: ChunkStrategy = Field(description="Chunking strategy")
    max_chars: int = Field(description="Maximum characters per chunk")
    min_chars: int = Field(description="Minimum characters per chunk")
    overlap_chars: int = Field(description="Overlap between chunks")
    split_hierarchy: list[str] = Field(description="Separators for recursive splitting")
    merge_short_sections: bool = Field(description="by_heading: short sections merged into their parent")
    config_hash: str = Field(description="SHA-256 of the settings above")


class NormalizeChunkOutput(Strict):
    success: bool = Field(description="Whether chunking succeeded")
    output_path: str = Field(description="The chunks file written")
    stats: ChunkStats
    chunker_config: ChunkerConfig
    skipped: bool = Field(default=False, description="True if the same chunks already existed and !force")
    errors: list[str] = Field(default_factory=list, description="Documents that could not be chunked")


class EnrichStats(Strict):
    chunks: int = Field(description="Chunks read")
    chunks_enriched: int = Field(description="Chunks whose metadata changed")
    languages: dict[str, int] = Field(description="Chunks per detected language (ISO 639-1)")
    tags: dict[str, int] = Field(description="Chunks per tag")
    sections: dict[str, int] = Field(description="Chunks per matched section pattern")
    dates_found: int = Field(description="Dates extracted")


class NormalizeEnrichOutput(Strict):
    success: bool = Field(description="Whether enrichment succeeded")
    output_path: str = Field(description="The chunks file, rewritten with enriched metadata")
    stats: EnrichStats
    enrichment_report_path: str = Field(description="metadata_enrichment.json")
    skipped: bool = Field(default=False, description="True if these rules were just applied and !force")


class DedupeStats(Strict):
    input_chunks: int = Field(description="Chunks read")
    output_chunks: int = Field(description="Chunks kept")
    duplicates_removed: int = Field(description="Chunks removed")
    duplicate_groups: int = Field(description="Groups of duplicates found")


class DedupeOutput(Strict):
    success: bool = Field(description="Whether dedupe succeeded")
    output_path: str = Field(description="The chunks file, rewritten without duplicates")
    stats: DedupeStats
    dedupe_report_path: str = Field(description="Detailed report of what was removed")
    skipped: bool = Field(default=False, description="True if this dedupe was just done and !force")


# ------------------------------------------------------------------ helpers
def _layout(run_id: str, runs_dir: str | Path | None) -> RunLayout:
    from indexfoundry.app.runs import runs_dir_for

    return RunLayout.existing(runs_dir_for(runs_dir), run_id)


def _chunks_file(layout: RunLayout, relative: str) -> Path:
    path = layout.root / layout.resolve_inside(relative).relative_to(layout.root.resolve())
    if not path.is_file():
        raise NotFound(
            f"chunks file '{relative}' does not exist in run {layout.run_id}",
            suggestion="Run indexfoundry_normalize_chunk first",
        )
    return path


def _read_chunks(path: Path) -> list[DocumentChunk]:
    return [DocumentChunk.model_validate(row) for row in iter_jsonl(path)]


def _previous(path: Path, model: type[VersionedArtifact]) -> dict[str, Any]:
    return read_artifact_data(path, model) if path.is_file() else {}


def _record(session: RunSession, tool_name: str, key: str, written: list[Path], chunk_count: int) -> None:
    """Record the artifacts a tool wrote in the manifest's ``normalize`` entry."""
    from indexfoundry.phases.normalize import NormalizePhase

    session.record_tool(NormalizePhase(), "extract", tool_name, key, written, chunk_count, session.layout.chunks)


def _run_extract_config(layout: RunLayout) -> ExtractConfig:
    """The run's extraction settings (their limits bound chunking too); defaults without a config."""
    from indexfoundry.storage.manifest import load_run_config

    if not layout.config.is_file():
        return ExtractConfig()
    return load_run_config(layout).extract


# ------------------------------------------------------------------ tools
def _select_documents(layout: RunLayout, input_paths: list[str]) -> list[ExtractedDocument]:
    if not layout.documents.is_file():
        raise ConfigInvalid(
            f"run {layout.run_id} has no extracted documents",
            suggestion=f"Run 'indexfoundry extract --run-id {layout.run_id}' first",
        )
    documents = [ExtractedDocument.model_validate(row) for row in iter_jsonl(layout.documents)]
    if not input_paths:
        return documents
    by_path = {(layout.root / d.text_path).resolve(): d for d in documents}
    selected: dict[Path, ExtractedDocument] = {}
    for relative in input_paths:
        path = layout.resolve_inside(relative)
        doc = by_path.get(path)
        if doc is None:
            raise NotFound(
                f"'{relative}' is not an extracted text file of run {layout.run_id}",
                suggestion="Pass paths like extracted/<sha256>.txt listed in extracted/documents.jsonl",
            )
        selected[path] = doc
    order = {d.doc_id: i for i, d in enumerate(documents)}
    return sorted(selected.values(), key=lambda d: order[d.doc_id])


@tool(
    "indexfoundry_normalize_chunk",
    NormalizeChunkInput,
    read_only=False,
    destructive=False,
    idempotent=True,
    open_world=False,
)
def normalize_chunk(payload: NormalizeChunkInput, runs_dir: str | Path | None = None, **_: Any) -> NormalizeChunkOutput:
    """Deterministic text chunking with multiple strategies (fixed_chars, by_paragraph, by_heading,
    by_page, by_sentence, recursive); writes normalized/chunks.jsonl with DocumentChunk records."""
    from indexfoundry.phases.normalize.build import chunk_documents, chunk_limits, chunk_stats, chunker_config

    if payload.overlap_chars >= payload.max_chars:
        raise ConfigInvalid("overlap_chars must be smaller than max_chars", suggestion="Lower overlap_chars")
    config = NormalizeConfig(
        chunk_strategy=payload.strategy,
        max_chars=payload.max_chars,
        min_chars=payload.min_chars,
        overlap_chars=payload.overlap_chars,
        split_hierarchy=payload.split_hierarchy,
    )
    layout = _layout(payload.run_id, runs_dir)
    settings = chunker_config(config)
    with RunSession.open(layout) as session:
        documents = _select_documents(layout, payload.input_paths)
        key = sha256_json({"config": settings["config_hash"], "inputs": [[d.doc_id, d.text_sha256] for d in documents]})
        previous = _previous(layout.chunk_stats, ChunkStatsReport)
        if (
            not payload.force
            and previous.get("tool_key") == key
            and layout.chunks.is_file()
            and previous.get("output_sha256") == sha256_file(layout.chunks)
        ):
            return NormalizeChunkOutput(
                success=True,
                output_path=str(layout.chunks),
                stats=ChunkStats.model_validate(previous["stats"]),
                chunker_config=ChunkerConfig.model_validate(previous["chunker_config"]),
                skipped=True,
            )
        errors: list[str] = []
        result = chunk_documents(
            layout,
            documents,
            config,
            on_error=lambda doc, error: errors.append(f"{doc.uri}: {error.one_line()}"),
            limits=chunk_limits(_run_extract_config(layout)),
        )
        stats = chunk_stats(result.documents, result.chunks, config, result.hard_cuts)
        layout.normalized_dir.mkdir(parents=True, exist_ok=True)
        atomic_write_jsonl(layout.chunks, result.chunks)
        write_artifact(
            layout.chunk_stats,
            ChunkStatsReport(
                stats=stats, chunker_config=settings, tool_key=key, output_sha256=sha256_file(layout.chunks)
            ),
        )
        _record(session, "indexfoundry_normalize_chunk", key, [layout.chunks, layout.chunk_stats], len(result.chunks))
    return NormalizeChunkOutput(
        success=not errors or bool(result.chunks),
        output_path=str(layout.chunks),
        stats=ChunkStats.model_validate(stats),
        chunker_config=ChunkerConfig.model_validate(settings),
        errors=errors,
    )


@tool(
    "indexfoundry_normalize_enrich",
    NormalizeEnrichInput,
    read_only=False,
    destructive=False,
    idempotent=True,
    open_world=False,
)
def normalize_enrich(
    payload: NormalizeEnrichInput, runs_dir: str | Path | None = None, **_: Any
) -> NormalizeEnrichOutput:
    """Rule-based metadata enrichment (no LLM): language (ISO 639-1), regex tags, section patterns,
    ISO 8601 dates and taxonomy tags, written into each chunk's metadata."""
    from indexfoundry.phases.normalize.enrich import compile_sections, compile_tags, enrich_chunks

    compile_tags(payload.rules)  # invalid regexes fail before any work
    compile_sections(payload.rules)
    layout = _layout(payload.run_id, runs_dir)
    with RunSession.open(layout) as session:
        path = _chunks_file(layout, payload.chunks_path)
        key = sha256_json({"rules": payload.rules.model_dump(mode="json"), "chunks_path": payload.chunks_path})
        previous = _previous(layout.enrichment_report, EnrichmentReport)
        if not payload.force and previous.get("tool_key") == key and previous.get("output_sha256") == sha256_file(path):
            return NormalizeEnrichOutput(
                success=True,
                output_path=str(path),
                stats=_enrich_stats(previous),
                enrichment_report_path=str(layout.enrichment_report),
                skipped=True,
            )
        input_sha = sha256_file(path)
        with WorkCache.for_runs(layout.runs_dir) as cache:
            chunks, report = enrich_chunks(_read_chunks(path), payload.rules, cache=cache)
        atomic_write_jsonl(path, chunks)
        report.update({"tool_key": key, "input_sha256": input_sha, "output_sha256": sha256_file(path)})
        write_artifact(layout.enrichment_report, EnrichmentReport.model_validate(report))
        _record(session, "indexfoundry_normalize_enrich", key, [path, layout.enrichment_report], len(chunks))
    return NormalizeEnrichOutput(
        success=True,
        output_path=str(path),
        stats=_enrich_stats(report),
        enrichment_report_path=str(layout.enrichment_report),
    )


def _enrich_stats(report: dict[str, Any]) -> EnrichStats:
    return EnrichStats(
        chunks=report["chunks"],
        chunks_enriched=report["chunks_enriched"],
        languages=report["languages"],
        tags=report["tags"],
        sections=report["sections"],
        dates_found=report["dates_found"],
    )


@tool(
    "indexfoundry_normalize_dedupe",
    NormalizeDedupeInput,
    read_only=False,
    destructive=True,
    idempotent=True,
    open_world=False,
)
def normalize_dedupe(payload: NormalizeDedupeInput, runs_dir: str | Path | None = None, **_: Any) -> DedupeOutput:
    """Deterministic deduplication by exact text hash, simhash or minhash (datasketch LSH); the first
    chunk of each group in document order is kept; dedupe_report.json lists every removed chunk."""
    from indexfoundry.phases.normalize.dedupe import dedupe_chunks

    options = DedupeOptions(
        method=payload.method, similarity_threshold=payload.similarity_threshold, scope=payload.scope
    )
    layout = _layout(payload.run_id, runs_dir)
    with RunSession.open(layout) as session:
        path = _chunks_file(layout, payload.chunks_path)
        key = sha256_json({"options": options.model_dump(mode="json"), "chunks_path": payload.chunks_path})
        previous = _previous(layout.dedupe_report, DedupeReport)
        if not payload.force and previous.get("tool_key") == key and previous.get("output_sha256") == sha256_file(path):
            return DedupeOutput(
                success=True,
                output_path=str(path),
                stats=DedupeStats.model_validate(previous["stats"]),
                dedupe_report_path=str(layout.dedupe_report),
                skipped=True,
            )
        input_sha = sha256_file(path)
        kept, report = dedupe_chunks(_read_chunks(path), options)
        atomic_write_jsonl(path, kept)
        report.update({"tool_key": key, "input_sha256": input_sha, "output_sha256": sha256_file(path)})
        write_artifact(layout.dedupe_report, DedupeReport.model_validate(report))
        _record(session, "indexfoundry_normalize_dedupe", key, [path, layout.dedupe_report], len(kept))
    return DedupeOutput(
        success=True,
        output_path=str(path),
        stats=DedupeStats.model_validate(report["stats"]),
        dedupe_report_path=str(layout.dedupe_report),
    )
