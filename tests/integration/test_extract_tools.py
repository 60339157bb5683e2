"""The extract tools on a run's raw files, through the registry and the CLI."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from indexfoundry import api
from indexfoundry.app.tools.registry import call_tool, load_tools
from indexfoundry.errors import IndexFoundryError
from indexfoundry.models.records import ExtractedDocument, RawRecord
from indexfoundry.pipeline.runner import create_run, execute, new_run_id
from indexfoundry.storage.atomic import iter_jsonl
from indexfoundry.storage.layout import RunLayout
from indexfoundry.surfaces.cli import app

pytestmark = pytest.mark.corpora


@pytest.fixture
def run(corpora: Path, runs_dir: Path, tmp_path: Path) -> tuple[RunLayout, dict[str, RawRecord]]:
    folder = tmp_path / "files"
    folder.mkdir()
    for source in (
        corpora / "pdf" / "multicolumn" / "naacl06-shinyama.pdf",
        corpora / "pdf" / "edge" / "password.pdf",
        corpora / "html" / "mkdocs-1.4.2-site" / "index.html",
        corpora / "csv_json" / "edge" / "semicolon-delimited.csv",
    ):
        shutil.copyfile(source, folder / source.name)
    config = api.load_config(
        {"connect": {"sources": [{"type": "folder", "path": str(folder)}]}, "index": {"embedding_model": "hash"}}
    )
    layout = RunLayout.for_run(runs_dir, new_run_id())
    create_run(layout, config)
    execute(layout, config, phases=["connect"])
    raws = {
        RawRecord.model_validate(r).relative_path or "": RawRecord.model_validate(r)
        for r in iter_jsonl(layout.raw_manifest)
    }
    return layout, raws


def _raw_name(raw: RawRecord) -> str:
    return Path(raw.path).name


def test_the_three_extract_tools_are_registered_with_honest_annotations():
    tools = load_tools()
    for name in ("indexfoundry_extract_pdf", "indexfoundry_extract_html", "indexfoundry_extract_document"):
        spec = tools[name]
        assert not spec.annotations.read_only and not spec.annotations.destructive
        assert spec.annotations.idempotent and not spec.annotations.open_world
        assert spec.input_model.model_json_schema()["additionalProperties"] is False


def test_extract_pdf_writes_pages_and_text_for_a_page_range_and_skips_a_repeat(run, runs_dir: Path):
    layout, raws = run
    raw = raws["naacl06-shinyama.pdf"]
    args = {"run_id": layout.run_id, "pdf_path": _raw_name(raw), "page_range": {"start": 2, "end": 3}}
    out = call_tool("indexfoundry_extract_pdf", args, runs_dir=runs_dir)
    assert out.success and not out.skipped
    assert out.stats.pages_processed == 2
    assert out.extraction_report.mode_used == "layout"
    assert out.extraction_report.extractor_version.startswith("pdfminer.six@")
    pages = list(iter_jsonl(layout.root / out.artifacts.pages_jsonl))
    assert [p["page"] for p in pages] == [2, 3]
    assert set(pages[0]) == {"page", "text", "char_count", "is_empty", "ocr_used"}
    docs = [ExtractedDocument.model_validate(d) for d in iter_jsonl(layout.documents)]
    assert [d.uri for d in docs] == [raw.uri]
    again = call_tool("indexfoundry_extract_pdf", args, runs_dir=runs_dir)
    assert again.skipped and again.stats == out.stats
    forced = call_tool("indexfoundry_extract_pdf", {**args, "force": True}, runs_dir=runs_dir)
    assert not forced.skipped
    other = call_tool("indexfoundry_extract_pdf", {**args, "mode": "plain"}, runs_dir=runs_dir)
    assert not other.skipped and other.extraction_report.mode_used == "plain"


def test_extract_pdf_on_an_encrypted_file_is_a_parse_error(run, runs_dir: Path):
    layout, raws = run
    with pytest.raises(IndexFoundryError) as caught:
        call_tool(
            "indexfoundry_extract_pdf",
            {"run_id": layout.run_id, "pdf_path": _raw_name(raws["password.pdf"])},
            runs_dir=runs_dir,
        )
    assert caught.value.code == "PARSE_ERROR"


def test_extract_html_and_document_add_their_documents_to_the_run(run, runs_dir: Path):
    layout, raws = run
    html = call_tool(
        "indexfoundry_extract_html",
        {"run_id": layout.run_id, "html_path": f"raw/{_raw_name(raws['index.html'])}", "preserve_links": True},
        runs_dir=runs_dir,
    )
    assert html.title == "MkDocs"
    assert html.description == "Project documentation with Markdown."
    text = (layout.root / html.artifacts.text[0]).read_text(encoding="utf-8")
    assert "[introductory tutorial](" in text
    doc = call_tool(
        "indexfoundry_extract_document",
        {"run_id": layout.run_id, "doc_path": _raw_name(raws["semicolon-delimited.csv"]), "csv_preview_rows": 2},
        runs_dir=runs_dir,
    )
    assert doc.extraction_report.format == "csv"
    assert "2 more rows not shown" in (layout.root / doc.artifacts.text[0]).read_text(encoding="utf-8")
    uris = {d["uri"] for d in iter_jsonl(layout.documents)}
    assert uris == {raws["index.html"].uri, raws["semicolon-delimited.csv"].uri}


def test_a_path_outside_raw_is_refused(run, runs_dir: Path):
    layout, _ = run
    with pytest.raises(IndexFoundryError) as caught:
        call_tool(
            "indexfoundry_extract_document",
            {"run_id": layout.run_id, "doc_path": "../manifest.json"},
            runs_dir=runs_dir,
        )
    assert caught.value.code == "NOT_FOUND"


def test_the_cli_runs_extract_pdf_with_json_output(run, runs_dir: Path):
    layout, raws = run
    result = CliRunner().invoke(
        app,
        [
            "extract",
            "pdf",
            _raw_name(raws["naacl06-shinyama.pdf"]),
            "--run-id",
            layout.run_id,
            "--runs-dir",
            str(runs_dir),
            "--pages",
            "1",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["stats"]["pages_processed"] == 1
    assert payload["artifacts"]["pages_jsonl"].endswith(".pages.jsonl")
