"""``indexfoundry eval --answers``: passage-keyed questions over a docs folder indexed through the
real pipeline (docs mode's config) or over an existing run; thresholds, splits, the reranker."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from indexfoundry import api
from indexfoundry.errors import IndexFoundryError
from indexfoundry.storage.layout import RunLayout
from indexfoundry.storage.manifest import load_run_config
from indexfoundry.surfaces.cli import app
from tests.conftest import folder_config, write_tree
from tests.integration.test_eval_beir import invoke
from tests.rerank_support import RerankServer

DOCS: dict[str, str | bytes] = {
    "guide/serve.md": "# Serving\n\n## Port\n\nThe preview server listens on port 8000 unless told otherwise.\n\n"
    "## Reload\n\nEdits to any page rebuild the site within a second.\n",
    "guide/deploy.md": "# Deploying\n\nCopy the built folder to your host with scp.\n\n## Branch\n\n"
    "The deploy command pushes to the gh-pages branch by default.\n",
    "other.md": "# Other\n\nA port of call is a harbour where ships stop.\n",
}
QUESTIONS = [
    {"id": "port", "split": "dev", "kind": "default", "question": "which port does the preview server listen on",
     "file": "guide/serve.md", "passage": "listens on  port\n8000"},
    {"id": "branch", "split": "test", "kind": "default", "question": "which branch does the deploy command push to",
     "file": "guide/deploy.md", "passage": "pushes to the gh-pages branch"},
    {"id": "typo", "split": "dev", "kind": "howto", "question": "how fast does a page edit rebuild the site",
     "file": "guide/serve.md", "passage": "rebuilds within one second"},
    {"id": "wrong-file", "split": "test", "kind": "howto", "question": "which port does the preview server use",
     "file": "other.md", "passage": "listens on port 8000"},
]  # fmt: skip


def _answers(tmp_path: Path) -> tuple[Path, Path]:
    docs = write_tree(tmp_path / "docs", DOCS)
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps({"questions": QUESTIONS}), encoding="utf-8")
    return docs, answers


def test_answers_on_a_docs_folder_score_the_rank_of_the_first_chunk_holding_the_passage(tmp_path: Path):
    docs, answers = _answers(tmp_path)
    runs = tmp_path / "runs"
    base = ["--answers", str(answers), str(docs), "--runs-dir", str(runs), "--embedding-model", "hash", "--json"]
    done = CliRunner().invoke(app, ["eval", *base])
    code, out = done.exit_code, done.stdout
    assert code == 0, out
    report = json.loads(out)
    assert "2 passages are in no chunk of the run" in done.stderr
    assert set(report["metrics"]) == {"semantic", "keyword", "hybrid"}
    assert report["questions"] == 4 and report["split"] == "all"
    # Whitespace runs in a passage count as one space; a mistyped passage and a passage keyed to
    # a file that does not hold it can never be found, and are named.
    assert report["ranks"]["keyword"] == {"port": 1, "branch": 1, "typo": None, "wrong-file": None}
    assert report["unreachable"] == ["typo", "wrong-file"]
    assert report["metrics"]["keyword"] == {"hit@1": 0.5, "hit@3": 0.5, "hit@5": 0.5, "hit@10": 0.5, "mrr@10": 0.5}
    assert report["by_kind"]["keyword"]["default"]["hit@1"] == 1.0
    assert report["by_kind"]["keyword"]["howto"]["hit@10"] == 0.0
    # The same folder again reuses its run (its id is derived from the docs-mode config).
    again = api.evaluate_answers(answers, folder=docs, runs_dir=runs, mode="keyword", embedding_model="hash")
    assert again.run_id == report["run_id"]
    assert again.ranks["keyword"] == report["ranks"]["keyword"]
    config = load_run_config(RunLayout(runs / report["run_id"]))
    assert config.normalize.chunk_strategy == "by_heading"


def test_answers_on_an_existing_run_by_split_with_thresholds(tmp_path: Path):
    docs, answers = _answers(tmp_path)
    runs = tmp_path / "runs"
    run_id = api.pipeline_run(folder_config(docs), runs_dir=runs).run_id
    base = ["--answers", str(answers), "--run-id", run_id, "--runs-dir", str(runs), "--mode", "keyword"]
    code, out = invoke(*base, "--split", "dev", "--json")
    assert code == 0, out
    report = json.loads(out)
    assert report["split"] == "dev" and set(report["ranks"]["keyword"]) == {"port", "typo"}
    assert invoke(*base, "--min", "hit@1=0.5")[0] == 0
    code, out = invoke(*base, "--min", "keyword:hit@5=0.9")
    assert code == 1
    assert "keyword" in out and "hit@1" in out  # the table is printed before the threshold fails


def test_answers_refuse_beir_metrics_beir_options_and_a_folder_with_a_run_id(tmp_path: Path):
    docs, answers = _answers(tmp_path)
    runs = ["--runs-dir", str(tmp_path / "runs")]
    for extra in (
        ["--min", "ndcg@10=0.5", "--run-id", "x"],
        ["--qrels", "q.tsv", "--run-id", "x"],
        ["--split", "train"],
    ):
        with pytest.raises(IndexFoundryError) as caught:
            invoke("--answers", str(answers), str(docs), *runs, *extra)
        assert caught.value.code == "CONFIG_INVALID"
    with pytest.raises(IndexFoundryError) as caught:
        api.evaluate_answers(answers, folder=docs, run_id="x", runs_dir=tmp_path / "runs")
    assert caught.value.code == "CONFIG_INVALID"


@pytest.fixture
def server() -> Iterator[RerankServer]:
    srv = RerankServer().start()
    yield srv
    srv.stop()


def test_answers_with_a_reranker_measure_the_reranked_order(tmp_path: Path, server: RerankServer):
    docs, answers = _answers(tmp_path)
    base = ["--answers", str(answers), str(docs), "--runs-dir", str(tmp_path / "runs"), "--embedding-model", "hash"]
    code, out = invoke(
        *base, "--mode", "semantic", "--reranker", f"http:{server.url}", "--rerank-top-k", "10", "--json"
    )
    assert code == 0, out
    report = json.loads(out)
    assert report["reranker"].startswith("http:127.0.0.1:")
    # The emulator scores by word overlap: the answering section of each findable question is first.
    assert report["ranks"]["semantic"]["port"] == 1 and report["ranks"]["semantic"]["branch"] == 1
    assert server.requests
