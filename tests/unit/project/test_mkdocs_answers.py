"""The passage-keyed questions over the MkDocs docs (bench/data/mkdocs_answers.json) stay sound:
80 or more, unique ids, a held-out test split of about 40 %, every passage verbatim in its file,
and the committed JSON Schema is the one the answers-file model gives."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from indexfoundry.app.answers import squash
from indexfoundry.models.answers import AnswersFile
from tests.conftest import REPO

ANSWERS = REPO / "bench" / "data" / "mkdocs_answers.json"
SCHEMA = REPO / "bench" / "data" / "answers.schema.json"


def _load() -> AnswersFile:
    return AnswersFile.model_validate(json.loads(ANSWERS.read_text(encoding="utf-8")))


def test_the_questions_are_at_least_80_with_unique_ids_and_a_held_out_split():
    data = _load()
    assert len(data.questions) >= 80 and data.how_written and data.corpus is not None
    assert len({q.id for q in data.questions}) == len(data.questions)
    splits = Counter(q.split for q in data.questions)
    assert set(splits) == {"dev", "test"}
    assert 0.35 <= splits["test"] / len(data.questions) <= 0.45
    for q in data.questions:
        assert q.file and q.kind and q.question.strip() and q.passage.strip()
        # Written in other words: the question is not the passage.
        assert squash(q.passage).lower() not in q.question.lower()
    # Every kind is in both splits.
    kinds = {q.kind for q in data.questions}
    for split in ("dev", "test"):
        assert {q.kind for q in data.questions if q.split == split} == kinds


def test_every_passage_is_verbatim_in_its_file(corpora: Path):
    data = _load()
    assert data.corpus is not None
    root = corpora / data.corpus.path
    for q in data.questions:
        assert q.file is not None
        page = root / q.file
        assert page.is_file(), (q.id, q.file)
        assert squash(q.passage) in squash(page.read_text(encoding="utf-8")), q.id


def test_the_committed_schema_is_the_models_schema():
    assert json.loads(SCHEMA.read_text(encoding="utf-8")) == AnswersFile.model_json_schema()
