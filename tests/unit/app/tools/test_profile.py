"""The build-profile tool's input model and the profile it produces."""

from __future__ import annotations

import pytest

from indexfoundry.app.tools.profile import BuildProfileInput, build_profile
from indexfoundry.app.tools.registry import load_tools
from indexfoundry.errors import IndexFoundryError

RUN_ID = "01890a5d-ac96-774b-bcce-b302099a8057"


def test_the_tool_is_registered_with_truthful_annotations_and_a_strict_schema():
    spec = load_tools()["indexfoundry_index_build_profile"]
    assert spec.annotations.read_only is False
    assert spec.annotations.destructive is False
    assert spec.annotations.idempotent is True
    assert spec.annotations.open_world is False
    schema = spec.input_model.model_json_schema()
    assert schema["additionalProperties"] is False
    assert set(schema["required"]) == {"run_id", "retrieval_config"}


def test_defaults_offer_hybrid_with_rrf_and_no_filters():
    profile = build_profile(BuildProfileInput.model_validate({"run_id": RUN_ID, "retrieval_config": {}}))
    assert profile.retrieval_config.search_modes == ["hybrid"]
    assert profile.retrieval_config.default_top_k == 10
    assert profile.retrieval_config.hybrid_config.fusion_method == "rrf"
    assert profile.retrieval_config.hybrid_config.alpha == 0.7
    assert profile.allowed_filters == []
    assert profile.security.require_auth is False


def test_allowed_filters_are_sorted_and_their_operators_deduplicated():
    payload = BuildProfileInput.model_validate(
        {
            "run_id": RUN_ID,
            "retrieval_config": {"search_modes": ["keyword", "semantic", "keyword"]},
            "allowed_filters": [
                {"field": "source.uri", "operators": ["eq", "contains", "eq"]},
                {"field": "metadata.custom.year", "operators": ["gte", "lt"]},
            ],
        }
    )
    profile = build_profile(payload)
    assert profile.retrieval_config.search_modes == ["keyword", "semantic"]
    assert [(f.field, f.operators) for f in profile.allowed_filters] == [
        ("metadata.custom.year", ["gte", "lt"]),
        ("source.uri", ["contains", "eq"]),
    ]


@pytest.mark.parametrize(
    "filters",
    [
        [{"field": "source.uri", "operators": ["eq"]}, {"field": "source.uri", "operators": ["in"]}],
        [{"field": "source.uri", "operators": []}],
        [{"field": "vector", "operators": ["eq"]}],
    ],
)
def test_duplicate_empty_or_unknown_filter_fields_are_refused(filters: list[dict[str, object]]):
    payload = BuildProfileInput.model_validate({"run_id": RUN_ID, "retrieval_config": {}, "allowed_filters": filters})
    with pytest.raises(IndexFoundryError) as caught:
        build_profile(payload)
    assert caught.value.code == "CONFIG_INVALID"
