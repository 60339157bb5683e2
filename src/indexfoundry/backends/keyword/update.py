"""A rerun's keyword index from the previous one: only the changed texts are tokenized.

The score matrix of a keyword index lists every (token, text) pair, by token then by text. With
each pair's count kept beside it (``TF_NAME``), the previous index holds everything a rebuild
needs about the texts that did not change: their pairs are kept (renumbered: the vocabulary and
the text positions move, in order), the changed and new texts' pairs are made and merged in, and
every score is worked out again (a new text changes every idf and the mean length). The arrays
are those of a build from every text, bit for bit (tested).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from indexfoundry.backends.keyword.bm25 import text_stems
from indexfoundry.storage.workcache import WorkCache

# Each pair's count in its text, in the score matrix's order (int32): beside bm25s' own files.
TF_NAME = "tf.csc.index.npy"
_VOCAB = "vocab.index.json"
_INDICES = "indices.csc.index.npy"
_INDPTR = "indptr.csc.index.npy"

Array = np.ndarray[Any, Any]


@dataclass(frozen=True)
class PreviousKeywords:
    """A previous keyword index whose files verify, and the hash of each of its texts."""

    folder: Path
    chunk_ids: list[str]  # the index's texts, in order
    text_hashes: dict[str, str]  # chunk id -> SHA-256 of its keyword text


@dataclass(frozen=True)
class Pairs:
    """A corpus' vocabulary and the (token, text, count) pairs of its score matrix."""

    vocab: dict[str, int]
    tokens: Array
    docs: Array
    tf: Array
    lengths: Array  # each text's number of tokens


def updated_pairs(
    previous: PreviousKeywords,
    chunk_ids: list[str],
    keys: list[str],
    texts: Sequence[str],
    cache: WorkCache | None,
) -> Pairs | None:
    """The pairs of the corpus ``chunk_ids`` (sorted; ``keys`` their texts' hashes, ``texts``
    read only for the texts not in ``previous``), or None when ``previous`` cannot be read."""
    loaded = _load(previous.folder)
    if loaded is None:
        return None
    old_tokens_by_id, indices, indptr, old_tf = loaded
    n_new = len(chunk_ids)
    width = max(1, n_new)  # a pair's key: token * width + text, in the score matrix's order
    position = {chunk_id: i for i, chunk_id in enumerate(chunk_ids)}
    new_of_old = np.full(len(previous.chunk_ids), -1, dtype=np.int64)
    for old, chunk_id in enumerate(previous.chunk_ids):
        at = position.get(chunk_id)
        if at is not None and previous.text_hashes.get(chunk_id) == keys[at]:
            new_of_old[old] = at
    covered = np.zeros(n_new, dtype=bool)
    covered[new_of_old[new_of_old >= 0]] = True
    fresh = np.flatnonzero(~covered).tolist()
    # The kept texts' pairs: still sorted by (token, text) once both are renumbered in order.
    old_token_of_pair = np.repeat(np.arange(len(old_tokens_by_id), dtype=np.int64), np.diff(indptr))
    keep = new_of_old[indices] >= 0
    kept_tokens = old_token_of_pair[keep]
    kept_docs = new_of_old[indices[keep]]
    kept_tf = old_tf[keep].astype(np.int64)
    stems = text_stems([texts[i] for i in fresh], [keys[i] for i in fresh], cache)
    used = np.unique(kept_tokens)
    used_words = [old_tokens_by_id[i] for i in used.tolist()]
    vocab = {token: i for i, token in enumerate(sorted({*used_words, *(t for s in stems for t in s), ""}))}
    remap = np.full(len(old_tokens_by_id), -1, dtype=np.int64)
    remap[used] = np.fromiter((vocab[t] for t in used_words), dtype=np.int64, count=len(used_words))
    kept_keys = remap[kept_tokens] * width + kept_docs
    fresh_keys: list[int] = []
    fresh_tf: list[int] = []
    for doc, words in zip(fresh, stems, strict=True):
        for token, count in Counter(words).items():
            fresh_keys.append(vocab[token] * width + doc)
            fresh_tf.append(count)
    new_keys = np.asarray(fresh_keys, dtype=np.int64)
    order = np.argsort(new_keys)
    new_keys, new_tf = new_keys[order], np.asarray(fresh_tf, dtype=np.int64)[order]
    slots = np.searchsorted(kept_keys, new_keys)
    all_keys = np.insert(kept_keys, slots, new_keys)
    tf = np.insert(kept_tf, slots, new_tf)
    docs = all_keys % width
    lengths = np.bincount(docs, weights=tf, minlength=n_new).astype(np.int64)
    return Pairs(vocab, all_keys // width, docs, tf, lengths)


def _load(folder: Path) -> tuple[list[str], Array, Array, Array] | None:
    """The previous index's vocabulary (tokens by number), the pairs' texts, the column pointers
    and the pairs' counts; None when a file is missing or they do not fit together."""
    try:
        vocab = orjson.loads((folder / _VOCAB).read_bytes())
        indices = np.load(folder / _INDICES)
        indptr = np.load(folder / _INDPTR)
        tf = np.load(folder / TF_NAME)
    except (OSError, ValueError):
        return None
    tokens_by_id = [""] * len(vocab)
    for token, number in vocab.items():
        tokens_by_id[int(number)] = token
    if len(indptr) != len(vocab) + 1 or len(tf) != len(indices) or int(indptr[-1]) != len(indices):
        return None
    return tokens_by_id, indices.astype(np.int64), indptr, tf
