"""A rerun's keyword index made from the previous one (only changed texts tokenized) is the
index built from every text, file for file."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from indexfoundry.backends.keyword.bm25 import write_keyword_index
from indexfoundry.backends.keyword.update import PreviousKeywords
from indexfoundry.storage.hashing import sha256_text
from tests.unit.backends.keyword.test_bm25 import _corpus, digest, layout_at


class Reads(Sequence[str]):
    """Texts that note which of them were read."""

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts
        self.read: set[int] = set()

    def __len__(self) -> int:
        return len(self.texts)

    def __getitem__(self, index):  # type: ignore[no-untyped-def]
        text = self.texts[index]
        self.read.add(index)
        return text


def _index(root: Path, corpus: dict[str, str], previous: PreviousKeywords | None = None) -> tuple[Path, Reads]:
    ids = sorted(corpus)
    texts = Reads([corpus[i] for i in ids])
    layout = layout_at(root)
    write_keyword_index(layout, ids, texts, [sha256_text(corpus[i]) for i in ids], None, previous)
    return layout.keyword_index_dir, texts


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_an_index_updated_from_the_previous_one_is_the_index_built_from_every_text(tmp_path: Path, seed: int):
    rng = np.random.default_rng(seed)
    pool = _corpus(seed, 300)
    corpus = {f"c{n:04d}": text for n, text in enumerate(pool[:200])}
    folder, _ = _index(tmp_path / "round-0", corpus)
    for round_ in range(1, 4):
        before = dict(corpus)
        # Edits, deletions and new texts (new ids sort anywhere among the old ones); some texts
        # bring words no other text has, some take the last use of a word away.
        names = sorted(corpus)
        edited = {str(n) for n in rng.choice(names, 8, replace=False)}
        for name in edited:
            corpus[name] = f"{pool[int(rng.integers(200, 300))]} novel{round_}word {name}"
        for name in rng.choice(sorted(set(names) - edited), 5, replace=False):
            del corpus[str(name)]
        added = {
            f"c{int(rng.integers(0, 10_000)):04d}x": f"brandnew{round_} {pool[int(rng.integers(0, 300))]}"
            for _ in range(6)
        }
        corpus.update(added)
        previous = PreviousKeywords(folder, sorted(before), {k: sha256_text(v) for k, v in before.items()})
        folder, texts = _index(tmp_path / f"round-{round_}", corpus, previous)
        fresh, _ = _index(tmp_path / f"fresh-{round_}", corpus)
        assert digest(folder) == digest(fresh), f"round {round_}"
        ids = sorted(corpus)
        assert {ids[i] for i in texts.read} == edited | set(added)


def test_an_index_without_its_counts_file_is_built_from_every_text(tmp_path: Path):
    corpus = {f"c{n:04d}": text for n, text in enumerate(_corpus(5, 50))}
    folder, _ = _index(tmp_path / "first", corpus)
    (folder / "tf.csc.index.npy").unlink()
    previous = PreviousKeywords(folder, sorted(corpus), {k: sha256_text(v) for k, v in corpus.items()})
    corpus["c0001"] = "an edited text"
    again, texts = _index(tmp_path / "again", corpus, previous)
    assert texts.read == set(range(len(corpus)))
    assert digest(again) == digest(_index(tmp_path / "fresh", corpus)[0])
