"""Choose the extractor for a raw file from its content type (or the configured format hint)."""

from __future__ import annotations

from indexfoundry.models.config import PipelineConfig
from indexfoundry.models.records import RawRecord
from indexfoundry.phases.extract import ExtractedText, Unsupported
from indexfoundry.phases.extract.markdown import extract_markdown
from indexfoundry.phases.extract.text import decode_text

TEXT_TYPES = {"text/plain"}
MARKDOWN_TYPES = {"text/markdown"}


def extract_by_type(data: bytes, raw: RawRecord, config: PipelineConfig) -> list[ExtractedText]:
    """Run the extractor that fits ``raw.content_type``."""
    ctype = raw.content_type
    if ctype in MARKDOWN_TYPES:
        text, _ = decode_text(data, uri=raw.uri)
        body, front, headings, title = extract_markdown(text)
        return [ExtractedText(text=body, format="markdown", title=title, headings=headings, metadata=front)]
    if ctype in TEXT_TYPES:
        text, encoding = decode_text(data, uri=raw.uri)
        return [ExtractedText(text=text, format="txt", headings=[], metadata={"encoding": encoding})]
    raise Unsupported(f"no extractor for content type {ctype}")
