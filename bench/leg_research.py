"""Query-side and fusion variants of hybrid search, scored offline from a run's own vectors.

Reads a run's stored vectors (``indexed/embeddings.jsonl``: chunk heads and their model windows),
embeds the queries once with the run's model, scores every vector exactly (a chunk keeps its best
window, as the product's semantic leg does) and takes the product's keyword leg from its BM25
index. Then each variant is ranked and scored without further model calls:

- ``rrf k=…``: reciprocal rank fusion with another ``k`` (the product's default is 60);
- ``pool=…``: RRF over more or fewer candidates per leg (the product fuses the top 100 of each);
- ``agg=…``: a long chunk's score from its windows by ``head`` (first window only), ``mean`` or
  ``headbest`` ((head + best) / 2) instead of the best window;
- ``agree``: RRF whose ``k`` depends on the legs' agreement (share of common chunks in the two top
  10s at least ``th``: ``k1``, else ``k2``);
- ``rocchio``: the query vector moved toward the mean of the best-matching vectors of the top
  ``m`` hits (``src=sem``: the semantic leg's, ``src=rrf``: the fused ranking's), weight ``beta``,
  re-normalised; the semantic leg re-ranked with it, then fused again;
- ``dedupe``: the fused ranking without a chunk whose first vector has a cosine above ``tau``
  with that of a chunk ranked above it (near-identical sections or windows);
- ``kwprf``: the keyword leg's query expanded by the ``t`` heaviest terms of the fused top ``m``
  (RM3-like, ``lam`` × the expansion's max-normalised BM25 score), then fused again.

Two kinds of questions: a BEIR folder (scored by nDCG@10 of documents, one ``--split`` of qrels)
or an answers file (hit@k and MRR@10 of the answer passage, ``--split dev|test``). Tune on
``train`` / ``dev``; look at ``test`` once per chosen change:

    nice -n 10 .venv/bin/python bench/leg_research.py beir ../shared/corpora/benchmark/scifact \\
        --run-id RUN --runs-dir RUNS --split train
    nice -n 10 .venv/bin/python bench/leg_research.py answers bench/data/mkdocs_answers.json \\
        --run-id RUN --runs-dir RUNS --split dev
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from indexfoundry import api
from indexfoundry.app.answers import DEPTH, KeyedQuestion, first_rank, read_answers, score_ranks, squash
from indexfoundry.app.eval import read_qrels, read_queries, score_rankings
from indexfoundry.backends.embedding.base import embed_queries
from indexfoundry.backends.keyword.bm25 import keyword_text
from indexfoundry.phases.index.embedding import decode_vector
from indexfoundry.retrieval.fusion import rrf_fuse
from indexfoundry.storage.layout import RunLayout

sys.path.insert(0, str(Path(__file__).resolve().parent))
from prf_research import FeedbackBm25

Ranked = list[tuple[str, float]]
POOL = 100


class Legs:
    """Exact semantic scores of every chunk (best window) and the run's BM25, for many queries."""

    def __init__(self, service: Any, layout: RunLayout, texts: list[str]) -> None:
        ids: list[str] = []
        vectors = []
        with layout.embeddings.open(encoding="utf-8") as handle:
            for line in handle:
                row = json.loads(line)
                ids.append(row["chunk_id"])
                vectors.append(decode_vector(row["vector"]))
        self.vectors = np.stack(vectors)
        self.chunk_ids = sorted({i.split("#w")[0] for i in ids})
        position = {c: k for k, c in enumerate(self.chunk_ids)}
        owner = np.array([position[i.split("#w")[0]] for i in ids])
        self.order = np.argsort(owner, kind="stable")
        self.starts = np.r_[0, np.flatnonzero(np.diff(owner[self.order])) + 1]
        ends = np.r_[self.starts[1:], len(self.order)]
        self.members = [self.order[a:b] for a, b in zip(self.starts, ends, strict=True)]
        self.is_head = np.array(["#w" not in i for i in ids])
        self.queries = np.asarray(embed_queries(service.embedder, texts), dtype=np.float32)
        self.sims = self.queries @ self.vectors.T
        chunks = sorted(service.chunks.values(), key=lambda c: c.chunk_id)
        self.bm25 = FeedbackBm25([c.chunk_id for c in chunks], [keyword_text(c) for c in chunks])
        self.texts = texts

    def semantic(self, sims: np.ndarray[Any, Any], agg: str = "max") -> np.ndarray[Any, Any]:
        """Per chunk: its best vector's score, or another aggregation of its windows."""
        if agg == "max":
            return np.maximum.reduceat(sims[:, self.order], self.starts, axis=1)
        out = np.zeros((sims.shape[0], len(self.chunk_ids)), dtype=np.float32)
        for k, members in enumerate(self.members):
            heads = members[self.is_head[members]]
            head = sims[:, heads[0]] if len(heads) else sims[:, members].max(1)
            window = sims[:, members]
            out[:, k] = window.mean(1) if agg == "mean" else (head + window.max(1)) / 2 if agg == "headbest" else head
        return out

    def ranked(self, row: np.ndarray[Any, Any], depth: int = POOL) -> Ranked:
        top = np.lexsort((np.arange(len(row)), -row))[:depth]
        return [(self.chunk_ids[t], float(row[t])) for t in top]

    def keyword(self, text: str, depth: int = POOL, extra: tuple[list[str], float] | None = None) -> Ranked:
        tokens = self.bm25.query_tokens(text)
        scores = self.bm25.raw(tokens)
        if extra is not None:
            words, lam = extra
            more = self.bm25.raw(words)
            top, etop = float(scores.max(initial=0.0)), float(more.max(initial=0.0))
            if top > 0 and etop > 0:
                scores = scores + lam * more * (top / etop)
        hits = np.flatnonzero(scores > 0)
        order = sorted(hits.tolist(), key=lambda i: (-float(scores[i]), self.bm25.ids[i]))[:depth]
        return [(self.bm25.ids[i], float(scores[i])) for i in order]

    def rocchio(self, feedback: list[list[int]], beta: float) -> np.ndarray[Any, Any]:
        """Query vectors moved toward the mean best-matching vector of each query's feedback chunks."""
        moved = self.queries.copy()
        for qi, chunks in enumerate(feedback):
            if not chunks:
                continue
            best = [self.vectors[m[np.argmax(self.sims[qi, m])]] for m in (self.members[c] for c in chunks)]
            moved[qi] = self.queries[qi] + beta * np.mean(best, 0)
            moved[qi] /= np.linalg.norm(moved[qi])
        return moved @ self.vectors.T

    def dedupe(self, ranking: Ranked, position: dict[str, int], tau: float) -> Ranked:
        """``ranking`` without chunks whose first vector is within cosine ``tau`` of a kept one's."""
        kept: Ranked = []
        firsts: list[np.ndarray[Any, Any]] = []
        for cid, score in ranking:
            first = self.vectors[self.members[position[cid]][0]]
            if any(float(first @ other) > tau for other in firsts):
                continue
            kept.append((cid, score))
            firsts.append(first)
        return kept

    def expansion(self, text: str, chunk_ids: list[str], t: int) -> list[str]:
        row = {c: i for i, c in enumerate(self.bm25.ids)}
        weights: Counter[int] = Counter()
        for cid in chunk_ids:
            tokens = self.bm25.tokens[row[cid]]
            for token, count in Counter(tokens).items():
                weights[token] += count / max(len(tokens), 1) * self.bm25.idf.get(token, 0.0)
        query = set(self.bm25.query_tokens(text))
        ordered = sorted(weights.items(), key=lambda kv: (-kv[1], kv[0]))
        return [w for w in (self.bm25.word[k] for k, _ in ordered) if w and w not in query][:t]


def variants(legs: Legs) -> dict[str, Callable[[int], Ranked]]:
    """Each variant: query row -> fused ranking (chunk ids, best first)."""
    base = legs.semantic(legs.sims)
    kw = [legs.keyword(text) for text in legs.texts]
    out: dict[str, Callable[[int], Ranked]] = {}
    for k in (1, 5, 10, 20, 60):
        out[f"rrf k={k}"] = lambda qi, k=k: rrf_fuse([legs.ranked(base[qi]), kw[qi]], k)
    for pool in (50, 200):
        out[f"rrf k=60 pool={pool}"] = lambda qi, p=pool: rrf_fuse(
            [legs.ranked(base[qi], p), legs.keyword(legs.texts[qi], p)], 60
        )
    for agg in ("head", "mean", "headbest"):
        scores = legs.semantic(legs.sims, agg)
        out[f"rrf k=60 agg={agg}"] = lambda qi, s=scores: rrf_fuse([legs.ranked(s[qi]), kw[qi]], 60)

    def agree(qi: int, th: float, k1: int, k2: int) -> Ranked:
        sem = legs.ranked(base[qi])
        common = len({c for c, _ in sem[:10]} & {c for c, _ in kw[qi][:10]}) / 10
        return rrf_fuse([sem, kw[qi]], k1 if common >= th else k2)

    for th, k1, k2 in ((0.3, 60, 10), (0.5, 60, 10), (0.5, 60, 1)):
        out[f"agree th={th} k1={k1} k2={k2}"] = lambda qi, a=(th, k1, k2): agree(qi, *a)
    fused = [rrf_fuse([legs.ranked(base[qi]), kw[qi]], 60) for qi in range(len(legs.texts))]
    position = {c: k for k, c in enumerate(legs.chunk_ids)}
    for tau in (0.9, 0.95, 0.98):
        out[f"dedupe tau={tau}"] = lambda qi, t=tau: legs.dedupe(fused[qi], position, t)
    for src in ("sem", "rrf"):
        for m, beta in ((1, 0.25), (2, 0.5), (3, 0.25), (5, 0.25)):
            tops = [
                [position[c] for c, _ in (legs.ranked(base[qi], m) if src == "sem" else fused[qi][:m])]
                for qi in range(len(legs.texts))
            ]
            moved = legs.semantic(legs.rocchio(tops, beta))
            out[f"rocchio src={src} m={m} beta={beta}"] = lambda qi, s=moved: rrf_fuse([legs.ranked(s[qi]), kw[qi]], 60)
    for m, t, lam in ((1, 10, 0.1), (3, 20, 0.1), (3, 10, 0.3)):

        def kwprf(qi: int, m: int = m, t: int = t, lam: float = lam) -> Ranked:
            words = legs.expansion(legs.texts[qi], [c for c, _ in fused[qi][:m]], t)
            return rrf_fuse([legs.ranked(base[qi]), legs.keyword(legs.texts[qi], POOL, (words, lam))], 60)

        out[f"kwprf m={m} t={t} lam={lam}"] = kwprf
    return out


def beir(args: argparse.Namespace) -> None:
    folder = Path(args.target)
    queries = read_queries(folder / "queries.jsonl")
    qrels = read_qrels(folder / "qrels" / f"{args.split}.tsv")
    qids = [q for q in qrels if q in queries]
    service = api.search_service(args.run_id, runs_dir=args.runs_dir)
    legs = Legs(service, RunLayout(Path(args.runs_dir) / service.run_id), [queries[q] for q in qids])
    doc_of = {cid: c.source.record_id or c.source.uri for cid, c in service.chunks.items()}

    def documents(ranking: Ranked) -> Ranked:
        seen: dict[str, float] = {}
        for cid, score in ranking:
            seen.setdefault(doc_of[cid], score)
        return list(seen.items())[:POOL]

    for name, rank in variants(legs).items():
        runs = {q: documents(rank(qi)) for qi, q in enumerate(qids)}
        print(json.dumps({"variant": name, "split": args.split, **score_rankings(runs, qrels)}), flush=True)


def answers(args: argparse.Namespace) -> None:
    questions = read_answers(Path(args.target), args.split)
    service = api.search_service(args.run_id, runs_dir=args.runs_dir)
    legs = Legs(service, RunLayout(Path(args.runs_dir) / service.run_id), [q.question for q in questions])
    squashed = {cid: (squash(c.content.text), c.source.uri) for cid, c in service.chunks.items()}
    for name, rank in variants(legs).items():
        ranks = {
            q.id: first_rank([c for c, _ in rank(qi)][:DEPTH], squashed.__getitem__, KeyedQuestion(q), 1.0)
            for qi, q in enumerate(questions)
        }
        print(json.dumps({"variant": name, "split": args.split, **score_ranks(ranks)}), flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kind", choices=["beir", "answers"])
    parser.add_argument("target", help="a BEIR folder, or an answers file")
    parser.add_argument("--run-id", required=True)
    parser.add_argument("--runs-dir", required=True)
    parser.add_argument("--split", required=True, help="train/dev to tune; test once per chosen change")
    args = parser.parse_args(argv)
    (beir if args.kind == "beir" else answers)(args)


if __name__ == "__main__":
    sys.exit(main())
