"""Keyword search latency: IndexFoundry's ``KeywordIndex.search`` vs ``bm25s.BM25.retrieve`` on the same index.

Synthetic 60-word chunks over a 20,000-word vocabulary; random 4-word queries, top 100;
the two are interleaved query by query in one process.

    .venv/bin/python bench/keyword_bench.py --sizes 10000 100000 --queries 200
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time

import bm25s
from bm25s.tokenization import Tokenized

from indexfoundry.backends.keyword.bm25 import BM25_PARAMS, STOPWORDS, KeywordIndex, _stemmer, tokenize


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10000, 100000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--top-k", type=int, default=100)
    args = parser.parse_args()
    rng = random.Random(0)
    words = [f"w{i}" for i in range(20000)]
    stemmer = _stemmer()
    rows = []
    for n in args.sizes:
        corpus = tokenize([" ".join(rng.choice(words) for _ in range(60)) for _ in range(n)])
        vocab = {t: i for i, t in enumerate(sorted({t for doc in corpus for t in doc} | {""}))}
        retriever = bm25s.BM25(**BM25_PARAMS)
        retriever.index(Tokenized(ids=[[vocab[t] for t in doc] for doc in corpus], vocab=vocab), show_progress=False)
        index = KeywordIndex([f"c{i:07d}" for i in range(n)], retriever)
        ours: list[float] = []
        direct: list[float] = []
        for _ in range(args.queries):
            query = " ".join(rng.choice(words) for _ in range(4))
            started = time.perf_counter()
            index.search(query, args.top_k)
            ours.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            tokens = bm25s.tokenize([query], stopwords=STOPWORDS, stemmer=stemmer, show_progress=False)
            retriever.retrieve(tokens, k=args.top_k, show_progress=False)
            direct.append((time.perf_counter() - started) * 1000)
        rows.append(
            {
                "chunks": n,
                "indexfoundry_p50_ms": round(statistics.median(ours), 3),
                "bm25s_retrieve_p50_ms": round(statistics.median(direct), 3),
            }
        )
    print(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
