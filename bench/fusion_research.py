"""Hybrid fusion, tuned on training data only: the two legs of every query ranked once and cached,
then each fusion rule scored from the cache (no embedding while tuning).

Two kinds of data:

- a BEIR folder (SciFact) on the run ``indexfoundry eval`` built: the semantic and keyword legs
  (top ``--depth`` chunks, one chunk per document) of every judged query of the given splits;
  fusion is scored by nDCG@10 (trec_eval through ir-measures), tuned on ``train``, reported on
  ``test``;
- an answers file (``bench/data/mkdocs_answers.json``) on a docs run: the legs of every question,
  scored by hit@k / MRR@10 of the answer passage, tuned on ``dev``, reported on ``test``.

    nice -n 10 .venv/bin/python bench/fusion_research.py legs-beir \
        ../shared/corpora/benchmark/scifact --run-id RUN --runs-dir RUNS --splits train,test --out legs.json
    .venv/bin/python bench/fusion_research.py legs-answers bench/data/mkdocs_answers.json \
        --run-id RUN --runs-dir RUNS --out mk-legs.json
    .venv/bin/python bench/fusion_research.py tune legs.json
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from indexfoundry import api
from indexfoundry.app.answers import DEPTH, KeyedQuestion, first_rank, read_answers, score_ranks, squash
from indexfoundry.app.eval import read_qrels, read_queries, score_rankings
from indexfoundry.retrieval.fusion import rrf_fuse, weighted_fuse

Ranked = list[tuple[str, float]]
Fuser = Callable[[str, Ranked, Ranked], Ranked]


# ---------------------------------------------------------------- caching the legs
def _legs(service: Any, text: str, depth: int) -> dict[str, Ranked]:
    return {"semantic": service.semantic(text, depth, []), "keyword": service.keyword(text, depth, [])}


def legs_beir(args: argparse.Namespace) -> None:
    folder = Path(args.beir_dir)
    queries = read_queries(folder / "queries.jsonl")
    service = api.search_service(args.run_id, runs_dir=args.runs_dir)
    out: dict[str, Any] = {"kind": "beir", "run_id": service.run_id, "depth": args.depth, "splits": {}, "legs": {}}
    for split in args.splits.split(","):
        qrels = read_qrels(folder / "qrels" / f"{split}.tsv")
        out["splits"][split] = {q: docs for q, docs in qrels.items() if q in queries}
        for qid in out["splits"][split]:
            if qid not in out["legs"]:
                legs = _legs(service, queries[qid], args.depth)
                # one chunk per document: the judged id is the record id
                out["legs"][qid] = {
                    mode: [(service.chunk(cid).source.record_id or cid, s) for cid, s in ranked]
                    for mode, ranked in legs.items()
                }
                out["legs"][qid]["text"] = queries[qid]
    Path(args.out).write_text(json.dumps(out), encoding="utf-8")
    print(f"{len(out['legs'])} queries cached in {args.out}")


def legs_answers(args: argparse.Namespace) -> None:
    questions = read_answers(Path(args.answers))
    service = api.search_service(args.run_id, runs_dir=args.runs_dir)
    chunks = {
        cid: {"text": squash(c.content.text), "uri": c.source.uri, "crumb": c.metadata.heading_path}
        for cid, c in service.chunks.items()
    }
    out: dict[str, Any] = {"kind": "answers", "run_id": service.run_id, "depth": args.depth, "chunks": chunks}
    out["questions"] = [q.model_dump() for q in questions]
    out["legs"] = {q.id: {**_legs(service, q.question, args.depth), "text": q.question} for q in questions}
    Path(args.out).write_text(json.dumps(out), encoding="utf-8")
    print(f"{len(questions)} questions cached in {args.out}")


# ---------------------------------------------------------------- fusion rules
def _zscore(ranking: Ranked) -> dict[str, float]:
    if not ranking:
        return {}
    scores = [s for _, s in ranking]
    mean = sum(scores) / len(scores)
    std = math.sqrt(sum((s - mean) ** 2 for s in scores) / len(scores)) or 1.0
    return {cid: (s - mean) / std for cid, s in ranking}


def zscore_fuse(semantic: Ranked, keyword: Ranked, alpha: float) -> Ranked:
    """alpha × z-scored cosine + (1 − alpha) × z-scored BM25; a chunk missing from a list gets that
    list's lowest z-score."""
    sem, kw = _zscore(semantic), _zscore(keyword)
    low_s, low_k = min(sem.values(), default=0.0), min(kw.values(), default=0.0)
    fused = {cid: alpha * sem.get(cid, low_s) + (1 - alpha) * kw.get(cid, low_k) for cid in sem.keys() | kw.keys()}
    return sorted(fused.items(), key=lambda item: (-item[1], item[0]))


def tmm_fuse(semantic: Ranked, keyword: Ranked, alpha: float) -> Ranked:
    """Convex combination of scores normalised by their theoretical minimum (cosine −1, BM25 0)
    and the list's maximum (Bruch et al.'s TM2C2); a chunk missing from a list gets 0 from it."""
    top_s = max((s for _, s in semantic), default=0.0)
    top_k = max((s for _, s in keyword), default=0.0) or 1.0
    sem = {cid: (s + 1) / (top_s + 1) for cid, s in semantic}
    kw = {cid: s / top_k for cid, s in keyword}
    fused = {cid: alpha * sem.get(cid, 0.0) + (1 - alpha) * kw.get(cid, 0.0) for cid in sem.keys() | kw.keys()}
    return sorted(fused.items(), key=lambda item: (-item[1], item[0]))


def weighted_rrf(semantic: Ranked, keyword: Ranked, k: int, w_sem: float) -> Ranked:
    """RRF with per-leg weights: w × 1/(k + rank), w_sem for the semantic leg, 1 − w_sem for keyword."""
    fused: dict[str, float] = {}
    for ranking, w in ((semantic, w_sem), (keyword, 1 - w_sem)):
        for rank, (cid, _s) in enumerate(ranking, start=1):
            fused[cid] = fused.get(cid, 0.0) + w / (k + rank)
    return sorted(fused.items(), key=lambda item: (-item[1], item[0]))


_IDENT = re.compile(
    r"`[^`]+`|\"[^\"]+\"|(?<![\w-])--?[a-zA-Z][\w-]*|\b[a-zA-Z]\w*_\w+\b"
    r"|\b[a-zA-Z_]\w*\.[a-zA-Z_]\w*\b|\b[a-z]+[A-Z]\w*\b"
)
_QUESTION = re.compile(r"^(how|what|why|when|where|which|who|can|does|do|is|are|should)\b|\?\s*$", re.I)


def query_shape(text: str) -> str:
    """``identifier`` (a quoted value, snake_case, dotted name, --flag or camelCase), ``question``, else ``other``."""
    if _IDENT.search(text):
        return "identifier"
    if _QUESTION.search(text.strip()):
        return "question"
    return "other"


# ---------------------------------------------------------------- scoring
def fused_rankings(cache: dict[str, Any], fuser: Fuser, depth: int) -> dict[str, Ranked]:
    out: dict[str, Ranked] = {}
    for qid, legs in cache["legs"].items():
        out[qid] = fuser(legs["text"], [tuple(x) for x in legs["semantic"]], [tuple(x) for x in legs["keyword"]])[
            :depth
        ]  # type: ignore[misc]
    return out


def beir_score(cache: dict[str, Any], fuser: Fuser, split: str) -> float:
    qrels = cache["splits"][split]
    rankings = {q: r for q, r in fused_rankings(cache, fuser, 100).items() if q in qrels}
    return score_rankings(rankings, qrels)["ndcg@10"]


def answers_score(cache: dict[str, Any], fuser: Fuser, split: str | None) -> dict[str, float]:
    from indexfoundry.models.answers import AnswerQuestion

    chunks = cache["chunks"]

    def text_of(cid: str) -> tuple[str, str]:
        return chunks[cid]["text"], chunks[cid]["uri"]

    ranks: dict[str, int | None] = {}
    rankings = fused_rankings(cache, fuser, DEPTH)
    for row in cache["questions"]:
        q = AnswerQuestion.model_validate(row)
        if split is None or q.split == split:
            ranks[q.id] = first_rank([c for c, _ in rankings[q.id]], text_of, KeyedQuestion(q), 1.0)
    return score_ranks(ranks)


FUSERS: dict[str, Callable[..., Fuser]] = {
    "rrf": lambda k=60: lambda _t, s, kw: rrf_fuse([s, kw], k),
    "wrrf": lambda k=60, w=0.5: lambda _t, s, kw: weighted_rrf(s, kw, k, w),
    "minmax": lambda a=0.7: lambda _t, s, kw: weighted_fuse(s, kw, a),
    "zscore": lambda a=0.5: lambda _t, s, kw: zscore_fuse(s, kw, a),
    "tmm": lambda a=0.5: lambda _t, s, kw: tmm_fuse(s, kw, a),
    "shape": lambda k=60, wi=0.4, wq=0.6, wo=0.5: (
        lambda t, s, kw: weighted_rrf(s, kw, k, {"identifier": wi, "question": wq, "other": wo}[query_shape(t)])
    ),
    "semantic": lambda: lambda _t, s, kw: s,
    "keyword": lambda: lambda _t, s, kw: kw,
}


def grid(kind: str) -> list[tuple[str, dict[str, float]]]:
    out: list[tuple[str, dict[str, float]]] = [("semantic", {}), ("keyword", {})]
    out += [("rrf", {"k": k}) for k in (1, 5, 10, 20, 30, 40, 60, 80, 100, 200)]
    out += [("wrrf", {"k": k, "w": w}) for k in (10, 20, 40, 60, 100) for w in (0.3, 0.4, 0.45, 0.55, 0.6, 0.7)]
    out += [("minmax", {"a": a / 20}) for a in range(1, 20)]
    out += [("zscore", {"a": a / 20}) for a in range(1, 20)]
    out += [("tmm", {"a": a / 20}) for a in range(1, 20)]
    out += [
        ("shape", {"k": 60, "wi": wi, "wq": wq, "wo": wo})
        for wi in (0.3, 0.4, 0.5)
        for wq in (0.5, 0.6, 0.7)
        for wo in (0.4, 0.5, 0.6)
    ]
    return out


def tune(args: argparse.Namespace) -> None:
    cache = json.loads(Path(args.cache).read_text(encoding="utf-8"))
    rows = []
    for name, params in grid(cache["kind"]):
        fuser = FUSERS[name](**params)
        if cache["kind"] == "beir":
            rows.append((name, params, {s: round(beir_score(cache, fuser, s), 4) for s in cache["splits"]}))
        else:
            rows.append((name, params, {s: answers_score(cache, fuser, s) for s in ("dev", "test")}))
    print(json.dumps([{"fusion": n, "params": p, "scores": s} for n, p, s in rows]))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("legs-beir")
    b.add_argument("beir_dir")
    b.add_argument("--splits", default="train,test")
    a = sub.add_parser("legs-answers")
    a.add_argument("answers")
    for p in (a, b):
        p.add_argument("--run-id", required=True)
        p.add_argument("--runs-dir", required=True, type=Path)
        p.add_argument("--depth", type=int, default=100)
        p.add_argument("--out", required=True)
    t = sub.add_parser("tune")
    t.add_argument("cache")
    args = parser.parse_args(argv)
    {"legs-beir": legs_beir, "legs-answers": legs_answers, "tune": tune}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
