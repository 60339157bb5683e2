"""Config errors name every problem at the key the user wrote and suggest the nearest valid name."""

from __future__ import annotations

import pytest

from indexfoundry.errors import ConfigInvalid
from indexfoundry.models.config import parse_pipeline_config


def _problems(raw: dict) -> tuple[ConfigInvalid, list[dict]]:
    with pytest.raises(ConfigInvalid) as error:
        parse_pipeline_config(raw)
    return error.value, error.value.details["errors"]


def test_a_misspelt_source_key_is_named_under_its_source_with_the_key_it_was_meant_to_be():
    _, problems = _problems({"connect": {"sources": [{"type": "folder", "pth": "docs"}]}})
    assert problems == [
        {"path": "connect.sources[0].pth", "message": "unknown key (did you mean 'path'?)", "did_you_mean": "path"}
    ]


def test_every_problem_is_reported_with_the_nearest_valid_key_or_value():
    error, problems = _problems(
        {
            "connect": {"sources": [{"type": "folder", "path": "d"}]},
            "normalize": {"chunk_stratgy": "by_heading", "max_chars": -3},
            "index": {"vector_db": {"provider": "chromaa"}},
        }
    )
    assert {p["path"] for p in problems} == {
        "normalize.chunk_stratgy",
        "normalize.max_chars",
        "index.vector_db.provider",
    }
    assert {p.get("did_you_mean") for p in problems} == {"chunk_strategy", "chroma", None}
    assert "3 problems" in error.message and "more)" not in error.message
    assert "did you mean 'chunk_strategy'?" in error.message


def test_a_misspelt_literal_value_suggests_the_nearest_option():
    _, problems = _problems(
        {"connect": {"sources": [{"type": "folder", "path": "d"}]}, "normalize": {"chunk_strategy": "by_headin"}}
    )
    assert [(p["path"], p["did_you_mean"]) for p in problems] == [("normalize.chunk_strategy", "by_heading")]


def test_an_unknown_source_type_lists_the_types():
    _, problems = _problems({"connect": {"sources": [{"type": "foldr", "path": "d"}]}})
    assert problems[0]["path"] == "connect.sources[0]"
    assert "did you mean 'folder'?" in problems[0]["message"]
