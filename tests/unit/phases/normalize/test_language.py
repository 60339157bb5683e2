"""Languages detected by one run are not detected again by the next run in the same runs folder
(the work cache), and the chunks are byte-identical with or without it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from indexfoundry import api
from indexfoundry.phases.normalize import language
from indexfoundry.storage.layout import RunLayout
from tests.conftest import folder_config, write_tree

PROSE = {
    "en.md": "# Guide\n\nThe quick brown fox jumps over the lazy dog while the farmer watches from the porch and "
    "wonders why foxes are always in such a hurry on sunny afternoons.\n",
    "de.md": "# Anleitung\n\nDer schnelle braune Fuchs springt über den faulen Hund, während der Bauer von der "
    "Veranda aus zusieht und sich fragt, warum Füchse es an sonnigen Nachmittagen immer so eilig haben.\n",
    "fr.md": "# Guide\n\nLe renard brun rapide saute par-dessus le chien paresseux pendant que le fermier regarde "
    "depuis le porche et se demande pourquoi les renards sont toujours si pressés les après-midi ensoleillés.\n",
}


class CountingDetector:
    """The real lingua detector, counting the samples it is asked about."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.samples = 0

    def detect_languages_in_parallel_of(self, texts: list[str]) -> list[Any]:
        self.samples += len(texts)
        return list(self.real.detect_languages_in_parallel_of(texts))


@pytest.fixture
def counting(monkeypatch: pytest.MonkeyPatch) -> CountingDetector:
    detector = CountingDetector(language._detector())
    monkeypatch.setattr(language, "_detector", lambda: detector)
    return detector


def _chunks(runs: Path, run_id: str) -> bytes:
    return RunLayout(runs / run_id).chunks.read_bytes()


def test_a_rerun_after_one_edit_detects_only_the_changed_chunk(tmp_path: Path, counting: CountingDetector):
    docs = write_tree(tmp_path / "docs", PROSE)
    config = folder_config(docs, index={"embedding_model": "hash"})
    runs = tmp_path / "runs"
    first = api.pipeline_run(config, runs_dir=runs)
    assert first.status == "completed" and counting.samples == 3
    (docs / "en.md").write_text(PROSE["en.md"] + "\nA second paragraph about the fox and the dog, long enough.\n")
    second = api.pipeline_run(config, runs_dir=runs, base=first.run_id)
    assert counting.samples == 4  # the edited document's chunk only
    fresh_runs = tmp_path / "fresh"
    counting.samples = 0
    fresh = api.pipeline_run(config, runs_dir=fresh_runs)  # an empty runs folder: every sample detected
    assert counting.samples == 3
    assert _chunks(runs, second.run_id) == _chunks(fresh_runs, fresh.run_id)
    languages = {line for line in _chunks(runs, second.run_id).decode().split('"language":')[1:]}
    assert {v.split(",")[0] for v in languages} == {'"en"', '"de"', '"fr"'}


def test_a_group_seen_before_takes_its_languages_without_a_look_at_its_texts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    from indexfoundry.storage.workcache import WorkCache

    texts = [PROSE["en.md"], "Short.", PROSE["de.md"]]
    groups = ["a", "a", "b"]
    with WorkCache.for_runs(tmp_path) as cache:
        first = language.detect_grouped_languages(texts, groups, cache)
        assert first == ["en", "en", "de"]  # the short text takes its document's language
        sampled: list[str] = []
        real = language._sample
        monkeypatch.setattr(language, "_sample", lambda text: sampled.append(text) or real(text))
        again = language.detect_grouped_languages([*texts, PROSE["fr.md"]], [*groups, "c"], cache)
        assert again == ["en", "en", "de", "fr"]
        assert sampled == [PROSE["fr.md"]]  # only the new group's text is read
        # The same texts in another grouping are another key: nothing is taken for the wrong group.
        sampled.clear()
        assert language.detect_grouped_languages(texts, ["a", "b", "c"], cache)[1] is None
        assert sampled == texts[:2]


def test_a_documents_joined_prose_is_detected_only_when_one_of_its_chunks_is_too_short(counting: CountingDetector):
    fox, dog = PROSE["en.md"], PROSE["de.md"].replace("Der", "Ein")
    # Two chunks of one document, each with prose enough of its own: their two samples only.
    assert language.detect_grouped_languages([fox, dog], ["a", "a"]) == ["en", "de"]
    assert counting.samples == 2
    # A third, too short to tell: the document's joined prose is detected too, and it takes that.
    counting.samples = 0
    texts = [PROSE["fr.md"], "Court.", PROSE["fr.md"].replace("Le renard", "Un renard")]
    assert language.detect_grouped_languages(texts, ["b", "b", "b"]) == ["fr", "fr", "fr"]
    assert counting.samples == 3
