"""Content records written by the phases: raw files, extracted documents, chunks, embeddings.

Content records hold no timestamps and no run ids (those live in manifests), so two runs
over the same inputs write byte-identical artifacts.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from indexfoundry.models.base import Strict

SourceKind = Literal["url", "sitemap", "folder", "pdf", "crawl", "repo", "llms_txt"]
DocFormat = Literal["pdf", "html", "csv", "markdown", "docx", "txt", "json", "url", "repo"]


class RawRecord(Strict):
    """One line of ``raw/raw_manifest.jsonl``: a fetched or copied source file."""

    uri: str = Field(description="Where the bytes came from: a URL, or '<source name>/<relative path>'")
    sha256: str = Field(description="SHA-256 of the raw bytes")
    size_bytes: int = Field(description="Size of the raw bytes")
    content_type: str = Field(description="MIME type, from headers and sniffed from the bytes")
    ext: str = Field(description="File extension of the stored artifact, following the real type")
    path: str = Field(description="Artifact path relative to the run folder (raw/<sha256>.<ext>)")
    source_kind: SourceKind = Field(description="Kind of source that produced this file")
    source_name: str = Field(description="Name of the configured source")
    relative_path: str | None = Field(default=None, description="Path inside a folder source")
    etag: str | None = Field(default=None, description="HTTP ETag, for conditional re-fetching")
    last_modified: str | None = Field(default=None, description="HTTP Last-Modified header")
    extract_options: dict[str, Any] | None = Field(
        default=None, description="Per-source extraction options (e.g. records splitting)"
    )
    commit: str | None = Field(default=None, description="repo sources: the commit the file was read at")


class Heading(Strict):
    """A heading found in an extracted document, with its position in the extracted text."""

    level: int = Field(ge=1, le=6, description="Heading level, 1 for '#'")
    text: str = Field(description="Heading text without markup")
    byte_start: int = Field(ge=0, description="UTF-8 byte offset of the heading line in the text")
    line: int = Field(ge=1, description="1-based line number of the heading line")


class ExtractedDocument(Strict):
    """One line of ``extracted/documents.jsonl``: a document ready for chunking."""

    doc_id: str = Field(description="Stable id: SHA-256 of the source content and its uri")
    uri: str = Field(description="Where the source came from")
    format: DocFormat = Field(description="Detected document format")
    content_hash: str = Field(description="SHA-256 of the raw bytes")
    content_type: str = Field(description="MIME type of the source")
    text_path: str = Field(description="Extracted text file, relative to the run folder")
    text_sha256: str = Field(description="SHA-256 of the extracted text (UTF-8)")
    char_count: int = Field(description="Characters in the extracted text")
    title: str | None = Field(default=None, description="Document title, when one was found")
    headings: list[Heading] = Field(default_factory=list, description="Headings in text order")
    pages_path: str | None = Field(default=None, description="Per-page JSONL, for paged formats")
    page_count: int | None = Field(default=None, description="Number of pages, for paged formats")
    record_id: str | None = Field(default=None, description="Record id, for records split from csv/jsonl")
    metadata: dict[str, Any] = Field(default_factory=dict, description="Front matter and format metadata")
    commit: str | None = Field(default=None, description="repo sources: the commit the file was read at")


class PageExtraction(Strict):
    """One line of ``extracted/<sha256>.pages.jsonl``."""

    page: int = Field(ge=1, description="1-based page number")
    text: str = Field(description="Text of the page")
    char_count: int = Field(description="Characters on the page")
    is_empty: bool = Field(description="No text on this page")
    ocr_used: bool = Field(description="Text came from OCR")
    confidence: float | None = Field(default=None, description="Mean OCR confidence (0-100)")


class ChunkSource(Strict):
    """Where a chunk's document came from."""

    type: DocFormat = Field(description="Document format")
    uri: str = Field(description="Original location")
    content_hash: str = Field(description="SHA-256 of the raw bytes")
    record_id: str | None = Field(default=None, description="Record id for records split from csv/jsonl")
    commit: str | None = Field(default=None, description="repo sources: the git commit the run read")


class ChunkContent(Strict):
    """The chunk's text and its measures."""

    text: str = Field(description="Chunk text, exactly as in the extracted document")
    text_hash: str = Field(description="SHA-256 of the text")
    char_count: int = Field(description="Characters in the text")
    token_count_approx: int = Field(description="Estimated tokens (chars/4)")


class ChunkPosition(Strict):
    """Where the chunk sits in its extracted document."""

    byte_start: int = Field(ge=0, description="UTF-8 byte offset where the chunk starts")
    byte_end: int = Field(ge=0, description="UTF-8 byte offset where the chunk ends (exclusive)")
    page: int | None = Field(default=None, description="Page number, for paged documents")
    section: str | None = Field(default=None, description="Heading of the section the chunk is in")
    line_start: int | None = Field(default=None, description="1-based first line")
    line_end: int | None = Field(default=None, description="1-based last line")
    fence: str | None = Field(
        default=None,
        description="Opener line (e.g. '```python') of the fenced code block the chunk's text begins inside "
        "without showing it (a chunk cut from a long code block): markdown renderers re-open it",
    )


class ChunkMetadata(Strict):
    """Metadata stored with the chunk and filterable in the index."""

    content_type: str = Field(description="MIME type of the source")
    language: str | None = Field(default=None, description="ISO 639-1 language code")
    title: str | None = Field(default=None, description="Document title")
    tags: list[str] | None = Field(default=None, description="Tags from enrichment")
    heading_path: str | None = Field(default=None, description="Breadcrumb: 'Guide > Config > Theme'")
    heading_level: int | None = Field(default=None, description="Level of the section heading")
    part: str | None = Field(default=None, description="Part marker like '2/3' for a split section")
    custom: dict[str, Any] | None = Field(default=None, description="Other metadata")


def chunk_field(data: dict[str, Any], dotted: str) -> Any:
    """The value at a dotted field (``source.uri``, ``metadata.heading_path``) of a chunk's JSON
    form, or None: what store metadata and search filters name."""
    value: Any = data
    for part in dotted.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


class DocumentChunk(Strict):
    """The canonical chunk record of ``normalized/chunks.jsonl``."""

    doc_id: str = Field(description="Document id")
    chunk_id: str = Field(description="SHA256(doc_id || byte_start || byte_end)")
    chunk_index: int = Field(ge=0, description="Sequential index within the document")
    source: ChunkSource
    content: ChunkContent
    position: ChunkPosition
    metadata: ChunkMetadata

    def embedding_text(self) -> str:
        """Text given to the embedder: the breadcrumb (and part marker) first, then the chunk."""
        crumb = self.metadata.heading_path
        if not crumb:
            return self.content.text
        if self.metadata.part:
            crumb = f"{crumb} [part {self.metadata.part}]"
        return f"{crumb}\n\n{self.content.text}"


class EmbeddingRecord(Strict):
    """One line of ``indexed/embeddings.jsonl``."""

    chunk_id: str = Field(description="Chunk id")
    text_hash: str = Field(description="SHA-256 of the embedded text (breadcrumb included)")
    vector: str = Field(description="Vector as base64 of little-endian float32")
    model: str = Field(description="Embedding model id")
    dimensions: int = Field(description="Vector dimensions")
    row_hash: str | None = Field(
        default=None,
        description="SHA-256 of what the vector store holds under this id (model, metadata, stored text): "
        "a run starting from a copy of this run's store rewrites only the rows whose hash differs",
    )
    chunk_line: str | None = Field(
        default=None,
        description="SHA-256 of the chunk's line in normalized/chunks.jsonl that this row was made from: "
        "a rerun whose chunk has the same line, settings and model keeps the row as it is",
    )
