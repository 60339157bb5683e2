"""Retrieval evaluation: nDCG@10, recall@100 and MRR@10 of each search mode on BEIR-format data.

A BEIR folder holds ``corpus.jsonl`` (``_id``, ``title``, ``text``), ``queries.jsonl``
(``_id``, ``text``) and ``qrels/<split>.tsv`` (``query-id``, ``corpus-id``, ``score``). The
corpus goes through the normal pipeline as a folder source whose jsonl records become one
document each, so the evaluation measures the product, not a side path. The run id is derived
from the evaluation config, so evaluating the same folder again reuses the run (every phase
skipped) instead of indexing it again.

Metrics come from trec_eval's implementations (through ``ir-measures`` / ``pytrec_eval``), the
ones BEIR reports: ``ndcg@10`` = trec_eval ``ndcg_cut_10``, ``recall@100`` = ``recall_100``,
``mrr@10`` = reciprocal rank of the first relevant document in the top 10. Each is averaged
over every judged query that has a relevant document; a query with no results scores 0.
"""

from __future__ import annotations

import csv
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from indexfoundry.errors import ConfigInvalid, NotFound, RerankError
from indexfoundry.models.retrieval import RerankerConfig, SearchMode
from indexfoundry.storage.atomic import atomic_write_text
from indexfoundry.storage.hashing import canonical_json

if TYPE_CHECKING:  # the service (numpy, stores, models) loads only when an evaluation runs
    from indexfoundry.retrieval.service import SearchService

METRICS: tuple[str, ...] = ("ndcg@10", "recall@100", "mrr@10")
MODES: tuple[SearchMode, ...] = ("semantic", "keyword", "hybrid")
EvalMode = Literal["semantic", "keyword", "hybrid", "all"]
# Documents ranked per query (recall@100 needs 100).
DEPTH = 100
# Namespace of the deterministic run ids of evaluation runs.
EVAL_NAMESPACE = uuid.UUID("6f1c2d0e-8a4b-5c3d-9e2f-1a7b6c5d4e3f")

Qrels = dict[str, dict[str, int]]
Rankings = dict[str, list[tuple[str, float]]]


@dataclass
class EvalResult:
    """Metrics per mode, and the ranked document ids behind them."""

    run_id: str
    queries: int
    metrics: dict[str, dict[str, float]] = field(default_factory=dict)
    rankings: dict[str, Rankings] = field(default_factory=dict)
    reranker: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"metrics": self.metrics, "run_id": self.run_id, "queries": self.queries}
        if self.reranker is not None:
            out["reranker"] = self.reranker
        return out


# ---------------------------------------------------------------- reading BEIR files
def read_queries(path: Path) -> dict[str, str]:
    """Queries from BEIR ``queries.jsonl`` (``_id``, ``text``) or a ``qid<TAB>text`` file, in file order."""
    if not path.is_file():
        raise NotFound(f"queries file {path} does not exist", suggestion="Check the path")
    queries: dict[str, str] = {}
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            line = line.strip()
            if not line:
                continue
            if line.startswith("{"):
                try:
                    row = json.loads(line)
                    queries[str(row["_id"])] = str(row["text"])
                except (json.JSONDecodeError, KeyError, TypeError):
                    raise ConfigInvalid(
                        f"{path}:{number}: not a BEIR query line",
                        suggestion='Each line must be {"_id": ..., "text": ...}',
                    ) from None
            else:
                qid, sep, text = line.partition("\t")
                if not sep or not text.strip():
                    raise ConfigInvalid(
                        f"{path}:{number}: expected 'query-id<TAB>text'",
                        suggestion="Use BEIR queries.jsonl or a two-column TSV",
                    )
                queries[qid] = text.strip()
    return queries


def read_qrels(path: Path) -> Qrels:
    """Judgements from a BEIR qrels TSV (``query-id corpus-id score``, header optional) or TREC qrels."""
    if not path.is_file():
        raise NotFound(f"qrels file {path} does not exist", suggestion="Check the path (BEIR: qrels/<split>.tsv)")
    qrels: Qrels = {}
    with path.open(encoding="utf-8", newline="") as handle:
        for number, row in enumerate(csv.reader(handle, delimiter="\t"), start=1):
            cols = row if len(row) > 1 else (row[0].split() if row else [])
            if not cols:
                continue
            if len(cols) == 4:  # TREC: qid iteration docid relevance
                cols = [cols[0], cols[2], cols[3]]
            if len(cols) != 3:
                raise ConfigInvalid(
                    f"{path}:{number}: expected 'query-id corpus-id score'",
                    suggestion="Use BEIR qrels TSV or TREC qrels",
                )
            try:
                score = int(cols[2])
            except ValueError:
                if number == 1:  # header
                    continue
                raise ConfigInvalid(f"{path}:{number}: score is not an integer", suggestion="Fix the file") from None
            qrels.setdefault(cols[0], {})[cols[1]] = score
    return qrels


def beir_paths(beir_dir: Path, split: str) -> tuple[Path, Path, Path]:
    """(corpus, queries, qrels) of a BEIR folder, or ``NOT_FOUND`` naming what is missing."""
    corpus, queries, qrels = beir_dir / "corpus.jsonl", beir_dir / "queries.jsonl", beir_dir / "qrels" / f"{split}.tsv"
    for path in (corpus, queries, qrels):
        if not path.is_file():
            raise NotFound(
                f"{path} does not exist: {beir_dir} is not a BEIR folder with split '{split}'",
                suggestion="A BEIR folder has corpus.jsonl, queries.jsonl and qrels/<split>.tsv",
            )
    return corpus, queries, qrels


def beir_pipeline_config(beir_dir: Path, embedding_model: str = "local") -> dict[str, Any]:
    """The pipeline config that indexes a BEIR corpus: one document (and one chunk) per record.

    ``max_chars`` is the largest allowed so a record is not split (BEIR scores whole documents),
    exact dedupe is off so no judged document disappears, and language detection is off (unused).
    """
    folder = beir_dir.resolve()
    config: dict[str, Any] = {
        "connect": {
            "sources": [
                {
                    "type": "folder",
                    "path": str(folder),
                    "glob": "corpus.jsonl",
                    "name": folder.name,
                    "records": {"id_field": "_id", "text_fields": ["title", "text"]},
                }
            ]
        },
        "normalize": {
            "chunk_strategy": "recursive",
            "max_chars": 10000,
            "overlap_chars": 0,
            "dedupe": False,
            "detect_language": False,
        },
        "index": {"embedding_model": embedding_model, "vector_db": {"collection": "beir"}},
    }
    config["run_id"] = str(uuid.uuid5(EVAL_NAMESPACE, canonical_json(config)))
    return config


# ---------------------------------------------------------------- ranking and scoring
def document_key(service: SearchService, chunk_id: str) -> str:
    """The id a judgement names: the record id of records split from csv/jsonl, else the source uri."""
    source = service.chunk(chunk_id).source
    return source.record_id if source.record_id is not None else source.uri


def rank_documents(service: SearchService, query: str, mode: SearchMode, depth: int = DEPTH) -> list[tuple[str, float]]:
    """The best ``depth`` documents for ``query``: each document scored by its best chunk."""
    k = depth
    while True:
        reranked, warnings = service.rank_reranked(query, mode, k)
        if warnings:  # a measurement of the reranker must not quietly measure the retrieval order
            raise RerankError(warnings[0], suggestion="Check the reranker, or evaluate without --reranker")
        ranked = [(cid, score if rr is None else rr) for cid, score, rr in reranked]
        docs: dict[str, float] = {}
        for cid, score in ranked:
            docs.setdefault(document_key(service, cid), score)
        if len(docs) >= depth or len(ranked) < k or k >= len(service.chunks):
            return list(docs.items())[:depth]
        k *= 2


def score_rankings(rankings: Rankings, qrels: Qrels) -> dict[str, float]:
    """Mean nDCG@10, recall@100 and MRR@10 over the judged queries that have a relevant document."""
    import ir_measures
    from ir_measures import RR, R, nDCG

    judged = sorted(q for q, docs in qrels.items() if any(rel > 0 for rel in docs.values()))
    if not judged:
        raise ConfigInvalid("the qrels judge no document relevant", suggestion="Check the qrels file")
    names = {str(nDCG @ 10): "ndcg@10", str(R @ 100): "recall@100", str(RR @ 10): "mrr@10"}
    run = [
        # Scores from ranks: trec_eval orders by score, so this keeps our order (ties included).
        ir_measures.ScoredDoc(qid, doc, float(len(ranking) - i))
        for qid, ranking in rankings.items()
        if qid in qrels
        for i, (doc, _score) in enumerate(ranking)
    ]
    judgements = [ir_measures.Qrel(qid, doc, rel) for qid in judged for doc, rel in sorted(qrels[qid].items())]
    per_query: dict[str, dict[str, float]] = {name: {} for name in METRICS}
    for value in ir_measures.iter_calc([nDCG @ 10, R @ 100, RR @ 10], judgements, run):
        per_query[names[str(value.measure)]][value.query_id] = float(value.value)
    return {name: round(sum(per_query[name].get(q, 0.0) for q in judged) / len(judged), 4) for name in METRICS}


def evaluate_service(
    service: SearchService,
    queries: dict[str, str],
    qrels: Qrels,
    modes: tuple[SearchMode, ...],
    on_query: Callable[[], None] | None = None,
) -> EvalResult:
    """Rank every judged query in every mode and score the rankings."""
    judged = [qid for qid in queries if qid in qrels]
    missing = sorted(set(qrels) - set(queries))
    if not judged:
        raise ConfigInvalid(
            "no query of the queries file is judged in the qrels", suggestion="Check that their query ids match"
        )
    if missing:
        raise ConfigInvalid(
            f"{len(missing)} judged queries have no text (e.g. '{missing[0]}')",
            suggestion="Use the queries file that goes with the qrels",
        )
    cfg = service.reranker_config
    result = EvalResult(
        run_id=service.run_id, queries=len(judged), reranker=service.reranker.model_id if cfg.enabled else None
    )
    for mode in modes:
        rankings: Rankings = {}
        for qid in judged:
            rankings[qid] = rank_documents(service, queries[qid], mode)
            if on_query is not None:
                on_query()
        result.rankings[mode] = rankings
        result.metrics[mode] = score_rankings(rankings, qrels)
    return result


def trec_run(result: EvalResult) -> str:
    """Every mode's rankings in TREC run format: ``qid Q0 docid rank score tag`` (tag = mode)."""
    lines = [
        f"{qid} Q0 {doc} {rank} {score:.6f} {mode}"
        for mode, rankings in result.rankings.items()
        for qid, ranking in rankings.items()
        for rank, (doc, score) in enumerate(ranking, start=1)
    ]
    return "".join(line + "\n" for line in lines)


def write_trec_run(result: EvalResult, path: Path) -> None:
    atomic_write_text(path, trec_run(result))


def parse_thresholds(values: list[str], metrics: tuple[str, ...] = METRICS) -> dict[tuple[str | None, str], float]:
    """``METRIC=VALUE`` or ``MODE:METRIC=VALUE`` → {(mode or None for every mode, metric): minimum}.

    ``metrics`` are the names allowed (BEIR metrics, or ``ANSWER_METRICS`` for an answers file)."""
    out: dict[tuple[str | None, str], float] = {}
    for raw in values:
        name, sep, number = raw.partition("=")
        mode, colon, metric = name.partition(":")
        if not colon:
            mode, metric = "", name
        try:
            minimum = float(number)
        except ValueError:
            minimum = float("nan")
        if not sep or metric not in metrics or (mode and mode not in MODES) or minimum != minimum:
            raise ConfigInvalid(
                f"bad threshold '{raw}'",
                suggestion=f"Use METRIC=VALUE or MODE:METRIC=VALUE with METRIC one of {', '.join(metrics)}",
            )
        out[(mode or None, metric)] = minimum
    return out


def missed_thresholds(
    metrics: dict[str, dict[str, float]], thresholds: dict[tuple[str | None, str], float]
) -> list[str]:
    """Human lines for every threshold a mode's metric falls below."""
    missed: list[str] = []
    for (mode, metric), minimum in thresholds.items():
        for name, values in metrics.items():
            if mode in (None, name) and values[metric] < minimum:
                missed.append(f"{name} {metric} {values[metric]:.4f} < {minimum:g}")
    return missed


def modes_for(mode: EvalMode) -> tuple[SearchMode, ...]:
    return MODES if mode == "all" else (mode,)


def open_eval_service(
    runs_dir: Path, run_id: str, embedder: Any = None, reranker: str | None = None, top_k_to_rerank: int = 50
) -> SearchService:
    """The search service of the run to evaluate; with ``reranker`` (a ``reranker.model`` value) it
    reranks the first ``top_k_to_rerank`` candidates of every mode, whatever the run's profile says."""
    from indexfoundry.app import runs as api
    from indexfoundry.retrieval.service import open_service
    from indexfoundry.storage.layout import RunLayout

    layout = RunLayout.existing(runs_dir, api.resolve_run_id(runs_dir, run_id))
    service = open_service(layout, embedder)
    if reranker is not None:
        try:
            config = RerankerConfig(enabled=True, model=reranker, top_k_to_rerank=top_k_to_rerank)
        except ValueError as exc:
            raise ConfigInvalid(
                f"bad --reranker '{reranker}': {exc}",
                suggestion="Use cross-encoder:<folder>, cohere:<model> or http:<base_url>",
            ) from None
        service.use_reranker(config)
    return service


def evaluate(
    *,
    beir_dir: Path | None,
    split: str,
    run_id: str | None,
    queries: Path | None,
    qrels: Path | None,
    mode: EvalMode,
    runs_dir: Path,
    embedding_model: str = "local",
    progress: Any = None,
    embedder: Any = None,
    reranker: str | None = None,
    top_k_to_rerank: int = 50,
) -> EvalResult:
    """Evaluate a BEIR folder (indexed through the pipeline, or reusing its earlier run) or an existing run.

    ``reranker`` (a ``reranker.model`` value) reranks the first ``top_k_to_rerank`` candidates
    of every mode, whatever the run's profile says, so its gain can be measured on the same run.
    """
    from indexfoundry.app import runs as api

    if beir_dir is not None:
        if run_id is not None:
            raise ConfigInvalid("pass a BEIR folder or --run-id, not both", suggestion="Drop one of them")
        _corpus, default_queries, default_qrels = beir_paths(beir_dir, split)
        queries, qrels = queries or default_queries, qrels or default_qrels
        output = api.pipeline_run(
            beir_pipeline_config(beir_dir, embedding_model), runs_dir=runs_dir, progress=progress, embedder=embedder
        )
        if output.status == "failed":
            raise ConfigInvalid(
                f"indexing {beir_dir} failed (run {output.run_id})",
                suggestion=f"See 'indexfoundry run status {output.run_id}'",
            )
        run_id = output.run_id
    elif run_id is None or queries is None or qrels is None:
        raise ConfigInvalid(
            "nothing to evaluate", suggestion="Pass a BEIR folder, or --run-id with --queries and --qrels"
        )
    assert queries is not None and qrels is not None
    service = open_eval_service(runs_dir, run_id, embedder, reranker, top_k_to_rerank)
    query_texts, judgements = read_queries(queries), read_qrels(qrels)
    judged = sum(1 for q in query_texts if q in judgements)
    modes = modes_for(mode)
    if progress is not None:
        with progress.task("evaluate", total=judged * len(modes)) as task:
            return evaluate_service(service, query_texts, judgements, modes, on_query=lambda: task.advance(1))
    return evaluate_service(service, query_texts, judgements, modes)
