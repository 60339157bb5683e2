"""Chunks that fit the embedding model's token window: nothing cut off silently.

A model reads a fixed number of tokens (all-MiniLM-L6-v2: 256, special tokens included) and
drops the rest, so the tail of a longer chunk is invisible to semantic search. When the
window is known (``local``, ``local-int8``) or ``normalize.max_tokens`` is set, every chunk's
*embedded* text — breadcrumb and part marker included, as ``DocumentChunk.embedding_text``
builds it — is counted with the model's own tokenizer (untruncated: tokenizer.json's
128-token truncation would hide the real length), and a chunk over the limit is split
further at the finest separator that makes it fit (paragraph, line, sentence, word), with
the recursive chunker's own splitter. Pieces keep the chunk's section, breadcrumb, page and
table/fence prefix and suffix; sections split this way get part markers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from indexfoundry.backends.embedding.windows import model_window
from indexfoundry.models.config import IndexConfig, NormalizeConfig
from indexfoundry.phases.normalize.packing import Span, merge_atoms, split_atoms, trimmed
from indexfoundry.storage.hashing import sha256_text
from indexfoundry.storage.memo import Memo, memos_enabled
from indexfoundry.storage.workcache import WorkCache

_SEPARATORS = ["\n\n", "\n", ". ", "; ", ", ", " "]
# Part marker wide enough for any section: reserved while a split piece is measured.
_WIDE_PART = "999/999"
_MIN_PIECE_CHARS = 16


@dataclass(frozen=True)
class TokenWindow:
    """The most tokens a chunk's embedded text may have, and how they are counted."""

    max_tokens: int
    tokenizer: str  # what counts them (part of the phase fingerprint)
    count: Callable[[list[str]], list[int]]

    def describe(self) -> dict[str, object]:
        return {"max_tokens": self.max_tokens, "tokenizer": self.tokenizer}


def token_window(normalize: NormalizeConfig, index: IndexConfig) -> TokenWindow | None:
    """The window chunks must fit: ``normalize.max_tokens`` (never above the model's window),
    else the model's window; None when neither is known. Counted with the default model's
    tokenizer (the only one IndexFoundry ships)."""
    known = model_window(index.embedding_model)
    limit = normalize.max_tokens if normalize.max_tokens is not None else known
    if limit is None:
        return None
    if known is not None:
        limit = min(limit, known)
    from indexfoundry.backends.embedding.onnx_fp32 import local_token_counter, local_tokenizer_id

    return TokenWindow(limit, local_tokenizer_id(), local_token_counter())


def windows_embedded(index: IndexConfig) -> bool:
    """Does the index phase embed chunks longer than the model's window in windows?"""
    return index.long_chunks == "windows" and model_window(index.embedding_model) is not None


def embedded_text(span: Span, text: str, part: str | None = None) -> str:
    """What the embedder will read for ``span`` (``DocumentChunk.embedding_text``'s rule)."""
    body = span.text(text)
    crumb = span.heading_path
    if not crumb:
        return body
    marker = part if part is not None else span.part
    if marker:
        crumb = f"{crumb} [part {marker}]"
    return f"{crumb}\n\n{body}"


def _split(text: str, span: Span, tokens: int, window: TokenWindow) -> list[Span]:
    """Pieces of ``span`` that fit ``window`` (a piece that cannot shrink further is kept)."""
    body = span.end - span.start
    limit = max(_MIN_PIECE_CHARS, min(body - 1, int(body * window.max_tokens / tokens * 0.9)))
    merged = merge_atoms(split_atoms(text, span.start, span.end, _SEPARATORS, limit), limit, 0)
    pieces = trimmed(text, [replace(span, start=s, end=e, hard_cut=span.hard_cut or h) for s, e, h in merged])
    part = _WIDE_PART if span.heading_path else None
    counts = window.count([embedded_text(p, text, part) for p in pieces])
    out: list[Span] = []
    for piece, count in zip(pieces, counts, strict=True):
        shrinkable = piece.end - piece.start > _MIN_PIECE_CHARS and (piece.start, piece.end) != (span.start, span.end)
        if count > window.max_tokens and shrinkable:
            out.extend(_split(text, piece, count, window))
        else:
            out.append(piece)
    return out


def _renumber(spans: list[Span], split: set[int]) -> list[Span]:
    """Part markers ``i/n`` over each run of spans of one section that has parts."""
    out = list(spans)
    i = 0
    while i < len(out):
        j = i
        key = (out[i].heading_path, out[i].section)
        while j + 1 < len(out) and (out[j + 1].heading_path, out[j + 1].section) == key:
            j += 1
        run = range(i, j + 1)
        if out[i].heading_path and any(out[k].part or k in split for k in run) and len(run) > 1:
            for n, k in enumerate(run, start=1):
                out[k] = replace(out[k], part=f"{n}/{len(run)}")
        i = j + 1
    return out


def fit_spans(text: str, spans: list[Span], window: TokenWindow) -> tuple[list[Span], int]:
    """Spans of one document whose embedded text fits ``window``; and how many were split."""
    counts = window.count([embedded_text(s, text) for s in spans])
    out: list[Span] = []
    split: set[int] = set()
    for span, count in zip(spans, counts, strict=True):
        if count <= window.max_tokens:
            out.append(span)
            continue
        for piece in _split(text, span, count, window):
            split.add(len(out))
            out.append(piece)
    if not split:
        return spans, 0
    return _renumber(out, split), sum(1 for s, c in zip(spans, counts, strict=True) if c > window.max_tokens)


# Token counts of embedded texts by tokenizer and text (storage/memo.py: on in docs mode), so a
# refresh after one edit counts only the changed chunks' texts.
_count_memo: Memo[int] = Memo(50_000)


def token_counts(window: TokenWindow, texts: list[str], cache: WorkCache | None = None) -> list[int]:
    """The model's token count of each text (with ``cache``, the runs folder's work cache, a text
    counted by an earlier run is not counted again)."""
    keys = [f"{window.tokenizer}\n{text}" for text in texts] if memos_enabled() else []
    known = _count_memo.get_many(keys) if keys else {}
    todo = [i for i in range(len(texts)) if not keys or keys[i] not in known]
    counted: dict[int, int] = {}
    if cache is not None and todo:  # counted by an earlier run: by the tokenizer and the text's hash
        kind = f"tokens/{window.tokenizer}"
        hashes = {i: sha256_text(texts[i]) for i in todo}
        stored = cache.get_many(kind, hashes.values())
        counted = {i: stored[h] for i, h in hashes.items() if isinstance(stored.get(h), int)}
        todo = [i for i in todo if i not in counted]
        fresh = window.count([texts[i] for i in todo]) if todo else []
        cache.put_many(kind, {hashes[i]: n for i, n in zip(todo, fresh, strict=True)})
    else:
        fresh = window.count([texts[i] for i in todo]) if todo else []
    counted.update(zip(todo, fresh, strict=True))
    todo = sorted(counted)
    if keys:
        _count_memo.put_many({keys[i]: counted[i] for i in todo})
    return [counted[i] if i in counted else known[keys[i]] for i in range(len(texts))]
