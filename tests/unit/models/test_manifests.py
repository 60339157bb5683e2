"""Audit records (``models/manifests.py``): errors become records and tool errors with their code."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from indexfoundry.errors import EmbedError, IndexFoundryError
from indexfoundry.models.manifests import ErrorRecord, RunManifest, ToolError


def test_an_error_becomes_a_record_with_its_code_phase_uri_and_suggestion():
    error = EmbedError("the server said 503", recoverable=True, suggestion="Retry later")
    record = ErrorRecord.from_error(error, phase="index", uri="docs/a.md")
    assert record.model_dump() == {
        "code": "EMBED_ERROR",
        "message": "the server said 503",
        "phase": "index",
        "uri": "docs/a.md",
        "recoverable": True,
        "suggestion": "Retry later",
    }


def test_a_tool_error_carries_the_code_and_one_line_text_for_agents():
    error = IndexFoundryError("no such run", code="RUN_NOT_FOUND", suggestion="List runs")
    tool = json.loads(ToolError.from_error(error).model_dump_json())
    assert tool["isError"] is True
    assert tool["error"]["code"] == "RUN_NOT_FOUND" and tool["error"]["recoverable"] is False
    assert len(tool["content"]) == 1 and "\n" not in tool["content"][0]["text"]
    assert "RUN_NOT_FOUND" in tool["content"][0]["text"]


def test_an_error_record_with_a_code_outside_the_table_is_refused():
    with pytest.raises(ValidationError):
        ErrorRecord.model_validate({"code": "MADE_UP", "message": "x"})


def test_a_manifest_refuses_unknown_keys_and_phases():
    base = {"run_id": "r", "created_at": "t", "status": "running", "config_hash": "c", "indexfoundry_version": "0"}
    assert RunManifest.model_validate(base).schema_version >= 1
    with pytest.raises(ValidationError):
        RunManifest.model_validate({**base, "surprise": 1})
    with pytest.raises(ValidationError):
        RunManifest.model_validate({**base, "phases": {"deploy": {}}})
