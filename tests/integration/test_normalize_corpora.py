"""The normalize phase on real documentation trees (mkdocs, pymdown-extensions, starlette docs)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from indexfoundry.models.config import parse_pipeline_config
from indexfoundry.models.records import DocumentChunk, ExtractedDocument
from indexfoundry.pipeline.runner import create_run, execute, new_run_id
from indexfoundry.storage.atomic import iter_jsonl, read_json
from indexfoundry.storage.layout import RunLayout
from tests.conftest import folder_config

pytestmark = pytest.mark.corpora

_FENCE = re.compile(r"^\s*(`{3,}|~{3,})(.*)$")


def fenced_lines(text: str) -> list[bool]:
    """For every line of ``text``: is it inside a code fence (opener and closer included)?"""
    inside: list[bool] = []
    marker: str | None = None
    for line in text.splitlines():
        match = _FENCE.match(line)
        if marker is None:
            if match and not (match.group(1)[0] == "`" and "`" in match.group(2)):
                marker = match.group(1)
                inside.append(True)
            else:
                inside.append(False)
        else:
            inside.append(True)
            if (
                match
                and match.group(1)[0] == marker[0]
                and len(match.group(1)) >= len(marker)
                and not match.group(2).strip()
            ):
                marker = None
    return inside


def normalize_run(root: Path, runs_dir: Path, **normalize: Any) -> RunLayout:
    config = parse_pipeline_config(folder_config(root, normalize=normalize))
    layout = RunLayout.for_run(runs_dir, new_run_id())
    create_run(layout, config)
    out = execute(layout, config, phases=["connect", "extract", "normalize"])
    assert out.phases["normalize"].status == "completed", out
    return layout


def load(layout: RunLayout) -> tuple[list[DocumentChunk], dict[str, ExtractedDocument]]:
    chunks = [DocumentChunk.model_validate(r) for r in iter_jsonl(layout.chunks)]
    docs = {d["doc_id"]: ExtractedDocument.model_validate(d) for d in iter_jsonl(layout.documents)}
    return chunks, docs


@pytest.fixture(scope="module")
def heading_run(tmp_path_factory: pytest.TempPathFactory) -> RunLayout:
    from tests.conftest import CORPORA

    if not CORPORA.is_dir():
        pytest.skip("shared corpora not found")
    runs = tmp_path_factory.mktemp("runs")
    return normalize_run(CORPORA / "markdown", runs, chunk_strategy="by_heading", dedupe=False, detect_language=False)


def test_by_heading_breadcrumbs_are_correct_on_named_sections(corpora: Path, heading_run: RunLayout):
    chunks, _ = load(heading_run)
    by_uri: dict[str, list[DocumentChunk]] = {}
    for c in chunks:
        by_uri.setdefault(c.source.uri, []).append(c)
    config = by_uri["markdown/mkdocs-1.4.2/docs/user-guide/configuration.md"]
    site_name = [c for c in config if c.metadata.heading_path == "Configuration > Project information > site_name"]
    assert len(site_name) == 1
    assert site_name[0].position.section == "site_name" and site_name[0].metadata.heading_level == 3
    # The heading-only parent section is folded into its first child.
    assert site_name[0].content.text.startswith("## Project information\n\n### site_name\n")
    edit_uri = [c for c in config if c.metadata.heading_path == "Configuration > Project information > edit_uri"]
    assert edit_uri and any("# Query string example" in c.content.text for c in edit_uri)
    nav = [c for c in config if c.metadata.heading_path == "Configuration > Documentation layout > nav"]
    assert nav and nav[0].content.text.startswith("### nav")
    responses = by_uri["markdown/starlette-1.10.0/docs/responses.md"]
    assert responses[0].metadata.heading_path is None  # the intro before the first heading
    assert "Response > Set Cookie" in {c.metadata.heading_path for c in responses}
    assert "JSONResponse > Custom JSON serialization" in {c.metadata.heading_path for c in responses}
    tabbed = by_uri["markdown/pymdown-extensions-13.1.2/docs/src/markdown/extensions/tabbed.md"]
    assert "Tabbed > Tab IDs" in {c.metadata.heading_path for c in tabbed}
    # Every breadcrumb ends with the chunk's own section heading.
    for c in chunks:
        if c.metadata.heading_path is not None:
            assert c.metadata.heading_path.split(" > ")[-1] == c.position.section


def test_no_chunk_starts_inside_a_code_fence_and_fence_lines_never_become_headings(
    corpora: Path, heading_run: RunLayout
):
    chunks, docs = load(heading_run)
    fence_headings: set[str] = set()
    real_headings: set[str] = set()
    checked = 0
    for doc in docs.values():
        text = (heading_run.root / doc.text_path).read_text(encoding="utf-8")
        raw = text.encode("utf-8")
        inside = fenced_lines(text)
        for line, fenced in zip(text.splitlines(), inside, strict=True):
            if fenced and line.startswith("#"):
                fence_headings.add(line.lstrip("#").strip())
        real_headings.update(h.text for h in doc.headings)
        for c in (c for c in chunks if c.doc_id == doc.doc_id):
            start_line = raw[: c.position.byte_start].count(b"\n")
            layout = (c.metadata.custom or {}).get("text_layout")
            if layout is not None and layout["prefix"]:
                # A continuation of a long fence re-opens it; of a long table repeats its header rows.
                prefix = layout["prefix"]
                assert _FENCE.match(prefix) or ("|" in prefix and "---" in prefix), prefix
                continue
            opener = _FENCE.match(text.splitlines()[start_line])
            assert not inside[start_line] or opener, (doc.uri, c.content.text[:80])
            checked += 1
    assert checked > 1000
    assert {"Query string example", "header"} <= fence_headings
    sections = {c.position.section for c in chunks}
    assert not (fence_headings - real_headings) & sections


def test_chunk_offsets_address_the_extracted_text_and_stats_match(corpora: Path, heading_run: RunLayout):
    chunks, docs = load(heading_run)
    texts = {d.doc_id: (heading_run.root / d.text_path).read_bytes() for d in docs.values()}
    for c in chunks:
        piece = texts[c.doc_id][c.position.byte_start : c.position.byte_end].decode("utf-8")
        layout = (c.metadata.custom or {}).get("text_layout")
        expected = piece if layout is None else layout["prefix"] + piece + layout["suffix"]
        assert c.content.text == expected
        assert c.content.char_count <= 1500
    stats = read_json(heading_run.chunk_stats)
    assert stats["stats"]["chunks_created"] == len(chunks)
    assert stats["chunker_config"]["strategy"] == "by_heading"
    assert len({c.chunk_id for c in chunks}) == len(chunks)


def test_dedupe_finds_the_shared_license_text_and_the_duplicated_plugin_sections(corpora: Path, tmp_path: Path):
    root = corpora / "markdown"
    layout = normalize_run(
        root,
        tmp_path,
        chunk_strategy="by_paragraph",
        detect_language=False,
        dedupe={"method": "minhash", "similarity_threshold": 0.9},
    )
    report = read_json(layout.dedupe_report)
    pairs = {(r["uri"], r["duplicate_of_uri"]) for r in report["removed"]}
    # Starlette's BSD licence repeats MkDocs' disclaimer: the first one (MkDocs) is kept.
    assert ("markdown/starlette-1.10.0/LICENSE.md", "markdown/mkdocs-1.4.2/docs/about/license.md") in pairs
    # The pymdown 'details' block docs copy sections of the 'admonition' docs.
    assert any(u.endswith("blocks/plugins/details.md") and d.endswith("blocks/plugins/admonition.md") for u, d in pairs)
    kept_ids = {r["chunk_id"] for r in iter_jsonl(layout.chunks)}
    for removed in report["removed"]:
        assert removed["chunk_id"] not in kept_ids and removed["duplicate_of"] in kept_ids
        assert removed["similarity"] >= 0.9
        # The kept chunk comes first in document order.
        assert removed["duplicate_of_uri"] <= removed["uri"]
    stats = report["stats"]
    assert stats["input_chunks"] - stats["output_chunks"] == stats["duplicates_removed"] == len(report["removed"])
