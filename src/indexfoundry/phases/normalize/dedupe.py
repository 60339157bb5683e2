"""Chunk deduplication: exact (text hash), simhash and minhash.

Chunks are visited in document order (the order of ``chunks.jsonl``); a chunk is removed
when it duplicates a chunk kept before it, so the kept chunk of every group is the first
one in document order and a removed chunk always names that kept chunk. Nothing chains:
a chunk is compared with kept chunks only.

Near-duplicate similarity is measured on character 5-gram shingles of the lowercased,
whitespace-collapsed text (language-agnostic):
- ``minhash``: datasketch ``MinHashLSH`` (128 permutations from seed 1, CRC-32 shingle hashes)
  finds candidates, and
  the exact Jaccard similarity of the shingle sets decides and is reported;
- ``simhash``: 64-bit simhash of the shingles; similarity = 1 - Hamming distance / 64.
Both are deterministic: fixed seeds, content hashes, no random sampling.
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Callable
from typing import Any

import numpy as np

from indexfoundry.models.config import DedupeOptions
from indexfoundry.models.records import DocumentChunk

SHINGLE_CHARS = 5
NUM_PERM = 128
MINHASH_SEED = 1
MINHASH_SCHEME = "affine32"
SIMHASH_BITS = 64
# LSH only proposes candidates (verified exactly afterwards), so it runs at a lower
# threshold than the user's to miss fewer true duplicates.
_LSH_SLACK = 0.3


def shingles(text: str, k: int = SHINGLE_CHARS) -> set[str]:
    """Character k-grams of the normalized text (the whole text when it is shorter)."""
    norm = " ".join(text.lower().split())
    if len(norm) <= k:
        return {norm}
    return {norm[i : i + k] for i in range(len(norm) - k + 1)}


def jaccard(a: set[str], b: set[str]) -> float:
    """Exact Jaccard similarity of two sets."""
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def _hash64(values: list[str]) -> np.ndarray:
    return np.array(
        [int.from_bytes(hashlib.blake2b(v.encode("utf-8"), digest_size=8).digest(), "little") for v in values],
        dtype=np.uint64,
    )


def simhash(features: set[str]) -> int:
    """64-bit simhash of a feature set (features sorted first, so the result is order-free)."""
    if not features:
        return 0
    hashes = _hash64(sorted(features))
    bits = np.unpackbits(hashes.view(np.uint8).reshape(-1, 8), axis=1, bitorder="little")
    votes = bits.astype(np.int64).sum(axis=0) * 2 - len(hashes)
    value = 0
    for bit in np.flatnonzero(votes > 0):
        value |= 1 << int(bit)
    return value


def simhash_similarity(a: int, b: int) -> float:
    """1 - Hamming distance / 64."""
    return 1.0 - (a ^ b).bit_count() / SIMHASH_BITS


# A matcher is fed chunks in order; it returns (index of the kept chunk duplicated, similarity)
# or None, and remembers the chunk as kept when it returns None.
Matcher = Callable[[int, DocumentChunk], tuple[int, float] | None]


def _simhash_matcher(threshold: float) -> Matcher:
    kept_index: list[int] = []
    kept_hash: list[int] = []
    max_distance = int((1.0 - threshold) * SIMHASH_BITS + 1e-9)

    def match(index: int, chunk: DocumentChunk) -> tuple[int, float] | None:
        value = simhash(shingles(chunk.content.text))
        if kept_hash:
            xor = np.array(kept_hash, dtype=np.uint64) ^ np.uint64(value)
            distances = np.bitwise_count(xor)
            hits = np.flatnonzero(distances <= max_distance)
            if hits.size:
                hit = int(hits[0])
                return kept_index[hit], simhash_similarity(kept_hash[hit], value)
        kept_index.append(index)
        kept_hash.append(value)
        return None

    return match


def _minhash_matcher(threshold: float) -> Matcher:
    from datasketch import MinHash, MinHashLSH

    lsh = MinHashLSH(threshold=max(0.5, threshold - _LSH_SLACK), num_perm=NUM_PERM)
    kept_sets: dict[int, set[str]] = {}
    # Permutations drawn once from the fixed seed and shared by every signature.
    template = MinHash(num_perm=NUM_PERM, seed=MINHASH_SEED, scheme=MINHASH_SCHEME)

    def match(index: int, chunk: DocumentChunk) -> tuple[int, float] | None:
        grams = shingles(chunk.content.text)
        signature = MinHash(
            num_perm=NUM_PERM,
            seed=MINHASH_SEED,
            permutations=template.permutations,
            scheme=MINHASH_SCHEME,
            hashfunc=zlib.crc32,  # stable across machines, and twice as fast as the default sha1
        )
        signature.update_batch([g.encode("utf-8") for g in sorted(grams)])
        best: tuple[int, float] | None = None
        for candidate in sorted(lsh.query(signature)):
            similarity = jaccard(grams, kept_sets[candidate])
            if similarity >= threshold:
                best = (candidate, similarity)
                break
        if best is not None:
            return best
        lsh.insert(index, signature)
        kept_sets[index] = grams
        return None

    return match


def _matcher(options: DedupeOptions) -> Matcher:
    if options.method == "simhash":
        return _simhash_matcher(options.similarity_threshold)
    return _minhash_matcher(options.similarity_threshold)


def removals(chunks: list[DocumentChunk], options: DedupeOptions) -> dict[int, tuple[int, float]]:
    """Which chunks dedupe removes: index -> (index of the kept chunk it duplicates, similarity)."""
    if options.method == "exact":
        return exact_removals([(_scope(c.doc_id, options), c.content.text_hash) for c in chunks])
    matchers: dict[str, Matcher] = {}
    removed_at: dict[int, tuple[int, float]] = {}
    for index, chunk in enumerate(chunks):
        scope = _scope(chunk.doc_id, options)
        if scope not in matchers:
            matchers[scope] = _matcher(options)
        found = matchers[scope](index, chunk)
        if found is not None:
            removed_at[index] = found
    return removed_at


def _scope(doc_id: str, options: DedupeOptions) -> str:
    return doc_id if options.scope == "per_document" else ""


def exact_removals(keys: list[tuple[str, str]]) -> dict[int, tuple[int, float]]:
    """Exact dedupe over (scope, text hash) keys in order: each key after its first occurrence
    is removed as a duplicate of it (similarity 1.0). Needs the hashes only, so a rerun can
    dedupe a large run's chunks from its per-document figures without reading their texts."""
    first: dict[tuple[str, str], int] = {}
    removed_at: dict[int, tuple[int, float]] = {}
    for index, key in enumerate(keys):
        found = first.setdefault(key, index)
        if found != index:
            removed_at[index] = (found, 1.0)
    return removed_at


def dedupe_report(
    ids: list[tuple[str, str]], removed_at: dict[int, tuple[int, float]], options: DedupeOptions
) -> dict[str, Any]:
    """The dedupe report of chunks ``ids`` ((chunk_id, uri) in order) after ``removals``."""
    removed: list[dict[str, Any]] = []
    groups: dict[int, list[str]] = {}
    for index in sorted(removed_at):
        original_index, similarity = removed_at[index]
        (chunk_id, uri), (original_id, original_uri) = ids[index], ids[original_index]
        groups.setdefault(original_index, []).append(chunk_id)
        removed.append(
            {
                "chunk_id": chunk_id,
                "uri": uri,
                "duplicate_of": original_id,
                "duplicate_of_uri": original_uri,
                "similarity": round(similarity, 4),
            }
        )
    return {
        "method": options.method,
        "scope": options.scope,
        "similarity_threshold": options.similarity_threshold,
        "stats": {
            "input_chunks": len(ids),
            "output_chunks": len(ids) - len(removed_at),
            "duplicates_removed": len(removed),
            "duplicate_groups": len(groups),
        },
        "removed": removed,
        "groups": [
            {"kept": ids[i][0], "kept_uri": ids[i][1], "removed": chunk_ids} for i, chunk_ids in sorted(groups.items())
        ],
    }


def dedupe_chunks(chunks: list[DocumentChunk], options: DedupeOptions) -> tuple[list[DocumentChunk], dict[str, Any]]:
    """Remove duplicate chunks; returns the kept chunks (in order) and the dedupe report."""
    removed_at = removals(chunks, options)
    kept = [c for i, c in enumerate(chunks) if i not in removed_at]
    return kept, dedupe_report([(c.chunk_id, c.source.uri) for c in chunks], removed_at, options)


def no_dedupe_report(count: int) -> dict[str, Any]:
    """The dedupe report of a run with dedupe turned off."""
    return {
        "method": None,
        "stats": {"input_chunks": count, "output_chunks": count, "duplicates_removed": 0, "duplicate_groups": 0},
        "removed": [],
        "groups": [],
    }
