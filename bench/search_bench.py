"""Query latency of the retrieval service per mode (semantic, keyword, hybrid), top-10.

Builds a real run through the whole pipeline over a synthetic docs folder (``--chunks`` sections,
10 per markdown file, by_heading chunking, hash embedder, embedded Chroma), then times
``SearchService.search`` for each mode on the same queries.

    .venv/bin/python bench/search_bench.py --chunks 10000 --queries 200

Prints one JSON object with p50/p95 latency per mode and the build time.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

import numpy as np
from memory import peak_rss_mb  # bench/memory.py (the benches run as scripts: bench/ is on sys.path)

from indexfoundry import api
from indexfoundry.models.retrieval import SearchRequest
from indexfoundry.retrieval.service import open_service
from indexfoundry.storage.layout import RunLayout


def write_docs(root: Path, chunks: int) -> list[str]:
    rng = random.Random(42)
    vocab = [f"term{i}" for i in range(4000)]
    phrases: list[str] = []
    for doc in range((chunks + 9) // 10):
        parts = [f"# Document {doc}\n"]
        for section in range(min(10, chunks - doc * 10)):
            words = [rng.choice(vocab) for _ in range(80)]
            phrases.append(" ".join(words[:6]))
            parts.append(f"## Section {section}\n\n{' '.join(words)}.\n")
        (root / f"doc{doc:05d}.md").write_text("\n".join(parts), encoding="utf-8")
    return phrases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=10000)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ifsearch-") as tmp:
        docs = Path(tmp) / "docs"
        docs.mkdir()
        phrases = write_docs(docs, args.chunks)
        config = {
            "connect": {"sources": [{"type": "folder", "path": str(docs), "glob": "**/*.md"}]},
            "normalize": {"chunk_strategy": "by_heading", "detect_language": False, "dedupe": False},
            "index": {"embedding_model": "hash"},
        }
        started = time.perf_counter()
        out = api.pipeline_run(config, runs_dir=Path(tmp) / "runs")
        build_s = time.perf_counter() - started
        service = open_service(RunLayout(Path(tmp) / "runs" / out.run_id))
        rng = random.Random(7)
        queries = [rng.choice(phrases) for _ in range(args.queries)]
        result: dict[str, object] = {
            "chunks": out.summary.chunks_indexed,
            "pipeline_build_s": round(build_s, 1),
            "queries": len(queries),
        }
        for mode in ("semantic", "keyword", "hybrid"):
            service.search(SearchRequest(query=queries[0], top_k=10, mode=mode))  # warm up
            times = []
            for query in queries:
                t0 = time.perf_counter()
                service.search(SearchRequest(query=query, top_k=10, mode=mode))
                times.append((time.perf_counter() - t0) * 1000)
            result[f"{mode}_p50_ms"] = round(float(np.percentile(times, 50)), 2)
            result[f"{mode}_p95_ms"] = round(float(np.percentile(times, 95)), 2)
        result["peak_rss_mb"] = peak_rss_mb()
        print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
