from __future__ import annotations

from indexfoundry.models.records import Heading
from indexfoundry.storage.hashing import canonical_json, chunk_id_for, doc_id_for, sha256_json


def test_canonical_json_ignores_key_order_and_keeps_unicode():
    assert canonical_json({"b": 1, "a": "é"}) == '{"a":"é","b":1}'
    assert sha256_json({"b": 1, "a": 2}) == sha256_json({"a": 2, "b": 1})


def test_canonical_json_of_a_model_equals_that_of_its_dump():
    heading = Heading(level=2, text="Theme", byte_start=10, line=3)
    assert canonical_json(heading) == canonical_json(heading.model_dump(mode="json"))


def test_identical_text_at_different_positions_gets_different_chunk_ids():
    doc = doc_id_for("docs/a.md", "0" * 64)
    assert chunk_id_for(doc, 0, 10) != chunk_id_for(doc, 10, 20)
    assert chunk_id_for(doc, 0, 10) == chunk_id_for(doc, 0, 10)


def test_identical_files_at_two_places_are_two_documents():
    assert doc_id_for("docs/a.md", "f" * 64) != doc_id_for("docs/b.md", "f" * 64)
    assert doc_id_for("data.csv", "f" * 64, "1") != doc_id_for("data.csv", "f" * 64, "2")


def _slow_canonical(value: object) -> str:
    import json

    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def test_canonical_json_is_the_json_modules_text_for_any_json_value():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    scalars = (
        st.none()
        | st.booleans()
        | st.integers(min_value=-(2**70), max_value=2**70)
        | st.floats(allow_nan=False, allow_infinity=False)
        | st.text(alphabet=st.characters(exclude_categories=["Cs"]))
    )
    values = st.recursive(
        scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    )

    @settings(max_examples=400, deadline=None)
    @given(values)
    def same(value: object) -> None:
        assert canonical_json(value) == _slow_canonical(value)

    same()


def test_canonical_json_leaves_what_orjson_writes_otherwise_to_the_json_module():
    import pytest

    for value in [{"a": 1e16, "b": 1e-5, "c": -0.0}, {"n": 2**64}, {"t": (1, 2)}, {1: "int key"}, "\ud800"]:
        assert canonical_json(value) == _slow_canonical(value)
    with pytest.raises(ValueError):
        canonical_json({"nan": float("nan")})
    heading = Heading(level=2, text="Theme", byte_start=10, line=3)
    assert canonical_json({"h": heading}) == canonical_json({"h": heading.model_dump(mode="json")})
