"""Hostile documents against normalize: one-line texts of every format and whitespace-heavy
texts finish in time linear in their size and memory bounded by design, or fail alone with
their code under the per-document limits (issue 20, findings 3 and 4)."""

from __future__ import annotations

import random

from indexfoundry.models.config import NormalizeConfig
from indexfoundry.models.records import ExtractedDocument
from indexfoundry.phases.normalize.build import build_chunks
from indexfoundry.phases.normalize.chunkers import chunk_spans
from tests.hostile.support import MB, bounded


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


def test_positions_of_chunks_in_a_20_mb_one_line_text_are_found_in_linear_time():
    # Re-encoding from the line start on every lookup took ~57 s for 20 MB (issue 20, finding 3).
    text = one_line_words(20 * MB)
    spans = chunk_spans(text, [], NormalizeConfig(chunk_strategy="fixed_chars"))
    with bounded(seconds=30, peak_mb=400):
        chunks = build_chunks(_document(text), text, spans)
    last = chunks[-1]
    assert last.position.byte_end == len(text[: spans[-1].end].encode("utf-8"))
    assert {c.position.line_start for c in chunks} == {1}
