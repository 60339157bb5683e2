"""Hybrid search at N chunks, leg by leg: semantic top-10 and top-50, keyword top-50,
the fusion, hybrid threaded and with its legs one after the other, and Chroma's own query.

Builds (once, kept in FOLDER) the synthetic run of ``bench/search_bench.py`` (hash embedder,
embedded Chroma), then prints p50 milliseconds over 200 random 6-term queries:

    PYTHONPATH=src .venv/bin/python bench/hybrid_legs_bench.py /tmp/h100k 100000
"""

from __future__ import annotations

import json
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from search_bench import write_docs

from indexfoundry import api
from indexfoundry.backends.embedding.base import embed_queries
from indexfoundry.models.retrieval import SearchRequest
from indexfoundry.retrieval.fusion import fuse
from indexfoundry.retrieval.service import open_service
from indexfoundry.storage.layout import RunLayout


def main() -> None:
    root, chunks = Path(sys.argv[1]), int(sys.argv[2])
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
    svc = open_service(RunLayout(runs / api.resolve_run_id(runs, "latest")))
    rng = random.Random(7)
    vocab = [f"term{i}" for i in range(4000)]
    queries = [" ".join(rng.choice(vocab) for _ in range(6)) for _ in range(200)]

    def p50(fn: Callable[[str], Any]) -> float:
        fn(queries[0])
        times = []
        for query in queries:
            start = time.perf_counter()
            fn(query)
            times.append((time.perf_counter() - start) * 1000)
        return round(float(np.percentile(times, 50)), 2)

    hybrid = svc.profile.retrieval_config.hybrid_config
    vector = embed_queries(svc.embedder, [queries[0]])[0]
    result = {
        "semantic10": p50(lambda q: svc.semantic(q, 10, [])),
        "semantic50": p50(lambda q: svc.semantic(q, 50, [])),
        "keyword50": p50(lambda q: svc.keyword(q, 50, [])),
        "hybrid10_rank": p50(lambda q: svc.hybrid(q, 10, [])),
        "hybrid_seq": p50(lambda q: fuse(svc.semantic(q, 50, []), svc.keyword(q, 50, []), hybrid)[:10]),
        "search_semantic": p50(lambda q: svc.search(SearchRequest(query=q, top_k=10, mode="semantic"))),
        "search_keyword": p50(lambda q: svc.search(SearchRequest(query=q, top_k=10, mode="keyword"))),
        "search_hybrid": p50(lambda q: svc.search(SearchRequest(query=q, top_k=10, mode="hybrid"))),
        "store_query10": p50(lambda q: svc.store.query(vector, 10, None)),
        "store_query50": p50(lambda q: svc.store.query(vector, 50, None)),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
