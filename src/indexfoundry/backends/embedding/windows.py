"""Windows of a chunk longer than the embedding model's token window.

A model reads a fixed number of tokens (all-MiniLM-L6-v2: 256, special tokens included) and
drops the rest. With ``index.long_chunks: windows`` (the default) the index phase embeds such
a chunk in overlapping windows counted with the model's own tokenizer: the chunk's own vector
is its embedded text as before (the model reads its first window), and each further window
is one more vector in the store, under an id derived from the chunk id (``<chunk_id>#w1``,
``#w2`` ...) with the chunk's metadata. Semantic search keeps each chunk once, at its best
window's score, so the tail of a long chunk is searchable and the results stay chunks.

Windows start and end on word boundaries (a window's text, tokenized again, gives the same
tokens), overlap by a quarter of a window, and the last one ends at the chunk's end. Each
window repeats the chunk's breadcrumb (heading path and part marker) when it leaves at least
half the window for text. Their texts are plain strings, so they go through the embedding
cache like any chunk text.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from indexfoundry.errors import ConfigInvalid
from indexfoundry.models.embedders import EMBEDDERS
from indexfoundry.models.embedding import parse_embedding_model
from indexfoundry.storage.memo import Memo, memos_enabled

# all-MiniLM-L6-v2 (the ``local`` and ``local-int8`` models) reads 256 tokens.
LOCAL_WINDOW = 256
WINDOW_SEPARATOR = "#w"
# The share of a window each further window repeats of the one before.
OVERLAP = 0.25
# Tokens kept free in a window for the special tokens ([CLS], [SEP]) and a safety margin.
_SPECIAL_TOKENS = 2
_MARGIN = 2


def model_window(embedding_model: str) -> int | None:
    """The token window of an embedding model when IndexFoundry knows it (else None)."""
    try:
        spec = parse_embedding_model(embedding_model)
    except ConfigInvalid:
        return None
    # The packaged weights are all-MiniLM-L6-v2 (``local``, ``local-int8``).
    return LOCAL_WINDOW if EMBEDDERS[spec.provider].weights is not None else None


def window_id(chunk_id: str, number: int) -> str:
    """The store id of window ``number`` (1, 2 ...) of a chunk; window 0 is the chunk's own id."""
    return f"{chunk_id}{WINDOW_SEPARATOR}{number}"


def chunk_of(store_id: str) -> str:
    """The chunk id a store id belongs to (itself for a chunk's own vector)."""
    return store_id.split(WINDOW_SEPARATOR, 1)[0]


def is_window(store_id: str) -> bool:
    return WINDOW_SEPARATOR in store_id


def window_number(store_id: str) -> int:
    """1, 2 ... for a window's id; 0 for a chunk's own id."""
    return int(store_id.split(WINDOW_SEPARATOR, 1)[1]) if is_window(store_id) else 0


def _word_starts(encoding: Any) -> list[bool]:
    """Per token: does it begin a word (not a ``##`` continuation)?"""
    words = encoding.word_ids
    return [i == 0 or words[i] is None or words[i] != words[i - 1] for i in range(len(words))]


def _spans(n: int, first_end: int, size: int, starts: list[bool], overlap: float) -> list[tuple[int, int]]:
    """Token spans [start, end) of the windows after the first (which covers [0, first_end)),
    each overlapping the one before by ``overlap`` of a window."""
    overlap_tokens = int(size * overlap)
    out: list[tuple[int, int]] = []
    covered = first_end
    previous = 0
    while covered < n:
        start = max(previous + 1, min(covered - overlap_tokens, n - size))
        while start < n and not starts[start]:  # never begin inside a word
            start += 1
        end = min(n, start + size)
        while end < n and end > start + 1 and not starts[end]:  # never end inside a word
            end -= 1
        if start >= n or end <= start:
            break
        out.append((start, end))
        previous, covered = start, end
    return out


def window_texts(embedded: str, body: str, max_tokens: int, tokenizer: Any, overlap: float = OVERLAP) -> list[str]:
    """Texts of the windows after the first of a chunk whose embedded text is ``embedded``
    (breadcrumb + ``body``): empty when it fits ``max_tokens``. ``tokenizer`` is the model's
    own, untruncated (``tokenizers.Tokenizer``); ``overlap``: the share of a window each one
    repeats of the one before (``bench/window_research.py`` measures others)."""
    if len(tokenizer.encode(embedded).ids) <= max_tokens:
        return []
    prefix = embedded[: len(embedded) - len(body)] if embedded.endswith(body) else ""
    prefix_tokens = len(tokenizer.encode(prefix, add_special_tokens=False).ids) if prefix else 0
    room = max_tokens - _SPECIAL_TOKENS - _MARGIN
    first_end = max(1, max_tokens - _SPECIAL_TOKENS - prefix_tokens)
    if room - prefix_tokens < room // 2:  # a long breadcrumb: windows carry the text only
        prefix, prefix_tokens = "", 0
    size = room - prefix_tokens
    encoding = tokenizer.encode(body, add_special_tokens=False)
    offsets = encoding.offsets
    spans = _spans(len(encoding.ids), first_end, size, _word_starts(encoding), overlap)
    return [prefix + body[offsets[s][0] : offsets[e - 1][1]] for s, e in spans]


def local_window_texts(max_tokens: int = LOCAL_WINDOW) -> Callable[[str, str], list[str]]:
    """``window_texts`` with the default model's tokenizer."""
    from indexfoundry.backends.embedding.onnx_fp32 import _packaged_model_dir, tokenizer

    tok = tokenizer(_packaged_model_dir(), truncate=False)

    def split(embedded: str, body: str) -> list[str]:
        # Memoized in docs mode (storage/memo.py): a refresh after one edit tokenizes only the
        # changed chunks, not every long chunk of the folder again.
        if not memos_enabled():
            return window_texts(embedded, body, max_tokens, tok)
        key = f"{max_tokens}\x00{embedded}\x00{body}"
        known = _windows_memo.get_many([key])
        if key in known:
            return list(known[key])
        texts = window_texts(embedded, body, max_tokens, tok)
        _windows_memo.put_many({key: tuple(texts)})
        return texts

    return split


# Window texts of the default model's chunks, by window size, embedded text and body.
_windows_memo: Memo[tuple[str, ...]] = Memo(20_000)
