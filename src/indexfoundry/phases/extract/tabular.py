"""CSV, TSV, JSON and NDJSON/JSONL: readable text, or one document per record.

- CSV: encoding detected (UTF-8, UTF-16, cp1252...), delimiter chosen among ``, ; TAB |`` by
  the most consistent column count (the standard library's ``csv`` does the parsing, so
  quoted multi-line fields are handled), rendered as a markdown table of the header and the
  first ``csv_preview_rows`` rows.
- JSON / NDJSON: ``key.path: value`` lines; the items of a top-level array and the lines of
  an NDJSON file become blocks separated by a blank line.
- Records: with ``records: {id_field, text_fields, metadata_fields}`` on the source (passed
  as ``RawRecord.extract_options["records"]``), every CSV row / JSON array item / NDJSON
  line becomes its own document with ``record_id`` = its id field.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import sys
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any, Literal

from indexfoundry.errors import ConfigInvalid, ParseError
from indexfoundry.models.config import PipelineConfig, RecordsSpec
from indexfoundry.models.records import DocFormat, RawRecord
from indexfoundry.phases.extract import ExtractedText
from indexfoundry.phases.extract.text import declared_charset, decode_text

Kind = Literal["csv", "json", "ndjson"]
_DELIMITERS = (",", ";", "\t", "|")
_SAMPLE_ROWS = 50
_MAX_WARNINGS = 20

# Real-world CSV cells (abstracts, HTML snippets) exceed the csv module's 128 KiB default.
csv.field_size_limit(min(sys.maxsize, (1 << 31) - 1))


# Column names kept in a CSV document's metadata (the rest are counted in ``columns_total``).
MAX_COLUMN_NAMES = 200


def choose_delimiter(text: str) -> str | None:
    """The delimiter giving the most rows with the same (>1) number of fields; None: one column."""
    best: tuple[float, int, int] | None = None
    choice: str | None = None
    for rank, delimiter in enumerate(_DELIMITERS):
        if delimiter not in text[:65536]:
            continue
        try:
            rows = [r for r in itertools.islice(csv.reader(io.StringIO(text), delimiter=delimiter), _SAMPLE_ROWS) if r]
        except csv.Error:
            continue
        if not rows:
            continue
        width, count = Counter(len(r) for r in rows).most_common(1)[0]
        consistency = count / len(rows)
        if width < 2 or consistency < 0.8:
            continue
        score = (consistency, width, -rank)
        if best is None or score > best:
            best, choice = score, delimiter
    return choice


def _rows(text: str, delimiter: str | None, uri: str) -> list[list[str]]:
    if delimiter is None:
        return [[line] for line in text.splitlines() if line.strip()]
    try:
        return [r for r in csv.reader(io.StringIO(text), delimiter=delimiter) if any(c.strip() for c in r)]
    except csv.Error as exc:
        raise ParseError(f"{uri} is not valid CSV: {exc}", suggestion="Check the quoting in the file") from None


def _cell(value: str) -> str:
    return " ".join(value.split()).replace("|", "\\|")


def _markdown_table(header: list[str], rows: list[list[str]]) -> str:
    width = max([len(header), *(len(r) for r in rows)])
    header = header + [""] * (width - len(header))
    lines = ["| " + " | ".join(_cell(c) for c in header) + " |", "|" + "|".join([" --- "] * width) + "|"]
    for row in rows:
        row = row + [""] * (width - len(row))
        lines.append("| " + " | ".join(_cell(c) for c in row) + " |")
    return "\n".join(lines)


def _scalar(value: Any) -> str:
    if isinstance(value, str):
        return " ".join(value.split()) if "\n" in value else value
    return json.dumps(value, ensure_ascii=False)


def flatten(value: Any, prefix: str = "") -> Iterator[str]:
    """``key.path: value`` lines of a JSON value (array items as ``key[0]``)."""
    if isinstance(value, dict):
        if not value:
            yield f"{prefix}: {{}}" if prefix else "{}"
        for key, item in value.items():
            yield from flatten(item, f"{prefix}.{key}" if prefix else str(key))
    elif isinstance(value, list):
        if not value:
            yield f"{prefix}: []" if prefix else "[]"
        for index, item in enumerate(value):
            yield from flatten(item, f"{prefix}[{index}]")
    else:
        yield f"{prefix}: {_scalar(value)}" if prefix else _scalar(value)


def _blocks(values: Iterable[Any]) -> str:
    return "\n\n".join("\n".join(flatten(v)) for v in values)


def _parse_ndjson(text: str, warnings: list[str]) -> list[Any]:
    values: list[Any] = []
    bad = 0
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            values.append(json.loads(line))
        except (json.JSONDecodeError, RecursionError) as exc:
            bad += 1
            if bad <= _MAX_WARNINGS:
                reason = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deeply"
                warnings.append(f"line {number} is not valid JSON ({reason}); skipped")
    return values


def _field(record: Any, path: str) -> Any:
    """A record's field by name, or by dotted path for nested JSON."""
    if not isinstance(record, dict):
        return None
    if path in record:
        return record[path]
    current: Any = record
    for part in path.split("."):
        if not isinstance(current, dict) or part not in current:
            return None
        current = current[part]
    return current


def _text_value(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value.strip()
    return json.dumps(value, ensure_ascii=False)


def records_to_documents(
    records: Iterable[Any], spec: RecordsSpec, fmt: DocFormat, warnings: list[str]
) -> list[ExtractedText]:
    """One document per record: text from ``text_fields``, metadata from ``metadata_fields``."""
    out: list[ExtractedText] = []
    seen: set[str] = set()
    problems: Counter[str] = Counter()
    for index, record in enumerate(records):
        raw_id = _field(record, spec.id_field)
        if raw_id is None or (isinstance(raw_id, str) and not raw_id.strip()):
            problems["missing id"] += 1
            if problems["missing id"] <= _MAX_WARNINGS:
                warnings.append(f"record {index} has no '{spec.id_field}'; skipped")
            continue
        record_id = raw_id.strip() if isinstance(raw_id, str) else _text_value(raw_id)
        if record_id in seen:
            problems["duplicate"] += 1
            if problems["duplicate"] <= _MAX_WARNINGS:
                warnings.append(f"record id '{record_id}' appears again at record {index}; later copy skipped")
            continue
        seen.add(record_id)
        parts = [_text_value(_field(record, name)) for name in spec.text_fields]
        text = "\n\n".join(p for p in parts if p)
        if not text:
            problems["empty"] += 1
            if problems["empty"] <= _MAX_WARNINGS:
                warnings.append(f"record '{record_id}' has no text in {spec.text_fields}; skipped")
            continue
        metadata = {name: _field(record, name) for name in spec.metadata_fields if _field(record, name) is not None}
        title = _field(record, "title")
        out.append(
            ExtractedText(
                text=text,
                format=fmt,
                title=title.strip() if isinstance(title, str) and title.strip() else None,
                headings=[],
                metadata=metadata,
                record_id=record_id,
            )
        )
    for problem, count in sorted(problems.items()):
        if count > _MAX_WARNINGS:
            warnings.append(f"{count} records skipped in total: {problem}")
    return out


def _records_spec(raw: RawRecord) -> RecordsSpec | None:
    options = raw.extract_options or {}
    spec = options.get("records")
    if spec is None:
        return None
    return RecordsSpec.model_validate(spec)


def extract_tabular(
    data: bytes, raw: RawRecord, config: PipelineConfig, kind: Kind, delimiter: str | None = None
) -> list[ExtractedText]:
    """Extract a CSV/TSV, JSON or NDJSON file (as one document, or one per record)."""
    text, encoding = decode_text(data, declared_charset(raw.content_type, raw.extract_options), uri=raw.uri)
    if text.startswith("\ufeff"):
        text = text[1:]
    spec = _records_spec(raw)
    warnings: list[str] = []
    parsed: Any = None
    if kind == "csv":
        return _csv(text, encoding, raw, config, spec, delimiter, warnings)
    if kind == "ndjson":
        values = _parse_ndjson(text, warnings)
        if not values:
            raise ParseError(f"{raw.uri} has no valid JSON line", suggestion="Check the file is JSON Lines")
    else:
        try:
            parsed = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ParseError(
                f"{raw.uri} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}",
                suggestion="Fix the JSON, or use format_hint 'txt' to index it as plain text",
                details={"uri": raw.uri, "line": exc.lineno},
            ) from None
        except RecursionError:
            raise ParseError(
                f"{raw.uri} nests JSON arrays or objects too deeply to read",
                suggestion="Flatten the JSON, or use format_hint 'txt' to index it as plain text",
                details={"uri": raw.uri, "limit": "nesting"},
            ) from None
        values = parsed if isinstance(parsed, list) else [parsed]
    if spec is not None:
        if kind == "json" and not isinstance(parsed, list):
            raise ConfigInvalid(
                f"{raw.uri}: records splitting needs a JSON array of objects, a JSONL or a CSV file",
                suggestion="Remove 'records' from this source or point it at files of records",
            )
        docs = records_to_documents(values, spec, "json", warnings)
        for doc in docs[:1]:
            doc.warnings.extend(warnings)
        return docs
    metadata: dict[str, Any] = {"encoding": encoding, "records": len(values) if kind == "ndjson" else None}
    if kind == "json":
        metadata["records"] = len(parsed) if isinstance(parsed, list) else None
    metadata = {k: v for k, v in metadata.items() if v is not None}
    try:
        text = _blocks(values)
    except RecursionError:
        raise ParseError(
            f"{raw.uri} nests JSON arrays or objects too deeply to turn into text",
            suggestion="Flatten the JSON, or use format_hint 'txt' to index it as plain text",
            details={"uri": raw.uri, "limit": "nesting"},
        ) from None
    return [ExtractedText(text=text, format="json", headings=[], metadata=metadata, warnings=warnings)]


def _csv(
    text: str,
    encoding: str,
    raw: RawRecord,
    config: PipelineConfig,
    spec: RecordsSpec | None,
    delimiter: str | None,
    warnings: list[str],
) -> list[ExtractedText]:
    delimiter = delimiter or choose_delimiter(text)
    rows = _rows(text, delimiter, raw.uri)
    if not rows:
        return [ExtractedText(text="", format="csv", headings=[], metadata={"encoding": encoding})]
    header, body = rows[0], rows[1:]
    if spec is not None:
        keys = [h.strip() for h in header]
        records = [dict(zip(keys, row, strict=False)) for row in body]
        missing = [f for f in [spec.id_field, *spec.text_fields] if f not in keys]
        if missing:
            raise ConfigInvalid(
                f"{raw.uri}: records fields {missing} are not columns of the CSV (columns: {keys[:20]})",
                suggestion="Fix records.id_field / records.text_fields to name existing columns",
            )
        docs = records_to_documents(records, spec, "csv", warnings)
        for doc in docs[:1]:
            doc.warnings.extend(warnings)
        return docs
    limit = config.extract.csv_preview_rows
    shown = body[:limit]
    table = _markdown_table(header, shown)
    if len(body) > limit:
        table += f"\n\n({len(body) - limit} more rows not shown; {len(body)} rows in total)"
    metadata: dict[str, Any] = {
        "encoding": encoding,
        "delimiter": delimiter or "",
        "columns": header[:MAX_COLUMN_NAMES],
        "rows": len(body),
        "preview_rows": len(shown),
    }
    if len(header) > MAX_COLUMN_NAMES:
        # Every chunk carries its document's metadata: a million column names would be copied
        # into each of them (gigabytes for one wide file). The count says what was left out.
        metadata["columns_total"] = len(header)
    return [ExtractedText(text=table, format="csv", headings=[], metadata=metadata, warnings=warnings)]
