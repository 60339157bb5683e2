"""What a top-10 hybrid search returns when each leg hands the fusion fewer candidates.

Hybrid search fuses the best ``HYBRID_CANDIDATES`` chunks of each leg (``retrieval/service.py``);
fewer candidates make the store's nearest-vector query cheaper (``bench/hybrid_legs_bench.py``
times it) and can change which chunks reach the top 10. This measures the second part: for each
pool size, nDCG@10 of the documents a top-10 hybrid search ranks (the first ten documents, each
at its best chunk: what a user's ``--top-k 10`` search gets, not ``indexfoundry eval``'s ranking
of 100, whose pool is always 100), on a BEIR collection's splits, over a run that ``indexfoundry
eval`` built (any split's run: the corpus is the same); with ``--answers FILE --answers-run-id
RUN`` also hit@5 and MRR@10 of a passage-keyed question set (``indexfoundry eval --answers``'s
rule) over the run ``indexfoundry eval --answers`` built for it:

    indexfoundry eval ../shared/corpora/benchmark/scifact --split train --mode hybrid --runs-dir RUNS
    indexfoundry eval --answers bench/data/mkdocs_answers.json ../shared/corpora/markdown/mkdocs-1.4.2/docs \\
        --mode hybrid --split dev --runs-dir RUNS
    PYTHONPATH=src .venv/bin/python bench/hybrid_pool_eval.py RUNS RUN_ID --pools 100 70 60 50 \\
        --splits train test --answers bench/data/mkdocs_answers.json --answers-run-id ANSWERS_RUN_ID

It measures; it does not change the product (the pool is set in this process only).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import ir_measures
from ir_measures import nDCG

from indexfoundry.app import eval as ev
from indexfoundry.app.answers import evaluate_answers, read_answers
from indexfoundry.retrieval import service as search

REPO = Path(__file__).resolve().parents[1]
SCIFACT = REPO.parent / "shared" / "corpora" / "benchmark" / "scifact"


def ndcg_at_10(service: search.SearchService, beir: Path, split: str) -> float:
    """Mean nDCG@10 of the top-10 hybrid rankings over the split's judged queries."""
    _corpus, queries_path, qrels_path = ev.beir_paths(beir, split)
    queries, qrels = ev.read_queries(queries_path), ev.read_qrels(qrels_path)
    judged = sorted(q for q in queries if q in qrels and any(rel > 0 for rel in qrels[q].values()))
    run = []
    for qid in judged:
        ranking = ev.rank_documents(service, queries[qid], "hybrid", depth=10)
        run += [ir_measures.ScoredDoc(qid, doc, float(len(ranking) - i)) for i, (doc, _s) in enumerate(ranking)]
    judgements = [ir_measures.Qrel(q, doc, rel) for q in judged for doc, rel in sorted(qrels[q].items())]
    values = {v.query_id: v.value for v in ir_measures.iter_calc([nDCG @ 10], judgements, run)}
    return round(sum(values.get(q, 0.0) for q in judged) / len(judged), 4)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("runs_dir", type=Path)
    parser.add_argument("run_id")
    parser.add_argument("--beir", type=Path, default=SCIFACT, help="the BEIR collection the run was built from")
    parser.add_argument("--pools", type=int, nargs="+", default=[100, 70, 60, 50])
    parser.add_argument("--splits", nargs="+", default=["train"])
    parser.add_argument("--answers", type=Path, help="a passage-keyed question set (indexfoundry eval --answers)")
    parser.add_argument("--answers-run-id", help="the run indexfoundry eval --answers built for --answers")
    parser.add_argument("--answers-split", default="dev")
    args = parser.parse_args()
    service = ev.open_eval_service(args.runs_dir, args.run_id)
    docs = ev.open_eval_service(args.runs_dir, args.answers_run_id) if args.answers and args.answers_run_id else None
    for pool in args.pools:
        search.HYBRID_CANDIDATES = pool
        out: dict[str, object] = {"pool": pool}
        out["ndcg@10"] = {split: ndcg_at_10(service, args.beir, split) for split in args.splits}
        if docs is not None and args.answers is not None:
            questions = read_answers(args.answers, args.answers_split)
            metrics = evaluate_answers(docs, questions, ("hybrid",)).metrics["hybrid"]
            out[f"answers {args.answers_split}"] = {m: metrics[m] for m in ("hit@1", "hit@5", "mrr@10")}
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
