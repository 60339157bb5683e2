"""The extract section of a pipeline config: how raw files become text."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from indexfoundry.models.base import Strict


class ExtractConfig(Strict):
    pdf_mode: Literal["layout", "plain", "ocr"] = Field(default="layout", description="PDF extraction mode")
    preserve_headings: bool = Field(default=True, description="Keep headings as markdown")
    preserve_links: bool = Field(default=False, description="Keep links as [text](url)")
    preserve_tables: bool = Field(default=True, description="Convert tables to markdown")
    remove_selectors: list[str] = Field(default_factory=list, description="CSS selectors removed from HTML")
    ocr_language: str = Field(default="eng", description="Tesseract language code")
    csv_preview_rows: int = Field(default=100, ge=1, le=1000, description="Rows of a CSV put in its text")
    pdf_password_env: str | None = Field(
        default=None, description="Environment variable holding the password of encrypted PDFs"
    )
    ocr_fallback: bool = Field(
        default=True, description="OCR the PDF pages that have images but no text layer (needs tesseract)"
    )
    ocr_dpi: int = Field(default=300, ge=72, le=600, description="Resolution PDF pages are rendered at for OCR")
    include_headers_footers: bool = Field(default=False, description="docx: include page headers and footers")
    workers: int | None = Field(
        default=None, ge=0, le=64, description="Extraction worker processes (default: CPU cores; 0: in-process)"
    )
    timeout_s: float = Field(
        default=300, gt=0, le=86400, description="Time limit per document; over it the document is a PARSE_ERROR"
    )
    memory_mb: int = Field(
        default=2048, ge=256, le=65536, description="Memory limit per worker; over it the document is a PARSE_ERROR"
    )
