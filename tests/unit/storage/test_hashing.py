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
