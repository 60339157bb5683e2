"""Windows of a chunk longer than the model's token window (``backends/embedding/windows.py``),
counted with the default model's real tokenizer (tokenizer.json only: no weights are loaded)."""

from __future__ import annotations

import itertools

from indexfoundry.backends.embedding.onnx_fp32 import _packaged_model_dir, tokenizer
from indexfoundry.backends.embedding.windows import (
    chunk_of,
    is_window,
    local_window_texts,
    window_id,
    window_number,
    window_texts,
)

TOK = tokenizer(_packaged_model_dir(), truncate=False)
BODY = " ".join(f"word{i} embeddings tokenisation" for i in range(220))  # ~1,300 tokens


def tokens(text: str) -> int:
    return len(TOK.encode(text).ids)


def test_a_chunk_that_fits_the_window_has_no_further_windows():
    assert window_texts("short text", "short text", 256, TOK) == []


def test_windows_fit_cover_the_chunk_to_its_end_and_start_and_end_on_words():
    windows = window_texts(BODY, BODY, 256, TOK)
    assert len(windows) >= 5
    assert all(tokens(w) <= 256 for w in windows)
    assert all(w in BODY for w in windows)
    assert BODY.endswith(windows[-1])
    words = set(BODY.split())
    assert all(w.split()[0] in words and w.split()[-1] in words for w in windows)  # never cut inside a word
    # The first window is the chunk's own vector (the model reads its first 254 tokens);
    # every word of the chunk is in some window, neighbours overlap.
    first = TOK.decode(TOK.encode(BODY).ids[1:255])
    seen = set(first.split()) | {word for w in windows for word in w.split()}
    assert seen == words
    assert all(set(a.split()) & set(b.split()) for a, b in itertools.pairwise(windows))


def test_each_window_repeats_the_breadcrumb_unless_it_would_take_half_the_window():
    crumb = "Guide > Install [part 2/3]\n\n"
    windows = window_texts(crumb + BODY, BODY, 256, TOK)
    assert windows and all(w.startswith(crumb) and tokens(w) <= 256 for w in windows)
    long_crumb = " > ".join(["heading"] * 100) + "\n\n"
    bare = window_texts(long_crumb + BODY, BODY, 256, TOK)
    assert bare and not any(w.startswith("heading") for w in bare)


def test_windows_are_deterministic_and_their_ids_name_the_chunk():
    assert local_window_texts()(BODY, BODY) == window_texts(BODY, BODY, 256, TOK)
    wid = window_id("ab" * 32, 3)
    assert is_window(wid) and chunk_of(wid) == "ab" * 32 and window_number(wid) == 3
    assert not is_window("ab" * 32) and chunk_of("ab" * 32) == "ab" * 32 and window_number("ab" * 32) == 0


def test_with_memos_on_a_chunks_windows_are_the_same_and_kept_for_the_next_refresh():
    from indexfoundry.backends.embedding import windows
    from indexfoundry.storage.memo import disable_memos, enable_memos

    expected = window_texts(BODY, BODY, 256, TOK)
    enable_memos()
    try:
        split = local_window_texts()
        assert split(BODY, BODY) == expected
        key = f"256\x00{BODY}\x00{BODY}"
        assert windows._windows_memo.get_many([key]) == {key: tuple(expected)}
        assert split(BODY, BODY) == expected  # from the memo
    finally:
        disable_memos()
