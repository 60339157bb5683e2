"""Context expansion, measured: ``expand: none`` vs ``neighbors`` vs ``section`` on judged queries.

Two kinds of judged data:

- the docs trees of ``../shared/corpora/markdown`` with the hand-judged queries of
  ``bench/data/docs_queries.json`` (relevant pages, graded, and one answer passage per query,
  copied verbatim from the page that answers it; see that file's ``how_judged``);
- a BEIR folder (SciFact): qrels judge whole abstracts; the "answer passage" of a query is the
  text of each relevant abstract.

Metrics, per expansion mode, over the same ranking (expansion never reorders):

- ``page_ndcg@10``: nDCG@10 of the pages (documents) in the order their first chunk appears in
  the top 10 results (trec_eval's ``ndcg_cut_10`` through ir-measures). Expansion cannot move it;
  it is reported as a check that the ranking is the same.
- ``answer@k``: share of queries whose answer passage lies wholly inside the text the top ``k``
  results return (whitespace collapsed). A chunk boundary through the passage is a miss for
  ``none``; expansion may repair it, or return the answer from a hit next to it.
- ``tokens@k``: mean tokens of those ``k`` results' texts (the run's tokenizer), what an agent
  pays for the context.
- ``answer@budget``: the same check on the first page of a budgeted answer (``max_tokens``,
  results measured as the HTTP API returns them), the question an agent under a cap asks: does
  the answer arrive in the first page?

Runs: the docs trees are indexed through the normal pipeline (folder source, default chunking,
the chosen embedding model) in ``--runs-dir``; a BEIR folder is evaluated on an existing run
(``--run-id``, e.g. the run ``indexfoundry eval`` built).

    nice -n 10 .venv/bin/python bench/expand_eval.py docs --corpora ../shared/corpora \
        --runs-dir /tmp/expand-runs --json
    nice -n 10 .venv/bin/python bench/expand_eval.py beir ../shared/corpora/benchmark/scifact \
        --run-id RUN --runs-dir /tmp/scifact-runs --json
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from indexfoundry import api
from indexfoundry.app.eval import read_qrels, read_queries
from indexfoundry.models.retrieval import ExpandMode, SearchMode, SearchRequest, SearchResult
from indexfoundry.retrieval.service import SearchService

HERE = Path(__file__).resolve().parent
QUERIES = HERE / "data" / "docs_queries.json"
EXPANDS: tuple[ExpandMode, ...] = ("none", "neighbors", "section")


def squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def ndcg10(run: dict[str, list[str]], qrels: dict[str, dict[str, int]]) -> float:
    import ir_measures
    from ir_measures import nDCG

    scored = {qid: {page: float(len(pages) - i) for i, page in enumerate(pages)} for qid, pages in run.items()}
    judged = {qid: rel for qid, rel in qrels.items() if qid in scored}
    return float(ir_measures.calc_aggregate([nDCG @ 10], judged, scored)[nDCG @ 10])


def first_pages(results: Iterable[SearchResult], page_of: Any, depth: int = 10) -> list[str]:
    pages: list[str] = []
    for result in list(results)[:depth]:
        page = page_of(result)
        if page not in pages:
            pages.append(page)
    return pages


def measure(
    service: SearchService,
    queries: dict[str, str],
    qrels: dict[str, dict[str, int]],
    answers: dict[str, list[str]],
    page_of: Any,
    *,
    mode: SearchMode,
    k: int,
    budget: int,
) -> dict[str, dict[str, float]]:
    counter = service.token_counter
    out: dict[str, dict[str, float]] = {}
    for expand in EXPANDS:
        rankings: dict[str, list[str]] = {}
        found = found_budget = 0
        tokens = 0
        for qid, text in queries.items():
            full = service.search(SearchRequest(query=text, top_k=10, mode=mode, expand=expand))
            rankings[qid] = first_pages(full.results, page_of)
            context = squash(" \n ".join(r.text for r in full.results[:k]))
            tokens += sum(counter.count(r.text) for r in full.results[:k])
            if any(squash(a) in context for a in answers[qid]):
                found += 1
            paged = service.search(SearchRequest(query=text, top_k=k, mode=mode, expand=expand, max_tokens=budget))
            first = squash(" \n ".join(r.text for r in paged.results))
            if any(squash(a) in first for a in answers[qid]):
                found_budget += 1
        n = len(queries)
        out[expand] = {
            "page_ndcg@10": round(ndcg10(rankings, qrels), 4),
            f"answer@{k}": round(found / n, 4),
            f"tokens@{k}": round(tokens / n, 1),
            f"answer@{budget}tok": round(found_budget / n, 4),
        }
    return out


# ---------------------------------------------------------------- docs trees
def docs_config(folder: Path, embedding_model: str, max_chars: int | None = None) -> dict[str, Any]:
    config: dict[str, Any] = {
        "connect": {"sources": [{"type": "folder", "path": str(folder), "glob": "**/*.md"}]},
        "index": {"embedding_model": embedding_model},
    }
    if max_chars is not None:  # smaller chunks than the default 1,500 characters
        config["normalize"] = {"max_chars": max_chars, "overlap_chars": min(150, max_chars // 5)}
    return config


def run_docs(args: argparse.Namespace) -> dict[str, Any]:
    data = json.loads(Path(args.queries).read_text(encoding="utf-8"))
    corpora = Path(args.corpora)
    if not corpora.is_dir():
        sys.exit(f"skipped: {corpora} is absent (the shared corpora are not on this machine)")
    report: dict[str, Any] = {"queries": 0, "trees": {}}
    for tree, spec in data["trees"].items():
        if args.tree and tree not in args.tree:
            continue
        folder = corpora / spec["path"]
        started = time.monotonic()
        out = api.pipeline_run(docs_config(folder, args.embedding_model, args.max_chars), runs_dir=args.runs_dir)
        if out.status != "completed":
            sys.exit(f"{tree}: run {out.run_id} {out.status}")
        service = api.search_service(out.run_id, runs_dir=args.runs_dir)
        view = api.open_run(out.run_id, runs_dir=args.runs_dir)
        prefix = folder.name + "/"

        def page_of(result: SearchResult, prefix: str = prefix) -> str:
            uri = result.source.uri
            return uri[len(prefix) :] if uri.startswith(prefix) else uri

        chosen = [q for q in data["queries"] if q["tree"] == tree]
        # Every judged answer passage must be in its page as extracted (else the judgment is wrong).
        for q in chosen:
            page = view.page(prefix + q["answer_page"])
            if squash(q["answer"]) not in squash(page.text):
                sys.exit(f"{q['id']}: the answer passage is not in {q['answer_page']} as extracted")
        queries = {q["id"]: q["query"] for q in chosen}
        qrels = {q["id"]: dict(q["relevant"]) for q in chosen}
        answers = {q["id"]: [q["answer"]] for q in chosen}
        metrics = measure(service, queries, qrels, answers, page_of, mode=args.mode, k=args.k, budget=args.budget)
        report["trees"][tree] = {
            "run_id": out.run_id,
            "queries": len(chosen),
            "chunks": sum(1 for _ in service.chunks),
            "seconds": round(time.monotonic() - started, 1),
            "metrics": metrics,
        }
        report["queries"] += len(chosen)
        view.close()
    report["mode"], report["k"], report["budget"] = args.mode, args.k, args.budget
    report["embedding_model"] = args.embedding_model
    report["max_chars"] = args.max_chars or 1500
    return report


# ---------------------------------------------------------------- BEIR
def run_beir(args: argparse.Namespace) -> dict[str, Any]:
    folder = Path(args.beir_dir)
    if not folder.is_dir():
        sys.exit(f"skipped: {folder} is absent")
    queries_all = read_queries(folder / "queries.jsonl")
    qrels_all = read_qrels(folder / "qrels" / f"{args.split}.tsv")
    relevant = {qid: {d: g for d, g in docs.items() if g > 0} for qid, docs in qrels_all.items()}
    relevant = {qid: docs for qid, docs in relevant.items() if docs and qid in queries_all}
    wanted = {d for docs in relevant.values() for d in docs}
    texts: dict[str, str] = {}
    with (folder / "corpus.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            if str(row["_id"]) in wanted:
                texts[str(row["_id"])] = str(row["text"])
    service = api.search_service(args.run_id, runs_dir=args.runs_dir)

    def page_of(result: SearchResult) -> str:
        return str(result.source.record_id or result.doc_id)

    queries = {qid: queries_all[qid] for qid in relevant}
    answers = {qid: [texts[d] for d in docs] for qid, docs in relevant.items()}
    metrics = measure(service, queries, relevant, answers, page_of, mode=args.mode, k=args.k, budget=args.budget)
    return {
        "run_id": service.run_id,
        "queries": len(queries),
        "mode": args.mode,
        "k": args.k,
        "budget": args.budget,
        "metrics": metrics,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="kind", required=True)
    docs = sub.add_parser("docs", help="the judged queries over the shared docs trees")
    docs.add_argument("--corpora", default="../shared/corpora")
    docs.add_argument("--queries", default=str(QUERIES))
    docs.add_argument("--runs-dir", required=True, type=Path)
    docs.add_argument("--embedding-model", default="local")
    docs.add_argument("--max-chars", type=int, help="normalize.max_chars of the runs (default: the default 1500)")
    docs.add_argument("--tree", action="append", help="only this tree (repeatable); default: every tree")
    beir = sub.add_parser("beir", help="a BEIR folder, on an existing run of it")
    beir.add_argument("beir_dir")
    beir.add_argument("--split", default="test")
    beir.add_argument("--run-id", required=True)
    beir.add_argument("--runs-dir", required=True, type=Path)
    for p in (docs, beir):
        p.add_argument("--mode", default="hybrid", choices=["semantic", "keyword", "hybrid"])
        p.add_argument("-k", type=int, default=5, help="results whose context is checked (answer@k, tokens@k)")
        p.add_argument("--budget", type=int, default=2000, help="max_tokens of the budgeted first page")
        p.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    report = run_docs(args) if args.kind == "docs" else run_beir(args)
    print(json.dumps(report, indent=2) if args.json else report)


if __name__ == "__main__":
    main()
