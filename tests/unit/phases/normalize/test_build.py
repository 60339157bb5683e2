"""Chunks built from spans: ids by place, not only by text; chunk stats and the chunker's config hash;
documents chunked by one run are not chunked again by the next run in the same runs folder (the
work cache), and the chunks are byte-identical with or without it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from indexfoundry import api
from indexfoundry.models.config import NormalizeConfig
from indexfoundry.models.records import ExtractedDocument, PageExtraction
from indexfoundry.phases.extract.markdown import find_headings
from indexfoundry.phases.normalize import build
from indexfoundry.phases.normalize.build import build_chunks, chunk_stats, chunker_config
from indexfoundry.phases.normalize.chunkers import chunk_spans
from indexfoundry.storage.layout import RunLayout
from tests.conftest import folder_config, write_tree


def cfg(strategy: str, **kw: object) -> NormalizeConfig:
    return NormalizeConfig.model_validate({"chunk_strategy": strategy, **kw})


def doc_for(text: str, uri: str = "docs/a.md", doc_id: str = "d" * 64) -> ExtractedDocument:
    return ExtractedDocument(
        doc_id=doc_id,
        uri=uri,
        format="markdown",
        content_hash="c" * 64,
        content_type="text/markdown",
        text_path="extracted/x.txt",
        text_sha256="t" * 64,
        char_count=len(text),
        headings=find_headings(text),
    )


def chunks_of(text: str, config: NormalizeConfig, pages: list[PageExtraction] | None = None):
    return build_chunks(doc_for(text), text, chunk_spans(text, find_headings(text), config, pages))


def test_identical_paragraphs_at_different_places_get_different_ids():
    para = "The same paragraph, repeated word for word, appears twice in this document here."
    text = f"{para}\n\n{para}\n"
    chunks = chunks_of(text, cfg("by_paragraph", min_chars=50))
    same = [c for c in chunks if c.content.text == para]
    assert len(same) == 2
    assert same[0].content.text_hash == same[1].content.text_hash
    assert same[0].chunk_id != same[1].chunk_id


_LONG_CODE = "\n".join(f"    widget.configure(part={n}, colour='blue')  # step {n}" for n in range(40))
_CODE_DOC = (
    "# Setup\n\nIntro about the widget.\n\n"
    f"```python title=setup.py\ndef setup():\n{_LONG_CODE}\n```\n\nAfter the code.\n"
)


@pytest.mark.parametrize("strategy", ["recursive", "fixed_chars"])
def test_a_chunk_cut_from_inside_a_long_code_block_records_the_fence_it_begins_in(strategy: str):
    chunks = chunks_of(_CODE_DOC, cfg(strategy, max_chars=400, min_chars=50, overlap_chars=0))
    body_start, closer = _CODE_DOC.index("def setup"), _CODE_DOC.index("\n```\n") + 1
    for chunk in chunks:
        start = len(_CODE_DOC.encode()[: chunk.position.byte_start].decode())
        inside = body_start <= start <= closer
        assert chunk.position.fence == ("```python title=setup.py" if inside else None), chunk.content.text
    assert sum(c.position.fence is not None for c in chunks) >= 3  # the middle chunks and the last one
    # The text and the id stay those of the slice: only what a renderer shows gets the opener.
    raw = _CODE_DOC.encode()
    assert all(c.content.text == raw[c.position.byte_start : c.position.byte_end].decode() for c in chunks)


def test_parts_of_a_fence_that_reopen_it_themselves_record_no_fence():
    chunks = chunks_of(_CODE_DOC, cfg("by_heading", max_chars=400, min_chars=50))
    parts = [c for c in chunks if "widget.configure" in c.content.text]
    assert len(parts) >= 3
    assert all(p.content.text.startswith("```python title=setup.py\n") for p in parts[1:])
    assert all(c.position.fence is None for c in chunks)


def test_stats_count_small_and_hard_cut_chunks_and_config_hash_follows_settings():
    text = "x" * 450 + "\n\nsmall"
    config = cfg("recursive", max_chars=200, overlap_chars=0)
    spans = chunk_spans(text, [], config)
    chunks = build_chunks(doc_for(text), text, spans)
    stats = chunk_stats(1, chunks, config, sum(s.hard_cut for s in spans))
    assert stats["chunks_at_max"] == 3 and stats["chunks_below_min"] == 1
    assert stats["chunks_created"] == len(chunks) and stats["total_chars"] == 457
    assert (
        chunker_config(config)["config_hash"]
        == chunker_config(cfg("recursive", max_chars=200, overlap_chars=0))["config_hash"]
    )
    assert chunker_config(config)["config_hash"] != chunker_config(cfg("recursive", max_chars=300))["config_hash"]


DOCS = {
    f"doc-{n}.md": f"# Title {n}\n\nThe first paragraph of document {n}, long enough to be a chunk of its own.\n\n"
    f"## Part two\n\nThe second section of document {n} says something else entirely.\n"
    for n in range(4)
}


@pytest.fixture
def chunked(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The uris of the documents actually chunked (in this process: extract.workers 0)."""
    seen: list[str] = []
    real = build._chunked

    def counting(doc: Any, *args: Any, **kwargs: Any) -> build.ChunkedDocument:
        seen.append(doc.uri)
        return real(doc, *args, **kwargs)

    monkeypatch.setattr(build, "_chunked", counting)
    return seen


def _config(docs: Path) -> dict[str, Any]:
    return folder_config(docs, extract={"workers": 0})


def _chunks(runs: Path, run_id: str) -> bytes:
    return RunLayout(runs / run_id).chunks.read_bytes()


def test_a_run_after_one_edit_chunks_only_the_changed_document(tmp_path: Path, chunked: list[str]):
    docs = write_tree(tmp_path / "docs", DOCS)
    runs = tmp_path / "runs"
    first = api.pipeline_run(_config(docs), runs_dir=runs)
    assert first.status == "completed" and len(chunked) == 4
    (docs / "doc-2.md").write_text(DOCS["doc-2.md"] + "\n## Added\n\nA new section added by an edit.\n")
    chunked.clear()
    second = api.pipeline_run(_config(docs), runs_dir=runs, base=first.run_id)
    assert second.status == "completed"
    assert chunked == ["docs/doc-2.md"]
    chunked.clear()
    fresh_runs = tmp_path / "fresh"
    fresh = api.pipeline_run(_config(docs), runs_dir=fresh_runs)  # an empty runs folder chunks everything
    assert len(chunked) == 4
    assert _chunks(runs, second.run_id) == _chunks(fresh_runs, fresh.run_id)


def test_a_forced_normalize_chunks_every_document_again(tmp_path: Path, chunked: list[str]):
    docs = write_tree(tmp_path / "docs", DOCS)
    runs = tmp_path / "runs"
    first = api.pipeline_run(_config(docs), runs_dir=runs)
    before = _chunks(runs, first.run_id)
    chunked.clear()
    again = api.pipeline_run(_config(docs), runs_dir=runs, base=first.run_id, force=True)
    assert len(chunked) == 4
    assert _chunks(runs, again.run_id) == before


def test_a_cached_document_comes_back_equal(tmp_path: Path):
    from indexfoundry.models.records import ChunkContent, ChunkMetadata, ChunkPosition, ChunkSource, DocumentChunk
    from indexfoundry.storage.workcache import WorkCache

    chunk = DocumentChunk(
        doc_id="d" * 64,
        chunk_id="c" * 64,
        chunk_index=0,
        source=ChunkSource(type="markdown", uri="docs/a.md", content_hash="e" * 64),
        content=ChunkContent(text="Some text", text_hash="f" * 64, char_count=9, token_count_approx=3),
        position=ChunkPosition(byte_start=0, byte_end=9, line_start=1, line_end=1),
        metadata=ChunkMetadata(content_type="text/markdown", heading_path=None),
    )
    one = build.ChunkedDocument(chunks=[chunk], hard_cuts=1, split_for_window=2, content_free=3)
    with WorkCache.for_runs(tmp_path) as work:
        cache = build.ChunkCache(work, "chunks/test")
        cache.put_many({"key": one})
        back = cache.get_many(["key", "missing"])
    assert list(back) == ["key"]
    assert back["key"] == one
