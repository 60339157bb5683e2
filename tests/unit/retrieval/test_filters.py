"""Filters: one evaluation rule for every mode, refusal of what the profile does not allow."""

from __future__ import annotations

import pytest

from indexfoundry.errors import IndexFoundryError
from indexfoundry.models.retrieval import AllowedFilter, RetrievalProfile, SearchFilter
from indexfoundry.retrieval.filters import check_filters, matches, needs_post_filter, store_where

CHUNK = {
    "doc_id": "d1",
    "source": {"type": "markdown", "uri": "docs/guide/install.md"},
    "position": {"page": 3},
    "metadata": {"language": "en", "tags": ["ui", "setup"], "heading_path": "Install > Pip"},
}


def f(field: str, op: str, value: object) -> SearchFilter:
    return SearchFilter.model_validate({"field": field, "op": op, "value": value})


@pytest.mark.parametrize(
    ("flt", "expected"),
    [
        (f("source.type", "eq", "markdown"), True),
        (f("source.type", "eq", "pdf"), False),
        (f("source.type", "neq", "pdf"), True),
        (f("position.page", "gt", 2), True),
        (f("position.page", "gt", 3), False),
        (f("position.page", "gte", 3), True),
        (f("position.page", "lt", 3), False),
        (f("position.page", "lte", 3), True),
        (f("source.type", "in", ["pdf", "markdown"]), True),
        (f("source.type", "in", ["pdf"]), False),
        (f("source.uri", "contains", "guide/"), True),
        (f("source.uri", "contains", "api/"), False),
        (f("metadata.tags", "contains", "ui"), True),
        (f("metadata.tags", "contains", "u"), False),
        (f("metadata.tags", "eq", "setup"), True),
        (f("metadata.tags", "neq", "ui"), False),
        (f("metadata.tags", "in", ["x", "setup"]), True),
        (f("metadata.heading_path", "contains", "Pip"), True),
    ],
)
def test_each_operator_matches_as_documented(flt: SearchFilter, expected: bool):
    assert matches(CHUNK, [flt]) is expected


def test_a_chunk_without_the_field_matches_no_operator_not_even_neq():
    for op, value in [("eq", "x"), ("neq", "x"), ("gt", 1), ("in", ["x"]), ("contains", "x")]:
        assert matches(CHUNK, [f("metadata.title", op, value)]) is False


def test_filters_are_anded():
    assert matches(CHUNK, [f("source.type", "eq", "markdown"), f("position.page", "gt", 1)])
    assert not matches(CHUNK, [f("source.type", "eq", "markdown"), f("position.page", "gt", 5)])


PROFILE = RetrievalProfile(allowed_filters=[AllowedFilter(field="source.type", operators=["eq", "in"])])


def _code(filters: list[SearchFilter]) -> str:
    with pytest.raises(IndexFoundryError) as caught:
        check_filters(filters, PROFILE)
    return caught.value.code


def test_a_filter_on_a_field_the_profile_does_not_allow_is_refused():
    assert _code([f("source.uri", "eq", "x")]) == "CONFIG_INVALID"


def test_an_operator_the_profile_does_not_allow_on_the_field_is_refused():
    assert _code([f("source.type", "neq", "pdf")]) == "CONFIG_INVALID"


def test_in_needs_a_list_and_range_operators_need_a_number():
    assert _code([f("source.type", "in", "pdf")]) == "CONFIG_INVALID"
    profile = RetrievalProfile(allowed_filters=[AllowedFilter(field="position.page", operators=["gt"])])
    with pytest.raises(IndexFoundryError) as caught:
        check_filters([f("position.page", "gt", "two")], profile)
    assert caught.value.code == "CONFIG_INVALID"
    check_filters([f("position.page", "gt", 2)], profile)


def test_in_with_values_of_mixed_types_is_refused_before_reaching_the_store():
    # Found by schemathesis: [-5.8e-125, False] reached Chroma, which raised (a 5xx).
    assert _code([f("source.type", "in", [-5.8e-125, False])]) == "CONFIG_INVALID"
    assert _code([f("source.type", "in", ["pdf", 1])]) == "CONFIG_INVALID"


def test_store_where_pushes_down_only_store_fields_and_store_operators():
    filters = [f("source.type", "eq", "markdown"), f("position.page", "gte", 2), f("source.uri", "contains", "x")]
    fields = {"source.type", "position.page", "source.uri"}
    assert store_where(filters, fields) == {
        "$and": [{"source.type": {"$eq": "markdown"}}, {"position.page": {"$gte": 2}}]
    }
    assert store_where(filters[:1], fields) == {"source.type": {"$eq": "markdown"}}
    assert store_where(filters, set()) is None
    assert needs_post_filter(filters, fields)
    assert not needs_post_filter(filters[:2], fields)
