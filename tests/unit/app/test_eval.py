"""Evaluation metrics and files, checked against values computed by hand."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from indexfoundry.app.eval import (
    EvalResult,
    missed_thresholds,
    parse_thresholds,
    read_qrels,
    read_queries,
    score_rankings,
    trec_run,
)
from indexfoundry.errors import IndexFoundryError

QRELS = {"q1": {"d1": 1, "d2": 1, "d9": 0}, "q2": {"d3": 2, "d4": 1}, "q3": {"d5": 1}}
RUN = {
    "q1": [("x", 9.0), ("d1", 8.0), ("y", 7.0), ("d2", 6.0)],
    "q2": [("d4", 5.0), ("d3", 4.0)],
    # q3 retrieved nothing: it still counts, as 0.
}


def test_ndcg_recall_and_mrr_match_hand_computed_values():
    ndcg_q1 = (1 / math.log2(3) + 1 / math.log2(5)) / (1 + 1 / math.log2(3))
    ndcg_q2 = (1 + 2 / math.log2(3)) / (2 + 1 / math.log2(3))  # graded gains, as trec_eval
    metrics = score_rankings(RUN, QRELS)
    assert metrics["ndcg@10"] == pytest.approx((ndcg_q1 + ndcg_q2 + 0) / 3, abs=1e-4)
    assert metrics["recall@100"] == pytest.approx(2 / 3, abs=1e-4)
    assert metrics["mrr@10"] == pytest.approx((1 / 2 + 1 + 0) / 3, abs=1e-4)


def test_cutoffs_ignore_documents_ranked_below_them():
    run = {"q1": [(f"n{i}", 100.0 - i) for i in range(10)] + [("d1", 1.0)]}
    metrics = score_rankings(run, {"q1": {"d1": 1}})
    assert metrics["ndcg@10"] == 0.0
    assert metrics["mrr@10"] == 0.0
    assert metrics["recall@100"] == 1.0


def test_our_ranking_order_is_kept_even_when_scores_tie():
    run = {"q1": [("zz", 1.0), ("d1", 1.0)]}
    assert score_rankings(run, {"q1": {"d1": 1}})["mrr@10"] == 0.5


def test_beir_and_trec_qrels_and_queries_files_are_read(tmp_path: Path):
    beir = tmp_path / "test.tsv"
    beir.write_text("query-id\tcorpus-id\tscore\n1\t10\t1\n1\t11\t2\n2\t12\t1\n", encoding="utf-8")
    assert read_qrels(beir) == {"1": {"10": 1, "11": 2}, "2": {"12": 1}}
    trec = tmp_path / "qrels.txt"
    trec.write_text("1 0 10 1\n1 0 11 0\n", encoding="utf-8")
    assert read_qrels(trec) == {"1": {"10": 1, "11": 0}}
    queries = tmp_path / "queries.jsonl"
    queries.write_text('{"_id": "2", "text": "second"}\n{"_id": "1", "text": "first", "metadata": {}}\n')
    assert list(read_queries(queries).items()) == [("2", "second"), ("1", "first")]
    tsv = tmp_path / "queries.tsv"
    tsv.write_text("7\twhat is bm25\n", encoding="utf-8")
    assert read_queries(tsv) == {"7": "what is bm25"}


def test_a_malformed_qrels_line_is_config_invalid(tmp_path: Path):
    bad = tmp_path / "bad.tsv"
    bad.write_text("1\t10\t1\n1\t11\tx\n", encoding="utf-8")
    with pytest.raises(IndexFoundryError) as caught:
        read_qrels(bad)
    assert caught.value.code == "CONFIG_INVALID"


def test_trec_run_lines_carry_rank_score_and_the_mode_as_tag():
    result = EvalResult(run_id="r", queries=1, rankings={"keyword": {"q1": [("d1", 2.5), ("d2", 1.0)]}})
    assert trec_run(result) == "q1 Q0 d1 1 2.500000 keyword\nq1 Q0 d2 2 1.000000 keyword\n"


def test_thresholds_apply_to_every_mode_or_to_one_and_report_misses():
    thresholds = parse_thresholds(["ndcg@10=0.5", "hybrid:recall@100=0.9"])
    metrics = {
        "keyword": {"ndcg@10": 0.6, "recall@100": 0.8, "mrr@10": 0.5},
        "hybrid": {"ndcg@10": 0.4, "recall@100": 0.8, "mrr@10": 0.5},
    }
    assert missed_thresholds(metrics, thresholds) == ["hybrid ndcg@10 0.4000 < 0.5", "hybrid recall@100 0.8000 < 0.9"]


@pytest.mark.parametrize("bad", ["ndcg=0.5", "ndcg@10", "ndcg@10=x", "fuzzy:ndcg@10=0.1"])
def test_a_malformed_threshold_is_config_invalid(bad: str):
    with pytest.raises(IndexFoundryError) as caught:
        parse_thresholds([bad])
    assert caught.value.code == "CONFIG_INVALID"
