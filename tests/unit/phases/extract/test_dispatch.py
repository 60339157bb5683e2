"""Choosing the extractor (``phases/extract/dispatch.py``): by content type, or by the caller's hint."""

from __future__ import annotations

import json

import pytest

from indexfoundry.models.config import PipelineConfig
from indexfoundry.models.records import RawRecord
from indexfoundry.phases.extract import ExtractOptions, Unsupported
from indexfoundry.phases.extract.dispatch import extract_by_type

CONFIG = PipelineConfig.model_validate({"connect": {"sources": [{"type": "folder", "path": "docs"}]}})


def _raw(content_type: str, ext: str) -> RawRecord:
    return RawRecord(
        uri=f"docs/file.{ext}",
        sha256="0" * 64,
        size_bytes=0,
        content_type=content_type,
        ext=ext,
        path=f"raw/{'0' * 64}.{ext}",
        source_kind="folder",
        source_name="docs",
    )


def test_markdown_is_read_with_its_front_matter_and_headings_and_plain_text_as_is():
    data = b"---\ntitle: Guide\n---\n# Install\n\nRun it.\n"
    (doc,) = extract_by_type(data, _raw("text/markdown; charset=utf-8", "md"), CONFIG)
    assert doc.format == "markdown" and doc.title == "Guide" and doc.metadata == {"title": "Guide"}
    assert [h.text for h in doc.headings or []] == ["Install"]
    (text,) = extract_by_type(data, _raw("text/plain", "txt"), CONFIG)
    assert text.format == "txt" and text.text == data.decode() and text.headings == []
    assert text.metadata["encoding"]


def test_a_format_hint_wins_over_the_content_type():
    data = b"# Not a heading in plain text\n"
    (doc,) = extract_by_type(data, _raw("text/markdown", "md"), CONFIG, ExtractOptions(format_hint="txt"))
    assert doc.format == "txt" and doc.headings == []


def test_a_json_hint_on_json_lines_reads_them_as_json_lines_not_as_one_json_document():
    data = b"".join(json.dumps({"id": n, "text": f"record {n}"}).encode() + b"\n" for n in range(3))
    (doc,) = extract_by_type(data, _raw("application/x-ndjson", "jsonl"), CONFIG, ExtractOptions(format_hint="json"))
    assert doc.format == "json" and doc.metadata["records"] == 3
    assert all(f"record {n}" in doc.text for n in range(3))


def test_a_type_without_an_extractor_is_unsupported_not_an_error():
    with pytest.raises(Unsupported, match="image/png"):
        extract_by_type(b"\x89PNG\r\n", _raw("image/png", "png"), CONFIG)
