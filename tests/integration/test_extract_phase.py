"""The extract phase over real files: worker processes, limits, records, the whole pdf/ folder."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from indexfoundry import api
from indexfoundry.models.manifests import PipelineRunOutput
from indexfoundry.models.records import ExtractedDocument
from indexfoundry.pipeline.runner import create_run, execute, new_run_id
from indexfoundry.storage.atomic import iter_jsonl, read_json
from indexfoundry.storage.layout import RunLayout
from tests.fakes import RecordingEmbedder


def _run(
    runs_dir: Path, folder: Path, glob: str = "**/*", records: Any = None, **extract: Any
) -> tuple[PipelineRunOutput, RunLayout]:
    source: dict[str, Any] = {"type": "folder", "path": str(folder), "glob": glob}
    if records is not None:
        source["records"] = records
    config = api.load_config(
        {"connect": {"sources": [source]}, "extract": extract, "index": {"embedding_model": "hash"}}
    )
    layout = RunLayout.for_run(runs_dir, new_run_id())
    create_run(layout, config)
    return execute(layout, config, phases=["connect", "extract"]), layout


def _documents(layout: RunLayout) -> list[ExtractedDocument]:
    return [ExtractedDocument.model_validate(r) for r in iter_jsonl(layout.documents)]


def _errors(layout: RunLayout) -> list[dict[str, Any]]:
    if not layout.errors_log.is_file():
        return []
    return [e for e in iter_jsonl(layout.errors_log) if e.get("phase") == "extract"]


def _mixed_folder(corpora: Path, target: Path) -> Path:
    files = {
        "pdf/naacl06-shinyama.pdf": corpora / "pdf" / "multicolumn" / "naacl06-shinyama.pdf",
        "pdf/simple1.pdf": corpora / "pdf" / "edge" / "simple1.pdf",
        "pdf/zen.pdf": corpora / "pdf" / "edge" / "zen_of_python_corrupted.pdf",
        "pdf/invalid.pdf": corpora / "pdf" / "edge" / "invalid.pdf",
        "web/cp1252.html": corpora / "html" / "pages" / "fake-html-cp1252.html",
        "web/install.html": corpora / "html" / "mkdocs-1.4.2-site" / "user-guide" / "installation.html",
        "office/tables.docx": corpora / "docx" / "unstructured" / "docx-tables.docx",
        "data/records.json": corpora / "csv_json" / "edge" / "arbitrary-records.json",
        "data/cups.csv": corpora / "csv_json" / "edge" / "stanley-cups-utf-16.csv",
        "docs/installation.md": corpora / "markdown" / "mkdocs-1.4.2" / "docs" / "user-guide" / "installation.md",
    }
    for rel, source in files.items():
        (target / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target / rel)
    return target


def _extracted_files(layout: RunLayout) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(layout.extracted_dir.iterdir()) if p.is_file()}


@pytest.mark.corpora
def test_parallel_extraction_writes_exactly_what_a_serial_run_writes(corpora: Path, runs_dir: Path, tmp_path: Path):
    folder = _mixed_folder(corpora, tmp_path / "mixed")
    serial, serial_layout = _run(runs_dir, folder, workers=0)
    parallel, parallel_layout = _run(runs_dir, folder, workers=2)
    assert serial.status == parallel.status == "partial"  # invalid.pdf
    assert _extracted_files(serial_layout) == _extracted_files(parallel_layout)
    formats = {d.format for d in _documents(parallel_layout)}
    assert formats == {"pdf", "html", "docx", "json", "csv", "markdown"}
    report = read_json(parallel_layout.extraction_report)
    assert report["extractor_versions"]["pdfminer.six"]
    assert report["extractor_versions"]["tesseract"]
    assert report["pdf"]["pages_processed"] == 8 + 1 + 1
    assert [f["uri"] for f in report["failures"]] == ["mixed/pdf/invalid.pdf"]
    assert any("zen.pdf" in w for w in report["warnings"])


def _slow_folder(corpora: Path, target: Path) -> Path:
    target.mkdir()
    # Sorted first, so with one worker it is the first job and the others follow it.
    shutil.copyfile(corpora / "pdf" / "multicolumn" / "i1040nr.pdf", target / "a-slow.pdf")
    (target / "b.md").write_text("# B\n\nSecond document.\n", encoding="utf-8")
    (target / "c.md").write_text("# C\n\nThird document.\n", encoding="utf-8")
    return target


@pytest.mark.corpora
def test_a_document_over_the_time_limit_is_killed_and_the_run_goes_on(corpora: Path, runs_dir: Path, tmp_path: Path):
    folder = _slow_folder(corpora, tmp_path / "slow")
    out, layout = _run(runs_dir, folder, workers=1, timeout_s=1.5)
    assert out.status == "partial"
    assert sorted(d.uri for d in _documents(layout)) == ["slow/b.md", "slow/c.md"]
    errors = _errors(layout)
    assert [(e["uri"], e["code"]) for e in errors] == [("slow/a-slow.pdf", "PARSE_ERROR")]
    assert errors[0]["details"]["limit"] == "time"


def test_a_document_over_the_memory_limit_fails_and_the_run_goes_on(runs_dir: Path, tmp_path: Path):
    folder = tmp_path / "big"
    folder.mkdir()
    (folder / "a-huge.csv").write_bytes(b"1,2,3,4,5,6,7,8,9,0\n" * 1_500_000)  # 30 MB of tiny cells
    (folder / "b.md").write_text("# B\n\nSmall document.\n", encoding="utf-8")
    out, layout = _run(runs_dir, folder, workers=1, memory_mb=256)
    assert out.status == "partial"
    assert [d.uri for d in _documents(layout)] == ["big/b.md"]
    errors = _errors(layout)
    assert [(e["uri"], e["code"]) for e in errors] == [("big/a-huge.csv", "PARSE_ERROR")]
    assert errors[0]["details"]["limit"] == "memory"


@pytest.mark.corpora
def test_the_scifact_corpus_becomes_one_document_per_record(corpora: Path, runs_dir: Path):
    records = {"id_field": "_id", "text_fields": ["title", "text"]}
    out, layout = _run(runs_dir, corpora / "benchmark" / "scifact", glob="corpus.jsonl", records=records)
    assert out.phases["extract"].status == "completed"
    assert _errors(layout) == []
    docs = _documents(layout)
    assert len(docs) == 5183
    assert len({d.doc_id for d in docs}) == 5183
    first = json.loads((corpora / "benchmark" / "scifact" / "corpus.jsonl").read_text(encoding="utf-8").splitlines()[0])
    doc = next(d for d in docs if d.record_id == first["_id"])
    assert doc.uri == "scifact/corpus.jsonl"
    assert doc.format == "json"
    assert (layout.root / doc.text_path).read_text(encoding="utf-8") == f"{first['title']}\n\n{first['text']}"


@pytest.mark.slow
@pytest.mark.corpora
def test_a_run_over_the_whole_pdf_folder_is_partial_with_every_failure_explained(
    corpora: Path, runs_dir: Path, embedder: RecordingEmbedder
):
    # OCR off (OCR of the scans is tested on one page elsewhere); the 619-page PDF may hit the limit.
    config = {
        "connect": {"sources": [{"type": "folder", "path": str(corpora / "pdf"), "glob": "**/*.pdf"}]},
        "extract": {"ocr_fallback": False, "timeout_s": 60},
        "index": {"embedding_model": "hash"},
    }
    out = api.pipeline_run(config, runs_dir=runs_dir, embedder=embedder)
    assert out.status == "partial"
    assert all(phase.status == "completed" for phase in out.phases.values())
    layout = RunLayout(runs_dir / out.run_id)
    raws = [r["uri"] for r in iter_jsonl(layout.raw_manifest)]
    assert len(raws) == len(list((corpora / "pdf").rglob("*.pdf")))
    documents = {d.uri for d in _documents(layout)}
    failures = {e["uri"]: e for e in _errors(layout)}
    assert set(raws) == documents | set(failures)
    assert not documents & set(failures)
    for error in failures.values():
        assert error["code"] in ("PARSE_ERROR", "EMPTY_CONTENT")
        assert error["message"] and error.get("suggestion")
    expected = {
        "pdf/edge/invalid.pdf": "PARSE_ERROR",
        "pdf/edge/password.pdf": "PARSE_ERROR",
        "pdf/edge/trivial.pdf": "EMPTY_CONTENT",
        "pdf/edge/encryption/rc4-128.pdf": "PARSE_ERROR",
        "pdf/scanned/linn.pdf": "EMPTY_CONTENT",
        "pdf/scanned/multipage.pdf": None,  # has a little text, so a document
    }
    for uri, code in expected.items():
        if code is None:
            assert uri in documents
        else:
            assert failures[uri]["code"] == code, uri
    for uri in ("pdf/multicolumn/naacl06-shinyama.pdf", "pdf/cjk/jo.pdf", "pdf/scanned/pdf-with-ocr-text.pdf"):
        assert uri in documents
    if "pdf/large/DA-619p.pdf" in failures:
        assert failures["pdf/large/DA-619p.pdf"]["details"]["limit"] == "time"
    report = read_json(layout.extraction_report)
    assert report["files_failed"] == len(failures)
