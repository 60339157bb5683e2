"""Pseudo-relevance feedback on the keyword leg (offline, deterministic), measured on SciFact.

First pass: the product's BM25 (same tokenizer, parameters and texts as the run's keyword index).
Feedback: the ``m`` best chunks; each stemmed term of theirs weighs the sum over them of its
share of the chunk's terms × its BM25 idf; the ``t`` heaviest terms not in the query form an
expansion query. Final score: BM25(query) + ``lam`` × max-normalised BM25(expansion) (RM3-like
interpolation, scores of the two queries scaled to the first pass's best).

Tuned on SciFact ``train``, reported on ``test`` (keyword leg only; the semantic leg does not
change). The run may be a hash-embedder run: BM25 does not depend on the embedder.

    .venv/bin/python bench/prf_research.py ../shared/corpora/benchmark/scifact --run-id RUN --runs-dir RUNS
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from indexfoundry import api
from indexfoundry.app.eval import read_qrels, read_queries, score_rankings
from indexfoundry.backends.keyword.bm25 import BM25_PARAMS, _stemmer, corpus_token_ids, keyword_text, tokenize


class FeedbackBm25:
    """BM25 over texts as the product builds it, keeping each text's token ids for feedback."""

    def __init__(self, ids: list[str], texts: list[str]) -> None:
        import bm25s
        from bm25s.tokenization import Tokenized

        self.ids = ids
        self.vocab, self.tokens = corpus_token_ids(texts)
        self.word = {i: w for w, i in self.vocab.items()}
        self.retriever = bm25s.BM25(**BM25_PARAMS)
        self.retriever.index(Tokenized(ids=self.tokens, vocab=self.vocab), show_progress=False)
        n = len(texts)
        df = Counter(t for toks in self.tokens for t in set(toks))
        self.idf = {t: math.log(1 + (n - d + 0.5) / (d + 0.5)) for t, d in df.items()}
        self.stemmer = _stemmer()

    def raw(self, tokens: list[str]) -> np.ndarray[Any, Any]:
        known = [t for t in tokens if t in self.vocab]
        if not known:
            return np.zeros(len(self.ids), dtype=np.float32)
        return np.asarray(self.retriever.get_scores(known), dtype=np.float32)

    def query_tokens(self, text: str) -> list[str]:
        return tokenize([text], self.stemmer)[0]

    def expansion(self, first: np.ndarray[Any, Any], query: list[str], m: int, t: int) -> list[str]:
        top = np.argsort(-first, kind="stable")[:m]
        weights: Counter[int] = Counter()
        for i in top:
            if first[i] <= 0:
                continue
            toks = self.tokens[int(i)]
            if not toks:
                continue
            counts = Counter(toks)
            for tok, c in counts.items():
                weights[tok] += c / len(toks) * self.idf.get(tok, 0.0)
        qset = set(query)
        ranked = sorted(weights.items(), key=lambda kv: (-kv[1], kv[0]))
        return [self.word[tok] for tok, _w in ranked if self.word[tok] not in qset and self.word[tok]][:t]

    def scores(self, text: str, m: int = 0, t: int = 0, lam: float = 0.0) -> np.ndarray[Any, Any]:
        query = self.query_tokens(text)
        first = self.raw(query)
        if m == 0 or lam == 0 or first.max(initial=0.0) <= 0:
            return first
        extra = self.raw(self.expansion(first, query, m, t))
        top, etop = float(first.max()), float(extra.max(initial=0.0))
        if etop <= 0:
            return first
        return first + lam * extra * (top / etop)

    def ranking(self, text: str, depth: int, **prf: Any) -> list[tuple[str, float]]:
        s = self.scores(text, **prf)
        hits = np.flatnonzero(s > 0)
        order = sorted(hits.tolist(), key=lambda i: (-float(s[i]), self.ids[i]))[:depth]
        return [(self.ids[i], float(s[i])) for i in order]


def index_of_run(run_id: str, runs_dir: Path) -> tuple[FeedbackBm25, dict[str, str]]:
    service = api.search_service(run_id, runs_dir=runs_dir)
    ordered = sorted(service.chunks.values(), key=lambda c: c.chunk_id)
    doc_of = {c.chunk_id: c.source.record_id or c.source.uri for c in ordered}
    return FeedbackBm25([c.chunk_id for c in ordered], [keyword_text(c) for c in ordered]), doc_of


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("beir_dir")
    parser.add_argument("--run-id", required=True)
    parser.add_argument("--runs-dir", required=True, type=Path)
    parser.add_argument("--splits", default="train,test")
    parser.add_argument("--grid", help="m,t,lam;m,t,lam... instead of the default grid")
    args = parser.parse_args(argv)
    folder = Path(args.beir_dir)
    queries = read_queries(folder / "queries.jsonl")
    index, doc_of = index_of_run(args.run_id, args.runs_dir)
    grid = [(0, 0, 0.0)] + [(m, t, lam) for m in (3, 10) for t in (5, 20) for lam in (0.1, 0.3)]
    if args.grid:
        grid = [(int(a), int(b), float(c)) for a, b, c in (g.split(",") for g in args.grid.split(";"))]
    rows = []
    for split in args.splits.split(","):
        qrels = read_qrels(folder / "qrels" / f"{split}.tsv")
        judged = [q for q in qrels if q in queries]
        for m, t, lam in grid:
            run = {q: [(doc_of[c], s) for c, s in index.ranking(queries[q], 100, m=m, t=t, lam=lam)] for q in judged}
            rows.append({"split": split, "m": m, "t": t, "lam": lam, **score_rankings(run, qrels)})
    print(json.dumps(rows))


if __name__ == "__main__":
    sys.exit(main())
