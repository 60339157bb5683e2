"""Tool inputs take their fields' constraints and defaults from the config models:
a tool's schema and the config it fills cannot drift apart."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from indexfoundry.app.tools.extract import ExtractDocumentInput, ExtractHtmlInput, ExtractPdfInput
from indexfoundry.app.tools.index import IndexEmbedInput
from indexfoundry.app.tools.normalize import NormalizeChunkInput, NormalizeDedupeInput
from indexfoundry.models.base import Strict, config_field
from indexfoundry.models.config import DedupeOptions, ExtractConfig, IndexConfig, NormalizeConfig

RUN = "0190d5a8-7c2e-7b3a-9f1e-3c4d5e6f7a8b"

DERIVED: list[tuple[type[BaseModel], str, type[BaseModel], str]] = [
    (NormalizeChunkInput, "strategy", NormalizeConfig, "chunk_strategy"),
    (NormalizeChunkInput, "max_chars", NormalizeConfig, "max_chars"),
    (NormalizeChunkInput, "min_chars", NormalizeConfig, "min_chars"),
    (NormalizeChunkInput, "overlap_chars", NormalizeConfig, "overlap_chars"),
    (NormalizeChunkInput, "split_hierarchy", NormalizeConfig, "split_hierarchy"),
    (NormalizeDedupeInput, "method", DedupeOptions, "method"),
    (NormalizeDedupeInput, "similarity_threshold", DedupeOptions, "similarity_threshold"),
    (NormalizeDedupeInput, "scope", DedupeOptions, "scope"),
    (ExtractPdfInput, "mode", ExtractConfig, "pdf_mode"),
    (ExtractPdfInput, "ocr_language", ExtractConfig, "ocr_language"),
    (ExtractHtmlInput, "preserve_headings", ExtractConfig, "preserve_headings"),
    (ExtractHtmlInput, "preserve_links", ExtractConfig, "preserve_links"),
    (ExtractHtmlInput, "preserve_tables", ExtractConfig, "preserve_tables"),
    (ExtractDocumentInput, "csv_preview_rows", ExtractConfig, "csv_preview_rows"),
    (IndexEmbedInput, "normalize_vectors", IndexConfig, "normalize_vectors"),
]


def _constraints(model: type[BaseModel], field: str) -> dict[str, Any]:
    schema = dict(model.model_json_schema()["properties"][field])
    for key in ("description", "title"):
        schema.pop(key, None)
    return schema


@pytest.mark.parametrize(("tool", "field", "config", "source"), DERIVED, ids=lambda v: v if isinstance(v, str) else "")
def test_a_tool_field_has_the_constraints_and_default_of_its_config_field(
    tool: type[BaseModel], field: str, config: type[BaseModel], source: str
):
    assert _constraints(tool, field) == _constraints(config, source)
    assert tool.model_fields[field].get_default(call_default_factory=True) == config.model_fields[source].get_default(
        call_default_factory=True
    )


def test_a_value_the_config_refuses_is_refused_by_the_tool_too():
    with pytest.raises(ValidationError):
        NormalizeConfig.model_validate({"max_chars": 50})
    with pytest.raises(ValidationError):
        NormalizeChunkInput.model_validate({"run_id": RUN, "input_paths": [], "max_chars": 50})
    chunk = NormalizeChunkInput.model_validate({"run_id": RUN, "input_paths": []})
    assert chunk.split_hierarchy == NormalizeConfig().split_hierarchy
    assert (
        chunk.split_hierarchy
        is not NormalizeChunkInput.model_validate({"run_id": RUN, "input_paths": []}).split_hierarchy
    )


def test_config_field_keeps_the_field_description_and_refuses_unknown_attributes():
    class Probe(Strict):
        overlap: int = config_field(NormalizeConfig, "overlap_chars", description="the tool's own words")

    assert Probe.model_json_schema()["properties"]["overlap"]["description"] == "the tool's own words"
    assert NormalizeConfig.model_fields["overlap_chars"].description != "the tool's own words"
    with pytest.raises(AttributeError):
        config_field(NormalizeConfig, "max_chars", not_an_attribute=1)
