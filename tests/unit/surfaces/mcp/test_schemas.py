"""Compact tool schemas keep what a caller needs and drop what only costs context."""

from __future__ import annotations

from typing import Literal

from jsonschema import Draft202012Validator
from pydantic import BaseModel, ConfigDict, Field

from indexfoundry.surfaces.mcp.schemas import SCHEMA_URI_PREFIX, compact_schema, listed_schema, summarize_schema


class Inner(BaseModel):
    model_config = ConfigDict(extra="forbid")
    size: int = Field(default=3, ge=1, description="How many")


class Shared(BaseModel):
    name: str


class Outer(BaseModel):
    model_config = ConfigDict(extra="forbid")
    title: str = Field(description="A property called title is kept")
    note: str | None = Field(default=None, description="Optional")
    mode: Literal["a", "b"] = "a"
    inner: Inner = Field(default_factory=Inner)
    one: Shared | None = None
    two: list[Shared] = Field(default_factory=list)


def test_compact_schema_drops_titles_null_defaults_and_inlines_defs_used_once():
    schema = compact_schema(Outer.model_json_schema())
    Draft202012Validator.check_schema(schema)
    assert "title" in schema["properties"]  # the property named title stays
    assert "title" not in schema and "title" not in schema["properties"]["note"]
    assert schema["properties"]["note"] == {"type": ["string", "null"], "description": "Optional"}
    assert schema["properties"]["inner"]["properties"]["size"]["minimum"] == 1  # Inner inlined
    assert list(schema["$defs"]) == ["Shared"]  # used twice: kept once
    assert schema["additionalProperties"] is False
    validator = Draft202012Validator(schema)
    assert validator.is_valid({"title": "x", "note": None, "inner": {"size": 2}, "two": [{"name": "n"}]})
    assert not validator.is_valid({"title": "x", "inner": {"size": 0}})


def test_a_schema_over_budget_is_summarised_with_its_keys_and_the_resource_of_the_whole():
    schema = summarize_schema(compact_schema(Outer.model_json_schema()), "tool_x")
    assert schema["properties"]["inner"] == {"type": "object", "description": "Keys: size"}
    assert SCHEMA_URI_PREFIX + "tool_x" in schema["description"]
    assert listed_schema(Inner.model_json_schema(), "small") == compact_schema(Inner.model_json_schema())
