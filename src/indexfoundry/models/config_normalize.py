"""The normalize section of a pipeline config: chunking, deduplication and enrichment."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from indexfoundry.models.base import Strict

ChunkStrategy = Literal["fixed_chars", "by_paragraph", "by_heading", "by_page", "by_sentence", "recursive"]


class DedupeOptions(Strict):
    method: Literal["exact", "simhash", "minhash"] = Field(default="exact", description="Dedupe method")
    similarity_threshold: float = Field(default=0.95, ge=0.8, le=1.0, description="Fuzzy threshold")
    scope: Literal["global", "per_document"] = Field(default="global", description="Dedupe scope")


class RegexTag(Strict):
    pattern: str = Field(description="Regex with a capture group")
    tag_name: str = Field(description="Tag name")
    flags: str = Field(default="gi", description="Regex flags")


class SectionPattern(Strict):
    pattern: str = Field(description="Regex matched against chunk text")
    section_name: str = Field(description="Section assigned when it matches")


class EnrichRules(Strict):
    detect_language: bool = Field(default=True, description="Detect each chunk's language")
    regex_tags: list[RegexTag] = Field(default_factory=list, description="Extract tags via regex")
    section_patterns: list[SectionPattern] = Field(default_factory=list, description="Section detection")
    extract_dates: bool = Field(default=False, description="Extract dates (ISO 8601)")
    taxonomy: dict[str, list[str]] = Field(default_factory=dict, description="Category -> terms")


class NormalizeConfig(Strict):
    chunk_strategy: ChunkStrategy = Field(default="recursive", description="Chunking strategy")
    max_chars: int = Field(default=1500, ge=100, le=10000, description="Maximum characters per chunk")
    max_tokens: int | None = Field(
        default=None,
        ge=16,
        le=100000,
        description=(
            "Maximum tokens of a chunk's embedded text (breadcrumb included), counted with the embedding "
            "model's tokenizer; longer chunks are split further (never above the model's window, 256 for "
            "local and local-int8). Default: no split; chunks over the window are counted and warned about"
        ),
    )
    min_chars: int = Field(default=100, ge=50, le=500, description="Minimum characters per chunk")
    overlap_chars: int = Field(default=150, ge=0, le=500, description="Overlap between chunks")
    split_hierarchy: list[str] = Field(
        default_factory=lambda: ["\n\n", "\n", ". ", " "], description="Separators for recursive splitting"
    )
    merge_short_sections: bool = Field(
        default=True, description="by_heading: merge sections under min_chars into their parent"
    )
    dedupe: bool | DedupeOptions = Field(default=True, description="Deduplicate chunks")
    detect_language: bool = Field(default=True, description="Detect each chunk's language")
    enrich: EnrichRules | None = Field(default=None, description="Rule-based enrichment")
