"""The judged docs-tree queries of bench/expand_eval.py (bench/data/docs_queries.json) stay sound:
at least 40, unique ids, each answer passage verbatim in the page judged to answer it."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.conftest import REPO

QUERIES = REPO / "bench" / "data" / "docs_queries.json"


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def test_the_judged_queries_are_at_least_40_with_graded_pages_and_an_answer_page():
    data = json.loads(QUERIES.read_text(encoding="utf-8"))
    queries = data["queries"]
    assert len(queries) >= 40 and data["how_judged"]
    assert len({q["id"] for q in queries}) == len(queries)
    for q in queries:
        assert q["tree"] in data["trees"] and q["query"].strip() and q["answer"].strip()
        assert q["relevant"][q["answer_page"]] == 2
        assert set(q["relevant"].values()) <= {1, 2}


def test_every_answer_passage_is_in_its_page_and_every_judged_page_exists(corpora: Path):
    data = json.loads(QUERIES.read_text(encoding="utf-8"))
    for q in data["queries"]:
        root = corpora / data["trees"][q["tree"]]["path"]
        for page in q["relevant"]:
            assert (root / page).is_file(), (q["id"], page)
        text = _squash((root / q["answer_page"]).read_text(encoding="utf-8"))
        assert _squash(q["answer"]) in text, q["id"]
