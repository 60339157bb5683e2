"""Answer-level evaluation: passage matching, metrics and answers files, checked by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from indexfoundry.app.answers import coverage, file_matches, read_answers, score_ranks, squash
from indexfoundry.errors import IndexFoundryError


def test_a_passage_counts_when_a_chunk_holds_it_with_whitespace_runs_as_one_space():
    chunk = squash("Set the remote branch\n   to commit to when using `gh-deploy`.")
    assert coverage(chunk, squash("remote branch to  commit")) == 1.0
    assert coverage(chunk, "remote Branch") == 0.0  # case counts


def test_a_passage_cut_by_a_chunk_boundary_is_covered_by_the_part_each_chunk_holds():
    passage = "abcdefghij"
    assert coverage("xx abcdef", passage) == pytest.approx(0.6)  # the chunk ends inside the passage
    assert coverage("ghij yy", passage) == pytest.approx(0.4)  # the next chunk starts inside it
    assert coverage("xx cdefgh yy", passage) == 0.0  # a middle piece is no boundary cut


def test_a_chunk_must_come_from_the_questions_file():
    assert file_matches("docs/user-guide/cli.md", "user-guide/cli.md")
    assert file_matches("user-guide/cli.md", "/user-guide/cli.md")
    assert not file_matches("docs/other-cli.md", "cli.md")
    assert file_matches("anything.md", None)


def test_hits_and_mrr_match_hand_computed_values():
    metrics = score_ranks({"a": 1, "b": 3, "c": None, "d": 7})
    assert metrics == {
        "hit@1": 0.25,
        "hit@3": 0.5,
        "hit@5": 0.5,
        "hit@10": 0.75,
        "mrr@10": round((1 + 1 / 3 + 1 / 7) / 4, 4),
    }


def _write(path: Path, questions: list[dict[str, object]], **top: object) -> Path:
    path.write_text(json.dumps({"questions": questions, **top}), encoding="utf-8")
    return path


def test_an_answers_file_is_read_by_split(tmp_path: Path):
    path = _write(
        tmp_path / "a.json",
        [
            {"id": "1", "question": "q one", "passage": "p", "file": "a.md", "split": "dev"},
            {"id": "2", "question": "q two", "passage": "p", "split": "test", "kind": "howto"},
        ],
    )
    assert [q.id for q in read_answers(path)] == ["1", "2"]
    assert [q.id for q in read_answers(path, "test")] == ["2"]


@pytest.mark.parametrize(
    "content",
    [
        "not json",
        json.dumps({"questions": []}),
        json.dumps({"questions": [{"id": "1", "question": "q"}]}),  # no passage
        json.dumps({"questions": [{"id": "1", "question": "q", "passage": "p", "url": "x"}]}),  # unknown key
        json.dumps({"questions": [{"id": "1", "question": "q", "passage": "p"}] * 2}),  # id twice
        json.dumps({"schema_version": 99, "questions": [{"id": "1", "question": "q", "passage": "p"}]}),
    ],
)
def test_a_malformed_answers_file_is_config_invalid(tmp_path: Path, content: str):
    path = tmp_path / "a.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(IndexFoundryError) as caught:
        read_answers(path)
    assert caught.value.code == "CONFIG_INVALID"


def test_a_missing_answers_file_or_an_empty_split_is_refused(tmp_path: Path):
    with pytest.raises(IndexFoundryError) as caught:
        read_answers(tmp_path / "absent.json")
    assert caught.value.code == "NOT_FOUND"
    path = _write(tmp_path / "a.json", [{"id": "1", "question": "q", "passage": "p", "split": "dev"}])
    with pytest.raises(IndexFoundryError) as caught:
        read_answers(path, "test")
    assert caught.value.code == "CONFIG_INVALID"
