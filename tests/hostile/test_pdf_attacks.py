"""Hostile PDFs — page-tree loops, claims of millions of pages, deep nesting, pages that take
too long — fail alone in their extraction worker (PARSE_ERROR, with the time limit named when
it was the limit) while the rest of the run goes on, in bounded time and memory. The pipeline
process itself never parses a PDF: its peak stays that of a run of plain markdown, and it never
imports a PDF parser (those run only inside the limited workers)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.figures import documented
from tests.hostile import pdfs
from tests.hostile.support import hostile_config, run_pipeline_measured


@pytest.mark.slow
def test_looping_huge_and_deeply_nested_pdfs_fail_alone_in_bounded_time_and_memory(
    tmp_path: Path, runs_dir: Path, update_figures: bool
):
    seconds = 180
    documented("hostile.pdf_pages.seconds", seconds, update=update_figures)
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "good.md").write_text("# Good\n\nThe one document that must be indexed.\n")
    (folder / "loop.pdf").write_bytes(pdfs.page_tree_loop())
    (folder / "millions.pdf").write_bytes(pdfs.millions_of_pages())
    (folder / "deep.pdf").write_bytes(pdfs.deep_nesting())
    result = run_pipeline_measured(hostile_config(folder, timeout_s=60, memory_mb=768), tmp_path, runs_dir)
    codes = result.codes()
    assert result.status == "partial"
    assert result.chunks > 0
    assert codes["docs/loop.pdf"] in {"PARSE_ERROR", "EMPTY_CONTENT"}
    # 200,000 nested arrays: refused, or parsed without recursion (the page text is then extracted).
    assert codes.get("docs/deep.pdf") in {None, "PARSE_ERROR", "EMPTY_CONTENT"}
    # The one real page of "millions.pdf" is either extracted or the claim is refused; no ten-million-page loop.
    assert codes.get("docs/millions.pdf") in {None, "PARSE_ERROR"}
    assert result.seconds < seconds
    assert result.peak_rss_mb < 500  # a one-markdown-file run peaks at ~250 MB
    assert not pdf_parsers(result.parsers_loaded)


@pytest.mark.slow
def test_a_pdf_slower_than_the_time_limit_is_killed_reported_and_the_worker_replaced(
    tmp_path: Path, runs_dir: Path, update_figures: bool
):
    seconds = 120
    documented("hostile.pdf_slow.seconds", seconds, update=update_figures)
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a-slow.pdf").write_bytes(pdfs.slow_page(400_000))
    (folder / "b-good.md").write_text("# Good\n\nExtracted by the replacement worker after the kill.\n")
    (folder / "c-fine.pdf").write_bytes(pdfs.millions_of_pages())
    result = run_pipeline_measured(hostile_config(folder, timeout_s=3, memory_mb=768), tmp_path, runs_dir)
    slow = [e for e in result.errors if e["uri"] == "docs/a-slow.pdf"]
    assert [e["code"] for e in slow] == ["PARSE_ERROR"]
    assert "3" in slow[0]["message"]  # the message names the limit that stopped it
    assert result.status == "partial"
    assert result.chunks > 0  # documents after the killed one were extracted by a fresh worker
    assert result.seconds < seconds
    assert result.peak_rss_mb < 500
    assert not pdf_parsers(result.parsers_loaded)


def pdf_parsers(modules: list[str]) -> list[str]:
    return [m for m in modules if m.split(".")[0] in {"pdfminer", "pypdfium2"}]
