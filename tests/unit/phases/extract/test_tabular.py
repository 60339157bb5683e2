"""CSV, JSON and NDJSON: readable text, delimiters and encodings, records as documents."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from indexfoundry.errors import IndexFoundryError
from indexfoundry.models.config import PipelineConfig
from indexfoundry.models.records import RawRecord
from indexfoundry.phases.connect.sniff import sniff_content_type
from indexfoundry.phases.extract import ExtractedText, ExtractOptions, extract_bytes
from indexfoundry.phases.extract.tabular import choose_delimiter, flatten

EDGE = Path("csv_json") / "edge"


def _extract(
    data: bytes, name: str, records: dict[str, Any] | None = None, hint: str = "auto", **extract: Any
) -> list[ExtractedText]:
    config = PipelineConfig.model_validate(
        {"connect": {"sources": [{"type": "folder", "path": "."}]}, "extract": extract}
    )
    raw = RawRecord(
        uri=name,
        sha256="0" * 64,
        size_bytes=len(data),
        content_type=sniff_content_type(name, data[:4096]),
        ext=name.rsplit(".", 1)[-1],
        path=f"raw/x.{name.rsplit('.', 1)[-1]}",
        source_kind="folder",
        source_name="data",
        extract_options={"records": records} if records else None,
    )
    return extract_bytes(data, raw, config, ExtractOptions(format_hint=hint))  # type: ignore[arg-type]


def _one(path: Path, **extract: Any) -> ExtractedText:
    items = _extract(path.read_bytes(), path.name, **extract)
    assert len(items) == 1
    return items[0]


@pytest.mark.corpora
@pytest.mark.parametrize(
    ("name", "delimiter"),
    [
        ("stanley-cups.csv", ","),
        ("semicolon-delimited.csv", ";"),
        ("table-semicolon-delimiter.csv", ";"),
        ("csv-with-line-delimiter.csv", "|"),
        ("csv-with-escaped-commas.csv", ","),
        ("single-column.csv", ""),
        ("stanley-cups.tsv", "\t"),
    ],
)
def test_the_delimiter_is_detected(corpora: Path, name: str, delimiter: str):
    item = _one(corpora / EDGE / name)
    assert item.format == "csv"
    assert item.metadata["delimiter"] == delimiter


@pytest.mark.corpora
def test_utf16_and_utf8_csv_give_the_same_table(corpora: Path):
    utf16 = _one(corpora / EDGE / "stanley-cups-utf-16.csv")
    utf8 = _one(corpora / EDGE / "stanley-cups.csv")
    assert utf16.metadata["encoding"] == "utf-16"
    assert utf16.text == utf8.text
    assert "| Maple Leafs | TOR | 13 |" in utf8.text


def test_a_cp1252_csv_is_decoded():
    data = "name;city\nJosé;Málaga\nRené;Besançon\n".encode("cp1252")
    item = _extract(data, "people.csv")[0]
    assert "| José | Málaga |" in item.text
    assert item.metadata["encoding"] == "cp1252"


@pytest.mark.corpora
def test_quoted_multi_line_fields_stay_in_one_cell_and_the_preview_is_limited(corpora: Path):
    item = _one(corpora / "csv_json" / "scifact-csv" / "corpus_train.csv", csv_preview_rows=3)
    assert item.metadata["rows"] == 5183
    assert item.metadata["preview_rows"] == 3
    assert item.metadata["columns"] == ["doc_id", "title", "abstract", "structured"]
    table_rows = [line for line in item.text.splitlines() if line.startswith("| ") and not line.startswith("| ---")]
    assert len(table_rows) == 1 + 3  # header + 3 rows, each multi-line abstract on one line
    assert "5180 more rows not shown" in item.text


def test_json_becomes_key_path_value_lines():
    data = json.dumps({"name": "Tea", "tags": ["hot", "green"], "origin": {"country": "JP", "note": "a\nb"}}).encode()
    item = _extract(data, "tea.json")[0]
    assert item.format == "json"
    assert item.text.splitlines() == [
        "name: Tea",
        "tags[0]: hot",
        "tags[1]: green",
        "origin.country: JP",
        "origin.note: a b",
    ]
    assert list(flatten([])) == ["[]"]


@pytest.mark.corpora
def test_a_json_array_and_its_ndjson_twin_give_the_same_text(corpora: Path):
    array = _one(corpora / EDGE / "arbitrary-records.json")
    lines = _one(corpora / EDGE / "arbitrary-records.ndjson")
    assert array.text == lines.text
    assert array.text.split("\n\n")[0] == "sku: GRD-8842\nname: Garden Trowel\nprice: 12.5\nin_stock: true"


def test_invalid_json_is_a_parse_error():
    with pytest.raises(IndexFoundryError) as caught:
        _extract(b'{"a": 1,,}', "bad.json")
    assert caught.value.code == "PARSE_ERROR"


def test_bad_ndjson_lines_are_skipped_with_a_warning():
    item = _extract(b'{"a": 1}\nnot json\n{"a": 2}\n', "x.jsonl")[0]
    assert item.text == "a: 1\n\na: 2"
    assert len(item.warnings) == 1


def test_format_hint_overrides_detection():
    data = b"# Not a heading\nplain, text\n"
    assert _extract(data, "notes.md")[0].format == "markdown"
    assert _extract(data, "notes.md", hint="txt")[0].format == "txt"
    assert _extract(data, "notes.md", hint="csv")[0].format == "csv"


@pytest.mark.corpora
def test_scifact_corpus_jsonl_splits_into_one_document_per_record(corpora: Path):
    path = corpora / "benchmark" / "scifact" / "corpus.jsonl"
    records = {"id_field": "_id", "text_fields": ["title", "text"], "metadata_fields": []}
    docs = _extract(path.read_bytes(), "corpus.jsonl", records=records)
    assert len(docs) == 5183
    first = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    assert docs[0].record_id == first["_id"] == "4983"
    assert docs[0].text == f"{first['title']}\n\n{first['text']}"
    assert docs[0].title == first["title"]
    assert len({d.record_id for d in docs}) == 5183


@pytest.mark.corpora
def test_the_scifact_csv_twin_splits_into_the_same_records(corpora: Path):
    path = corpora / "csv_json" / "scifact-csv" / "corpus_train.csv"
    records = {"id_field": "doc_id", "text_fields": ["title", "abstract"], "metadata_fields": ["structured"]}
    docs = _extract(path.read_bytes(), "corpus_train.csv", records=records)
    jsonl = corpora / "benchmark" / "scifact" / "corpus.jsonl"
    ids = [json.loads(line)["_id"] for line in jsonl.read_text(encoding="utf-8").splitlines()]
    assert [d.record_id for d in docs] == ids
    assert docs[0].format == "csv"
    assert "structured" in docs[0].metadata


def test_records_without_id_or_text_and_duplicates_are_skipped_with_warnings():
    data = b'{"id": "a", "body": "one"}\n{"body": "no id"}\n{"id": "b", "body": ""}\n{"id": "a", "body": "dup"}\n'
    docs = _extract(data, "x.ndjson", records={"id_field": "id", "text_fields": ["body"]})
    assert [(d.record_id, d.text) for d in docs] == [("a", "one")]
    assert len(docs[0].warnings) == 3


def test_records_naming_a_missing_csv_column_are_config_invalid():
    with pytest.raises(IndexFoundryError) as caught:
        _extract(b"a,b\n1,2\n", "x.csv", records={"id_field": "id", "text_fields": ["b"]})
    assert caught.value.code == "CONFIG_INVALID"


def test_choose_delimiter_returns_none_for_a_single_column():
    assert choose_delimiter("alpha\nbeta, gamma\ndelta\n") is None
