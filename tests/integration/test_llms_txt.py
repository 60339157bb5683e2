"""export llms-txt: llmstxt.org format, every link resolves, llms-full.txt holds every page."""

from __future__ import annotations

import re
from pathlib import Path

from typer.testing import CliRunner

from indexfoundry import api
from indexfoundry.app.export import first_sentence
from indexfoundry.storage.atomic import iter_jsonl
from indexfoundry.storage.layout import RunLayout
from indexfoundry.surfaces.cli import app
from tests.conftest import SAMPLE_DOCS, folder_config
from tests.fakes import RecordingEmbedder

LINK = re.compile(r"\[([^\]]+)\]\(([^)]+)\)")


def _run(tree, runs_dir: Path) -> str:
    docs = tree({**SAMPLE_DOCS, "odd name (v2).md": "# Odd\n\nA file whose name has spaces and brackets.\n"})
    return api.pipeline_run(folder_config(docs), runs_dir=runs_dir, embedder=RecordingEmbedder()).run_id


def test_llms_txt_has_the_llmstxt_shape_and_every_link_resolves(tree, runs_dir: Path):
    run_id = _run(tree, runs_dir)
    out = api.export_llms_txt(run_id, runs_dir=runs_dir)
    layout = RunLayout(runs_dir / run_id)
    text = (layout.served_dir / "llms.txt").read_text(encoding="utf-8")
    lines = text.splitlines()
    assert lines[0].startswith("# ") and lines[0] == "# docs"
    assert lines[2].startswith("> ")
    assert [line for line in lines if line.startswith("## ")] == ["## docs", "## guide"]
    links = LINK.findall(text)
    assert len(links) == out.pages == 4
    for _title, target in links:
        assert "://" not in target and ".." not in target
        assert (layout.served_dir / target).is_file(), target
    entries = [line for line in lines if line.startswith("- [")]
    assert all(re.match(r"^- \[[^\]]+\]\([^)]+\): \S", e) for e in entries), entries
    assert "- [Theming](pages/docs/guide/theme.md): Set theme.name in the config file" in text


def test_llms_full_txt_holds_every_page_between_boundaries(tree, runs_dir: Path):
    run_id = _run(tree, runs_dir)
    out_dir = runs_dir.parent / "site"
    api.export_llms_txt(run_id, runs_dir=runs_dir, out_dir=out_dir)
    full = (out_dir / "llms-full.txt").read_text(encoding="utf-8")
    layout = RunLayout(runs_dir / run_id)
    docs = list(iter_jsonl(layout.documents))
    assert full.count("\nSource: ") == len(docs)
    for doc in docs:
        assert f"Source: {doc['uri']}" in full
        body = (layout.root / doc["text_path"]).read_text(encoding="utf-8").strip()
        assert body in full
    for _title, target in LINK.findall((out_dir / "llms.txt").read_text(encoding="utf-8")):
        assert (out_dir / target).is_file()


def test_export_is_deterministic_and_prunes_stale_pages(tree, runs_dir: Path):
    run_id = _run(tree, runs_dir)
    out_dir = runs_dir.parent / "site"
    (out_dir / "pages").mkdir(parents=True)
    (out_dir / "pages" / "stale.md").write_text("old")
    api.export_llms_txt(run_id, runs_dir=runs_dir, out_dir=out_dir)
    first = {p.relative_to(out_dir): p.read_bytes() for p in out_dir.rglob("*") if p.is_file()}
    api.export_llms_txt(run_id, runs_dir=runs_dir, out_dir=out_dir)
    second = {p.relative_to(out_dir): p.read_bytes() for p in out_dir.rglob("*") if p.is_file()}
    assert first == second
    assert Path("pages/stale.md") not in first


def test_cli_export_llms_txt_writes_into_served_by_default(tree, runs_dir: Path):
    run_id = _run(tree, runs_dir)
    result = CliRunner().invoke(app, ["export", "llms-txt", "--run-id", run_id, "--runs-dir", str(runs_dir)])
    assert result.exit_code == 0, result.output
    assert (runs_dir / run_id / "served" / "llms.txt").is_file()
    missing = CliRunner().invoke(app, ["export", "llms-txt", "--run-id", "nope", "--runs-dir", str(runs_dir)])
    assert getattr(missing.exception, "code", None) == "RUN_NOT_FOUND"


def test_first_sentence_skips_headings_code_and_markup():
    text = "---\n# Title\n\n```\ncode.\n```\nUse **bold** and [a link](x.md) here. Then more.\n"
    assert first_sentence(text) == "Use bold and a link here."
