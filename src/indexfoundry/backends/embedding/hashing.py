"""The ``hash`` embedder: deterministic feature hashing of words; no model, for tests and benchmarks."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable

import numpy as np

from indexfoundry.backends.embedding.base import Embedder, Vectors, l2_normalize
from indexfoundry.models.config import IndexConfig
from indexfoundry.models.embedding import DEFAULT_HASH_DIMENSIONS, HashModel

_TOKEN = re.compile(r"\w+", re.UNICODE)


# Each word's 64-bit blake2b value (its slot and sign), shared by every call: a batch of 32 texts
# hashes only words no earlier batch had. Bounded: cleared when it holds this many words.
_TOKEN_VALUES: dict[str, int] = {}
_TOKEN_VALUES_MAX = 200_000


def _token_value(token: str) -> int:
    value = int.from_bytes(hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest(), "little")
    if len(_TOKEN_VALUES) >= _TOKEN_VALUES_MAX:
        _TOKEN_VALUES.clear()
    _TOKEN_VALUES[token] = value
    return value


def hash_embed(texts: list[str], dimensions: int) -> Vectors:
    """Signed feature hashing of lower-cased words, L2-normalised (the ``hash`` model): each word
    adds +1 (top bit of its blake2b value set) or -1 at slot ``value % dimensions``. Counted in
    numpy (integer sums, exact in float32 as the one-by-one adds were: the same bytes)."""
    known = _TOKEN_VALUES.get
    values: list[int] = []
    rows: list[int] = []
    for row, text in enumerate(texts):
        found = [known(token) or _token_value(token) for token in _TOKEN.findall(text.lower())]
        values.extend(found)
        rows.extend([row] * len(found))
    hashed = np.array(values, dtype=np.uint64)
    slots = np.array(rows, dtype=np.int64) * dimensions + (hashed % np.uint64(dimensions)).astype(np.int64)
    signs = np.where((hashed >> np.uint64(63)) & np.uint64(1), 1.0, -1.0)
    counts = np.bincount(slots, weights=signs, minlength=len(texts) * dimensions)
    return l2_normalize(counts.reshape(len(texts), dimensions).astype(np.float32))


class HashEmbedder:
    """Deterministic bag-of-words feature hashing (signed), L2-normalised.

    Not a semantic model, but texts sharing words get similar vectors, so retrieval tests
    are meaningful without loading a neural model.
    """

    backend = "hash"

    def __init__(self, dimensions: int = 384) -> None:
        self.dimensions = dimensions
        self.model_id = f"hash:{dimensions}"

    def embed(self, texts: list[str]) -> Vectors:
        return hash_embed(texts, self.dimensions)


# Opened through its entry in ``models/embedders.py``: ``opener(spec, config, warn)``.
def open_hash(spec: HashModel, config: IndexConfig, warn: Callable[[str], None] | None) -> Embedder:
    """Feature hashing at the spec's dimensions, else the config's, else the default."""
    return HashEmbedder(spec.dimensions or config.dimensions or DEFAULT_HASH_DIMENSIONS)
