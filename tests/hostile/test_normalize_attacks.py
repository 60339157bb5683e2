"""Hostile documents against normalize: one-line texts of every format and whitespace-heavy
texts finish in time linear in their size and memory bounded by design, or fail alone with
their code under the per-document limits."""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest

from indexfoundry.models.config import NormalizeConfig
from indexfoundry.models.records import ExtractedDocument
from indexfoundry.phases.isolation import Limits
from indexfoundry.phases.normalize.build import build_chunks, chunk_documents
from indexfoundry.phases.normalize.chunkers import chunk_spans
from indexfoundry.phases.normalize.positions import TextPositions
from indexfoundry.storage.hashing import sha256_text
from indexfoundry.storage.layout import RunLayout
from tests.figures import documented
from tests.hostile.support import MB, bounded, hostile_config, run_pipeline_measured

GOOD = "# Good\n\nA normal document that must still be chunked after the hostile ones.\n"


def one_line_words(size: int, seed: int = 0) -> str:
    """About ``size`` characters of words (some non-ASCII, some markdown) on one line, no newline."""
    rng = random.Random(seed)
    stems = ["alpha", "beta", "gamma", "d\u00e9lta", "*emph*", "`code`", "[link](http://x.test/p)", "end.", "w,"]
    vocab = [f"{stem}{n}" for stem in stems for n in range(997)]
    words = rng.choices(vocab, k=size // 9)
    return " ".join(words)


def _document(text: str) -> ExtractedDocument:
    return ExtractedDocument(
        doc_id="d" * 64,
        uri="docs/one-line.md",
        format="markdown",
        content_hash="c" * 64,
        content_type="text/markdown",
        text_path="extracted/x.txt",
        text_sha256="e" * 64,
        char_count=len(text),
    )


def test_positions_of_chunks_in_a_20_mb_one_line_text_are_found_in_linear_time(update_figures: bool):
    seconds = 20
    documented("normalize.positions.seconds", seconds, update=update_figures)
    # Re-encoding from the line start on every lookup once took ~57 s for 20 MB.
    text = one_line_words(20 * MB)
    spans = chunk_spans(text, [], NormalizeConfig(chunk_strategy="fixed_chars"))
    start = time.monotonic()
    positions = TextPositions(text)
    offsets = [(positions.byte_of(s.start), positions.byte_of(s.end), positions.line_of(s.end)) for s in spans]
    assert time.monotonic() - start < seconds
    assert offsets[-1][1] == len(text[: spans[-1].end].encode("utf-8"))
    assert {line for _, _, line in offsets} == {1}


def test_chunk_records_of_a_one_line_text_carry_exact_byte_offsets():
    text = one_line_words(2 * MB)
    spans = chunk_spans(text, [], NormalizeConfig())
    chunks = build_chunks(_document(text), text, spans)
    encoded = text.encode("utf-8")
    for chunk in chunks[:: max(1, len(chunks) // 50)]:
        piece = encoded[chunk.position.byte_start : chunk.position.byte_end].decode("utf-8")
        assert piece == chunk.content.text


# ------------------------------------------------------------------ chunker memory
def nested_list(size: int) -> str:
    """An indented nested list of ``size`` characters: line i is indented by 2*i spaces, so
    the deep lines are mostly indentation, longer than any chunk."""
    lines: list[str] = []
    total = 0
    depth = 0
    while total < size:
        line = "  " * depth + f"- item {depth}\n"
        lines.append(line)
        total += len(line)
        depth += 1
    return "".join(lines)


WHITESPACE_HEAVY = {
    "nested-list": nested_list,
    "spaces": lambda size: ("word" + " " * 997) * (size // 1001),
    "blank-lines": lambda size: ("para\n" + "\n" * 995) * (size // 1000),
    "tabs-and-crlf": lambda size: "x\t\t\t\r\n\r\n \t " * (size // 15),
    "dots": lambda size: ". " * (size // 2),
}


@pytest.mark.parametrize("strategy", ["recursive", "by_paragraph", "by_heading"])
@pytest.mark.parametrize("shape", sorted(WHITESPACE_HEAVY))
def test_whitespace_heavy_text_is_chunked_in_memory_bounded_by_its_chunks_not_its_separators(
    shape: str, strategy: str, update_figures: bool
):
    peak_mb = 25
    documented("normalize.whitespace.peak_mb", peak_mb, update=update_figures)
    # One atom per separator once made an indented list cost ~236 bytes per character:
    # ~250 MB for this 1 MB. (by_page and fixed_chars share these splitters.)
    text = WHITESPACE_HEAVY[shape](MB)
    config = NormalizeConfig(chunk_strategy=strategy)  # type: ignore[arg-type]
    with bounded(seconds=60, peak_mb=peak_mb):
        spans = chunk_spans(text, [], config)
    assert spans
    assert all(s.length <= config.max_chars for s in spans)
    assert all(text[s.start : s.end].strip() for s in spans)


def test_a_long_paragraph_of_sentences_is_segmented_in_linear_time():
    # pysbd is quadratic in its input (20 s for 70 KB, ~80 s for this 120 KB); it sees bounded windows.
    text = "".join(f"Sentence number {i} is here. " for i in range(4_000))
    start = time.monotonic()
    spans = chunk_spans(text, [], NormalizeConfig(chunk_strategy="by_sentence"))
    assert time.monotonic() - start < 40
    assert spans[0].start == 0
    assert all(s.length <= 1500 for s in spans)
    assert all(text[s.start : s.end].endswith(".") for s in spans)


# ------------------------------------------------------------------ per-document limits
def _layout_with(tmp_path: Path, texts: dict[str, str]) -> tuple[RunLayout, list[ExtractedDocument]]:
    layout = RunLayout(tmp_path / "run")
    layout.extracted_dir.mkdir(parents=True)
    documents: list[ExtractedDocument] = []
    for name, text in texts.items():
        key = sha256_text(name)
        path = layout.extracted_text(key)
        path.write_text(text, encoding="utf-8")
        documents.append(
            _document(text).model_copy(
                update={
                    "doc_id": sha256_text("doc:" + name),
                    "uri": f"docs/{name}",
                    "text_path": path.relative_to(layout.root).as_posix(),
                }
            )
        )
    return layout, documents


@pytest.mark.slow
def test_a_document_that_chunks_past_the_time_limit_fails_alone_with_chunk_error(tmp_path: Path):
    slow = "".join(f"Sentence number {i} is here. " for i in range(200_000))  # minutes of pysbd
    layout, documents = _layout_with(tmp_path, {"good.md": GOOD, "slow.txt": slow})
    failed: dict[str, str] = {}
    result = chunk_documents(
        layout,
        documents,
        NormalizeConfig(chunk_strategy="by_sentence"),
        on_error=lambda doc, error: failed.update({doc.uri: error.code}),
        limits=Limits(workers=1, timeout_s=8, memory_mb=1024),
    )
    assert failed == {"docs/slow.txt": "CHUNK_ERROR"}
    assert result.documents == 1
    assert {c.doc_id for c in result.chunks} == {documents[0].doc_id}


def test_a_document_that_chunks_past_the_memory_limit_fails_alone_with_chunk_error(tmp_path: Path):
    # 4 MB of tiny paragraphs: ~65,000 chunks of min_chars, more than 64 MB of records.
    tiny = "tiny paragraph\n\n" * (4 * MB // 16)
    layout, documents = _layout_with(tmp_path, {"good.md": GOOD, "tiny.md": tiny})
    failed: dict[str, str] = {}
    result = chunk_documents(
        layout,
        documents,
        NormalizeConfig(chunk_strategy="by_paragraph", min_chars=50),
        on_error=lambda doc, error: failed.update({doc.uri: error.code}),
        limits=Limits(workers=1, timeout_s=120, memory_mb=64),
    )
    assert failed == {"docs/tiny.md": "CHUNK_ERROR"}
    assert result.documents == 1


# ------------------------------------------------------------------ two huge documents, end to end
def _indented_list_file(path: Path, size: int) -> None:
    with path.open("w", encoding="utf-8") as handle:
        written = depth = 0
        while written < size:
            line = "  " * depth + f"- item {depth}\n"
            handle.write(line)
            written += len(line)
            depth += 1


def _one_line_file(path: Path, size: int) -> None:
    """``size`` bytes (just under: the size limit is 50 MB) of words on one line."""
    with path.open("wb") as handle:
        written = seed = 0
        while written < size:
            piece = (one_line_words(MB, seed=seed) + " ").encode("utf-8")[: size - written]
            handle.write(piece.decode("utf-8", "ignore").encode("utf-8"))
            written += len(piece)
            seed += 1


DOCUMENTS = {
    "one-line-49mb.md": lambda path: _one_line_file(path, 49 * MB),
    "indented-36mb.md": lambda path: _indented_list_file(path, 36 * MB),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(DOCUMENTS))
def test_a_49_mb_one_line_and_a_36_mb_indented_document_finish_or_fail_alone_in_4_minutes_and_2_gb(
    name: str, tmp_path: Path, runs_dir: Path, update_figures: bool
):
    seconds = 240
    rss_mb = 2048
    documented("normalize.huge_documents.seconds", seconds, update=update_figures)
    documented("normalize.huge_documents.rss_mb", rss_mb, update=update_figures)
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "good.md").write_text(GOOD)
    DOCUMENTS[name](folder / name)
    config = hostile_config(folder, timeout_s=60, memory_mb=2048, workers=1)
    config["connect"]["sources"][0]["max_file_size_mb"] = 50
    # Language detection costs a few ms per chunk (linear, ~36,000 chunks here): it is not the attack.
    config["normalize"]["detect_language"] = False
    # Nor is the vector store: embedded Chroma's own insert of the 49 MB case's 37,661 vectors took
    # 220-334 s of a 345-468 s index phase on a loaded machine (docs/benchmarks.md). The local store
    # keeps every other part of the index phase (embedding, BM25, prune, verify) on the full input.
    config["index"]["vector_db"] = {"provider": "local"}
    result = run_pipeline_measured(config, tmp_path, runs_dir, timeout=300)
    codes = result.codes()
    assert "docs/good.md" not in codes
    assert set(codes.values()) <= {"CHUNK_ERROR", "PARSE_ERROR"}, codes
    assert result.status in {"completed", "partial"}
    assert result.chunks > 0
    # The goal is 2 minutes on these 2 cores (measured: 118 s while the machine was busy);
    # the bound is twice that so a CI machine shared with another job does not fail it.
    assert result.seconds < seconds
    assert result.peak_rss_mb < rss_mb
