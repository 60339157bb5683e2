"""Hybrid search at N chunks, leg by leg, interleaved: ``search`` in each mode (top 10), the
parts of hybrid (the query's vector, the store's 100 nearest, BM25's 100 best, the fusion of
the two lists), and hybrid's legs always one after the other and always side by side: the
semantic leg on a second thread as the service runs it, and the other way round (the service
chooses between in line and side by side by the semantic leg's time: ``retrieval/legs.py``).

Builds (once, kept in FOLDER) the synthetic run of ``bench/search_bench.py`` (hash embedder,
embedded Chroma), then times every row on the same random 6-term queries, the rows in a
rotating order within each query, so that load from other processes falls on every row alike,
and prints one JSON object: p50 milliseconds per row, hybrid / the slower single mode, and the
machine's load average before and after:

    PYTHONPATH=src .venv/bin/python bench/hybrid_legs_bench.py /tmp/h100k 100000 --rounds 3 [--pool 50] [--rankings F]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from time import perf_counter
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from search_bench import write_docs

from indexfoundry import api
from indexfoundry.models.retrieval import SearchRequest
from indexfoundry.retrieval import service
from indexfoundry.retrieval.fusion import fuse
from indexfoundry.retrieval.service import SearchService, open_service
from indexfoundry.storage.layout import RunLayout


def build(root: Path, chunks: int) -> Path:
    runs = root / "runs"
    if not runs.exists():
        docs = root / "docs"
        docs.mkdir(parents=True, exist_ok=True)
        write_docs(docs, chunks)
        config = {
            "connect": {"sources": [{"type": "folder", "path": str(docs), "glob": "**/*.md"}]},
            "normalize": {"chunk_strategy": "by_heading", "detect_language": False, "dedupe": False},
            "index": {"embedding_model": "hash"},
        }
        api.pipeline_run(config, runs_dir=runs)
    return runs


def rows(svc: SearchService, first: str) -> dict[str, Callable[[str], Any]]:
    pool = service.HYBRID_CANDIDATES
    hybrid = svc.profile.retrieval_config.hybrid_config
    vector = svc.query_vector(first)
    semantic, keyword = svc.semantic(first, pool, []), svc.keyword(first, pool, [])
    threads = ThreadPoolExecutor(max_workers=1)

    def legs_in_line(q: str) -> Any:
        return fuse(svc.semantic(q, pool, []), svc.keyword(q, pool, []), hybrid, 10)

    def side_by_side(semantic_on_thread: bool) -> Callable[[str], Any]:
        # True: as the service does (retrieval/legs.py), the semantic leg on a second thread and
        # the keyword leg on this one; False: the other way round.
        handed, here = (svc.semantic, svc.keyword) if semantic_on_thread else (svc.keyword, svc.semantic)

        def legs(q: str) -> Any:
            theirs = threads.submit(handed, q, pool, [])
            try:
                mine = here(q, pool, [])
            finally:
                other = theirs.result()
            nearest, words = (other, mine) if semantic_on_thread else (mine, other)
            return fuse(nearest, words, hybrid, 10)

        return legs

    return {
        "search_semantic": lambda q: svc.search(SearchRequest(query=q, top_k=10, mode="semantic")),
        "search_keyword": lambda q: svc.search(SearchRequest(query=q, top_k=10, mode="keyword")),
        "search_hybrid": lambda q: svc.search(SearchRequest(query=q, top_k=10, mode="hybrid")),
        "query_vector": svc.query_vector,
        "nearest100": lambda q: svc.nearest(vector, pool, []),
        "keyword100": lambda q: svc.keyword(q, pool, []),
        "fusion10": lambda q: fuse(semantic, keyword, hybrid, 10),
        "hybrid_legs_in_line": legs_in_line,
        "hybrid_legs_on_two_threads": side_by_side(semantic_on_thread=True),
        "hybrid_keyword_on_second_thread": side_by_side(semantic_on_thread=False),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="Where the run is built (and kept for the next time)")
    parser.add_argument("chunks", type=int, help="Chunks of the synthetic corpus (10 per file)")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=2, help="Passes over the queries")
    parser.add_argument(
        "--pool", type=int, default=None, help="Candidates per leg in this process (default: HYBRID_CANDIDATES)"
    )
    parser.add_argument(
        "--rankings", type=Path, default=None, help="Also write each query's hybrid top 10 (JSON) to this file"
    )
    args = parser.parse_args()
    if args.pool is not None:
        service.HYBRID_CANDIDATES = args.pool  # measured here only: bench/hybrid_pool_eval.py has the quality
    runs = build(args.folder, args.chunks)
    svc = open_service(RunLayout(runs / api.resolve_run_id(runs, "latest")))
    rng = random.Random(7)
    vocab = [f"term{i}" for i in range(4000)]
    queries = [" ".join(rng.choice(vocab) for _ in range(6)) for _ in range(args.queries)]
    table = rows(svc, queries[0])
    names = list(table)
    times: dict[str, list[float]] = {name: [] for name in names}
    for name in names:  # warm: the store, the keyword index and the chunks are loaded
        table[name](queries[0])
    load_before = os.getloadavg()
    for turn in range(args.rounds * len(queries)):
        query = queries[turn % len(queries)]
        for name in names[turn % len(names) :] + names[: turn % len(names)]:
            start = perf_counter()
            table[name](query)
            times[name].append((perf_counter() - start) * 1000)
    if args.rankings is not None:  # two trees' files compare equal when their rankings do
        args.rankings.write_text(json.dumps([svc.rank(query, "hybrid", 10) for query in queries]) + "\n")
    p50 = {name: round(float(np.percentile(t, 50)), 3) for name, t in times.items()}
    slower = max(p50["search_semantic"], p50["search_keyword"])
    result = {
        "chunks": args.chunks,
        "queries": len(queries) * args.rounds,
        "p50_ms": p50,
        "hybrid_over_slower_mode": round(p50["search_hybrid"] / slower, 3),
        "candidates_per_leg": service.HYBRID_CANDIDATES,
        "load_before": [round(x, 2) for x in load_before],
        "load_after": [round(x, 2) for x in os.getloadavg()],
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
