"""Exact and near-duplicate removal: groups at known thresholds, first-in-order kept, scope."""

from __future__ import annotations

import pytest

from indexfoundry.models.config import DedupeOptions
from indexfoundry.models.records import ChunkContent, ChunkMetadata, ChunkPosition, ChunkSource, DocumentChunk
from indexfoundry.phases.normalize.dedupe import dedupe_chunks
from indexfoundry.storage.hashing import chunk_id_for, sha256_text

BASE = (
    "IndexFoundry turns content sources into a searchable vector index through a deterministic "
    "five phase pipeline. Each phase writes auditable artifacts, content hashes and run manifests so that "
    "a rerun with the same inputs produces byte identical outputs and unchanged work is skipped. "
) * 2
OTHER = "A completely different text about cooking pasta with tomatoes, garlic and basil for dinner tonight. " * 4


def typos(count: int, offset: int) -> str:
    text = BASE
    for i in range(count):
        at = offset + i * 53
        text = text[:at] + "#" + text[at + 1 :]
    return text


def word_changes(count: int) -> str:
    words = BASE.split()
    for i in range(count):
        j = (i * 7 + 3) % len(words)
        words[j] = words[j][::-1] + "q"
    return " ".join(words)


def chunk(text: str, doc: str = "doc-a", index: int = 0) -> DocumentChunk:
    doc_id = sha256_text(doc)
    return DocumentChunk(
        doc_id=doc_id,
        chunk_id=chunk_id_for(doc_id, index * 10_000, index * 10_000 + len(text)),
        chunk_index=index,
        source=ChunkSource(type="markdown", uri=f"{doc}.md", content_hash="c" * 64),
        content=ChunkContent(text=text, text_hash=sha256_text(text), char_count=len(text), token_count_approx=1),
        position=ChunkPosition(byte_start=index * 10_000, byte_end=index * 10_000 + len(text)),
        metadata=ChunkMetadata(content_type="text/markdown"),
    )


def char_jaccard(a: str, b: str) -> float:
    """Independent reference: Jaccard of character 5-grams of lowercased, whitespace-collapsed text."""

    def grams(text: str) -> set[str]:
        norm = " ".join(text.lower().split())
        return {norm[i : i + 5] for i in range(len(norm) - 4)}

    x, y = grams(a), grams(b)
    return len(x & y) / len(x | y)


# name -> text; each is compared with BASE. Measured similarities (minhash = exact Jaccard of
# 5-grams; simhash = 1 - Hamming/64): one typo 0.982/0.984, four typos 0.931/0.922, seven
# typos 0.885/0.859, five changed words 0.846/0.844, unrelated text 0.011/0.547. The typos
# of different variants sit at different places, so no variant is closer to another than to BASE.
VARIANTS = {
    "one_typo": typos(1, 20),
    "four_typos": typos(4, 30),
    "seven_typos": typos(7, 45),
    "five_words": word_changes(5),
    "unrelated": OTHER,
}

GROUPS = {
    0.95: {"one_typo"},
    0.9: {"one_typo", "four_typos"},
    0.8: {"one_typo", "four_typos", "seven_typos", "five_words"},
}
EXPECTED = {"minhash": GROUPS, "simhash": GROUPS}


@pytest.mark.parametrize("method", ["minhash", "simhash"])
@pytest.mark.parametrize("threshold", [0.8, 0.9, 0.95])
def test_known_near_duplicates_form_the_expected_groups_at_each_threshold(method: str, threshold: float):
    names = ["base", *VARIANTS]
    chunks = [chunk(BASE, "base")] + [chunk(text, name) for name, text in VARIANTS.items()]
    kept, report = dedupe_chunks(chunks, DedupeOptions(method=method, similarity_threshold=threshold))  # type: ignore[arg-type]
    by_id = {c.chunk_id: name for c, name in zip(chunks, names, strict=True)}
    removed = {by_id[r["chunk_id"]] for r in report["removed"]}
    assert removed == EXPECTED[method][threshold]
    # Every removed chunk names the kept base chunk (first in order), with its similarity.
    assert {by_id[r["duplicate_of"]] for r in report["removed"]} == {"base"}
    assert all(r["similarity"] >= threshold for r in report["removed"])
    if method == "minhash":
        for r in report["removed"]:
            assert r["similarity"] == pytest.approx(char_jaccard(BASE, VARIANTS[by_id[r["chunk_id"]]]), abs=1e-4)
    assert report["stats"] == {
        "input_chunks": 6,
        "output_chunks": 6 - len(removed),
        "duplicates_removed": len(removed),
        "duplicate_groups": 1 if removed else 0,
    }
    assert [c.chunk_id for c in kept] == [c.chunk_id for c in chunks if by_id[c.chunk_id] not in removed]


def test_exact_dedupe_keeps_the_first_in_document_order_and_reports_each_removed_chunk():
    chunks = [
        chunk("alpha text", "a", 0),
        chunk("beta text", "a", 1),
        chunk("alpha text", "b", 0),
        chunk("alpha text", "c", 0),
    ]
    kept, report = dedupe_chunks(chunks, DedupeOptions())
    assert [c.chunk_id for c in kept] == [chunks[0].chunk_id, chunks[1].chunk_id]
    assert report["removed"] == [
        {
            "chunk_id": chunks[i].chunk_id,
            "uri": f"{d}.md",
            "duplicate_of": chunks[0].chunk_id,
            "duplicate_of_uri": "a.md",
            "similarity": 1.0,
        }
        for i, d in ((2, "b"), (3, "c"))
    ]
    assert report["groups"] == [
        {"kept": chunks[0].chunk_id, "kept_uri": "a.md", "removed": [chunks[2].chunk_id, chunks[3].chunk_id]}
    ]
    assert report["stats"]["duplicate_groups"] == 1


@pytest.mark.parametrize("method", ["exact", "minhash", "simhash"])
def test_per_document_scope_only_removes_duplicates_within_one_document(method: str):
    chunks = [chunk(BASE, "a", 0), chunk(BASE, "b", 0), chunk(BASE, "b", 1)]
    kept, report = dedupe_chunks(chunks, DedupeOptions(method=method, scope="per_document"))  # type: ignore[arg-type]
    assert [c.chunk_id for c in kept] == [chunks[0].chunk_id, chunks[1].chunk_id]
    assert [r["duplicate_of"] for r in report["removed"]] == [chunks[1].chunk_id]
    kept, _ = dedupe_chunks(chunks, DedupeOptions(method=method, scope="global"))  # type: ignore[arg-type]
    assert [c.chunk_id for c in kept] == [chunks[0].chunk_id]


def test_a_chunk_is_compared_with_kept_chunks_only_so_duplicates_do_not_chain():
    # b is close to a, c is close to b but not to a: c must stay (it duplicates no kept chunk).
    a, b, c = BASE, word_changes(4), word_changes(8)
    chunks = [chunk(a, "x", 0), chunk(b, "x", 1), chunk(c, "x", 2)]
    assert char_jaccard(a, b) >= 0.85 and char_jaccard(b, c) >= 0.85 > char_jaccard(a, c)
    kept, report = dedupe_chunks(chunks, DedupeOptions(method="minhash", similarity_threshold=0.85))
    assert [k.chunk_id for k in kept] == [chunks[0].chunk_id, chunks[2].chunk_id]
    assert [r["chunk_id"] for r in report["removed"]] == [chunks[1].chunk_id]


@pytest.mark.parametrize("method", ["minhash", "simhash"])
def test_fuzzy_dedupe_is_deterministic(method: str):
    chunks = [chunk(BASE, "base")] + [chunk(text, name) for name, text in VARIANTS.items()]
    options = DedupeOptions(method=method, similarity_threshold=0.8)  # type: ignore[arg-type]
    assert dedupe_chunks(chunks, options) == dedupe_chunks(list(chunks), options)
