"""The BM25 keyword index: stemmed matching, filter masks, byte-identical rebuilds."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from indexfoundry.backends.keyword.bm25 import KeywordIndex, build_keyword_index, corpus_token_ids, tokenize
from indexfoundry.errors import IndexFoundryError
from indexfoundry.models.records import DocumentChunk
from indexfoundry.storage.hashing import chunk_id_for, sha256_text
from indexfoundry.storage.layout import RunLayout
from indexfoundry.storage.memo import disable_memos, enable_memos
from tests.conftest import REPO

TEXTS = {
    "cats": "The cat sat on the mat while other cats were sleeping.",
    "dogs": "Dogs are running in the park and chasing balls.",
    "both": "A cat and a dog play together in the garden.",
    "theme": "Set the theme colours and fonts in the configuration file.",
}


def make_chunk(name: str, text: str) -> DocumentChunk:
    doc_id = sha256_text(name)
    return DocumentChunk.model_validate(
        {
            "doc_id": doc_id,
            "chunk_id": chunk_id_for(doc_id, 0, len(text)),
            "chunk_index": 0,
            "source": {"type": "txt", "uri": f"docs/{name}.txt", "content_hash": doc_id},
            "content": {"text": text, "text_hash": sha256_text(text), "char_count": len(text), "token_count_approx": 1},
            "position": {"byte_start": 0, "byte_end": len(text)},
            "metadata": {"content_type": "text/plain"},
        }
    )


CHUNKS = {name: make_chunk(name, text) for name, text in TEXTS.items()}
ID = {name: c.chunk_id for name, c in CHUNKS.items()}


def layout_at(root: Path) -> RunLayout:
    return RunLayout(root / "01890a5d-ac96-774b-bcce-b302099a8057")


def digest(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def test_stemming_matches_other_word_forms_and_stopwords_match_nothing(tmp_path: Path):
    layout = layout_at(tmp_path)
    build_keyword_index(layout, list(CHUNKS.values()))
    index = KeywordIndex.load(layout)
    hits = index.search("running dog", 10)
    assert [h.chunk_id for h in hits][:1] == [ID["dogs"]]
    assert {h.chunk_id for h in hits} == {ID["dogs"], ID["both"]}
    assert all(h.score > 0 for h in hits)
    assert index.search("the and of", 10) == []
    assert index.search("zebra", 10) == []


def test_a_mask_keeps_only_the_allowed_chunks(tmp_path: Path):
    layout = layout_at(tmp_path)
    build_keyword_index(layout, list(CHUNKS.values()))
    index = KeywordIndex.load(layout)
    mask = np.array([cid != ID["cats"] for cid in index.chunk_ids], dtype=np.float32)
    assert [h.chunk_id for h in index.search("cat", 10, mask)] == [ID["both"]]


def test_rebuilding_in_another_order_and_hash_seed_writes_byte_identical_files(tmp_path: Path):
    first = layout_at(tmp_path / "a")
    build_keyword_index(first, list(CHUNKS.values()))
    second = layout_at(tmp_path / "b")
    script = (
        "import sys; from pathlib import Path; "
        "from tests.unit.backends.keyword.test_bm25 import CHUNKS, layout_at; "
        "from indexfoundry.backends.keyword.bm25 import build_keyword_index; "
        "build_keyword_index(layout_at(Path(sys.argv[1])), list(reversed(list(CHUNKS.values()))))"
    )
    repo = REPO
    subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "b")],
        check=True,
        cwd=repo,
        env={"PYTHONHASHSEED": "12345", "PATH": "/usr/bin:/bin", "PYTHONPATH": str(repo / "src")},
        timeout=120,
    )
    assert digest(first.keyword_index_dir) == digest(second.keyword_index_dir)
    build_keyword_index(first, list(CHUNKS.values()))  # rebuild in place replaces the folder
    assert digest(first.keyword_index_dir) == digest(second.keyword_index_dir)


def test_an_empty_run_has_an_empty_keyword_index(tmp_path: Path):
    layout = layout_at(tmp_path)
    files = build_keyword_index(layout, [])
    assert [p.name for p in files] == ["chunk_ids.json"]
    assert KeywordIndex.load(layout).search("anything", 5) == []


def test_a_run_without_keyword_index_is_not_found(tmp_path: Path):
    with pytest.raises(IndexFoundryError) as caught:
        KeywordIndex.load(layout_at(tmp_path))
    assert caught.value.code == "NOT_FOUND"


def test_ties_at_the_top_k_cut_are_decided_by_chunk_id(tmp_path: Path):
    twins = [make_chunk(f"twin{i}", "The widget installs itself.") for i in range(6)]
    layout = layout_at(tmp_path)
    build_keyword_index(layout, [*twins, *CHUNKS.values()])
    index = KeywordIndex.load(layout)
    everything = index.search("widget", 100)
    assert [h.chunk_id for h in everything] == sorted(c.chunk_id for c in twins)
    assert index.search("widget", 2) == everything[:2]


MIXED = [
    "The Running DOGS ran; the dog runs, and runners_up ran_2 x y 42 4.2",
    "",
    "the and of a",  # only stopwords
    "Caf\u00e9 na\u00efve stra\u00dfe \u0441\u043e\u0431\u0430\u043a\u0438 \u72ac\u304c\u8d70\u308b I'm isn't",
    "The Running DOGS ran; the dog runs, and runners_up ran_2 x y 42 4.2",  # a duplicate text
    "configuration configured configures CONFIGURING -- theme_colours",
]


def test_the_one_pass_corpus_tokenizer_gives_bm25s_tokens_and_the_memo_paths_ids(tmp_path: Path):
    vocab, ids = corpus_token_ids(MIXED)
    expected = tokenize(MIXED)  # bm25s.tokenize, text by text (memos off)
    token = {number: t for t, number in vocab.items()}
    assert [[token[i] for i in doc] for doc in ids] == expected
    assert {"run", "dog", "runners_up", "ran_2", "42", "configur"} <= set(vocab)  # stemmed, words of 2+ chars
    assert list(vocab) == sorted(vocab) and "" in vocab and ids[1] == [] and ids[2] == []
    enable_memos()
    try:
        assert corpus_token_ids(MIXED) == (vocab, ids)  # docs mode's memo path: the same ids
        chunks = [make_chunk(f"m{i}", text or "-") for i, text in enumerate(MIXED)]
        build_keyword_index(layout_at(tmp_path / "memo"), chunks)
    finally:
        disable_memos()
    build_keyword_index(layout_at(tmp_path / "plain"), chunks)
    assert digest(layout_at(tmp_path / "memo").keyword_index_dir) == digest(
        layout_at(tmp_path / "plain").keyword_index_dir
    )


def test_a_query_is_tokenized_as_bm25s_tokenizes_it() -> None:
    from indexfoundry.backends.keyword.bm25 import _stemmer, query_tokens

    stemmer = _stemmer()
    for text in [*MIXED, "", "the and of", "Running RUNS ran: run-time, naïve café 42 x"]:
        assert query_tokens(text, stemmer) == tokenize([text], stemmer)[0]


def _corpus(seed: int, docs: int) -> list[str]:
    """Texts of Zipf-like word frequencies and many lengths (empty and stopword-only ones too)."""
    rng = np.random.default_rng(seed)
    words = [f"w{n}ord{'s' if n % 3 == 0 else ''}" for n in range(800)] + ["the", "and", "running", "runs", "ran"]
    weights = 1.0 / np.arange(1, len(words) + 1)
    weights /= weights.sum()
    texts = []
    for _ in range(docs):
        size = int(rng.choice([0, 1, 3, 12, 60, 200, 700]))
        texts.append(" ".join(rng.choice(words, size=size, p=weights).tolist()))
    return [*texts, *MIXED]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_numpy_score_matrix_is_bm25s_own_bit_for_bit(seed: int):
    """The index phase computes bm25s' score matrix for the whole corpus in numpy: the same
    float32 scores, the same rows and column pointers as bm25s' text-by-text build."""
    import bm25s
    from bm25s.tokenization import Tokenized

    from indexfoundry.backends.keyword.bm25 import BM25_PARAMS, bm25_scores, corpus_arrays, text_stems

    texts = _corpus(seed, 400)
    vocab, ids, lengths = corpus_arrays(text_stems(texts))
    theirs = bm25s.BM25(**BM25_PARAMS)
    token_ids = [part.tolist() for part in np.split(ids, np.cumsum(lengths)[:-1])]
    theirs.index(Tokenized(ids=token_ids, vocab=dict(vocab)), show_progress=False)
    ours = bm25_scores(ids, lengths, len(vocab))
    assert ours["num_docs"] == theirs.scores["num_docs"] == len(texts)
    for name in ("data", "indices", "indptr"):
        assert ours[name].dtype == theirs.scores[name].dtype
        assert ours[name].tobytes() == theirs.scores[name].tobytes(), name


def test_tokens_kept_in_the_work_cache_build_the_same_index_and_an_edit_tokenizes_one_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    from indexfoundry.backends.keyword import bm25
    from indexfoundry.storage.workcache import WorkCache

    chunks = [make_chunk(f"c{i}", text or "-") for i, text in enumerate(_corpus(7, 120))]
    hashes = {c.chunk_id: sha256_text(c.embedding_text()) for c in chunks}
    build_keyword_index(layout_at(tmp_path / "plain"), chunks)
    tokenized: list[int] = []
    real = bm25._stems_now
    monkeypatch.setattr(bm25, "_stems_now", lambda texts: tokenized.append(len(texts)) or real(texts))
    with WorkCache(tmp_path / "work.sqlite") as cache:
        build_keyword_index(layout_at(tmp_path / "cold"), chunks, hashes, cache)
        edited = [*chunks[:-1], make_chunk("edited", "An edited chunk about running themes.")]
        hashes.update({c.chunk_id: sha256_text(c.embedding_text()) for c in edited})
        build_keyword_index(layout_at(tmp_path / "edit"), edited, hashes, cache)
    assert tokenized == [len(chunks), 1]
    plain = digest(layout_at(tmp_path / "plain").keyword_index_dir)
    assert digest(layout_at(tmp_path / "cold").keyword_index_dir) == plain
    build_keyword_index(layout_at(tmp_path / "edit-plain"), edited)
    assert digest(layout_at(tmp_path / "edit").keyword_index_dir) == digest(
        layout_at(tmp_path / "edit-plain").keyword_index_dir
    )
