"""HTTP API load: requests per second and p50/p99 latency of hybrid search, and the rate limiter's hold.

Builds a run of ``--chunks`` chunks (markdown sections, hash embedder), serves it with
``indexfoundry serve start --background`` on 127.0.0.1 only, and:

1. sends ``--requests`` hybrid searches from ``--concurrency`` threads (rate limiting off) and
   reports rps, p50, p99 and the error count (must be 0);
2. restarts the server with ``--rate-limit`` requests per minute and ``--burst``, hammers it from
   one client for ``--limit-seconds`` and reports how many requests were let through against the
   configured ceiling (burst + rate x time).

    .venv/bin/python bench/http_load.py --chunks 10000 --requests 2000 --concurrency 8   # the issue's scale
    .venv/bin/python bench/http_load.py --chunks 1000 --requests 300 --concurrency 4     # small, for a busy machine
"""

from __future__ import annotations

import argparse
import json
import random
import socket
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from indexfoundry import api
from indexfoundry.models.config import RateLimitConfig
from indexfoundry.surfaces.http.processes import serve_stop

SECTIONS_PER_DOC = 10
WORDS = [
    "index", "vector", "search", "chunk", "query", "install", "theme", "config", "server", "token",
    "python", "package", "release", "cache", "model", "embed", "filter", "score", "page", "source",
    "network", "storage", "planet", "galaxy", "river", "mountain", "engine", "signal", "matrix", "garden",
]  # fmt: skip


def build_corpus(folder: Path, chunks: int, seed: int = 0) -> None:
    """Markdown files of ``SECTIONS_PER_DOC`` sections each; one section becomes one chunk."""
    rng = random.Random(seed)
    docs = max(1, chunks // SECTIONS_PER_DOC)
    for d in range(docs):
        parts = [f"# Document {d}\n"]
        for s in range(SECTIONS_PER_DOC):
            sentence = " ".join(rng.choice(WORDS) for _ in range(60))
            parts.append(f"## Section {d}.{s}\n\n{sentence.capitalize()}.\n")
        (folder / f"doc{d:05d}.md").write_text("\n".join(parts), encoding="utf-8")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def load(endpoint: str, requests: int, concurrency: int, seed: int = 1) -> dict[str, Any]:
    rng = random.Random(seed)
    queries = [" ".join(rng.choice(WORDS) for _ in range(3)) for _ in range(requests)]
    latencies: list[float] = []
    errors: list[int] = []
    lock = threading.Lock()
    cursor = iter(range(requests))

    def worker() -> None:
        with httpx.Client(timeout=60) as client:
            while True:
                with lock:
                    index = next(cursor, None)
                if index is None:
                    return
                started = time.perf_counter()
                response = client.post(f"{endpoint}/search/hybrid", json={"query": queries[index], "top_k": 10})
                elapsed = time.perf_counter() - started
                with lock:
                    latencies.append(elapsed)
                    if response.status_code != 200 or not response.json()["results"]:
                        errors.append(response.status_code)

    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    return {
        "requests": requests,
        "concurrency": concurrency,
        "rps": round(requests / wall, 1),
        "p50_ms": round(percentile(latencies, 0.50) * 1000, 2),
        "p99_ms": round(percentile(latencies, 0.99) * 1000, 2),
        "mean_ms": round(statistics.fmean(latencies) * 1000, 2),
        "errors": len(errors),
    }


def hold(endpoint: str, seconds: float, limit: RateLimitConfig) -> dict[str, Any]:
    """One client as fast as it can for ``seconds``: how many got through vs the ceiling."""
    allowed = refused = 0
    retry_after_ok = True
    started = time.perf_counter()
    with httpx.Client(timeout=60) as client:
        while time.perf_counter() - started < seconds:
            response = client.post(f"{endpoint}/search/hybrid", json={"query": "index search", "top_k": 1})
            if response.status_code == 200:
                allowed += 1
            elif response.status_code == 429:
                refused += 1
                retry_after_ok &= int(response.headers.get("retry-after", "0")) >= 1
            else:
                raise SystemExit(f"unexpected status {response.status_code}: {response.text}")
    elapsed = time.perf_counter() - started
    ceiling = limit.burst + limit.requests_per_minute * elapsed / 60
    return {
        "seconds": round(elapsed, 2),
        "configured_per_minute": limit.requests_per_minute,
        "burst": limit.burst,
        "allowed": allowed,
        "refused_429": refused,
        "ceiling": round(ceiling, 1),
        "held": allowed <= ceiling + 1,
        "retry_after_present": retry_after_ok,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=10_000, help="chunks in the served index")
    parser.add_argument("--requests", type=int, default=2000, help="hybrid searches in the load phase")
    parser.add_argument("--concurrency", type=int, default=8, help="client threads in the load phase")
    parser.add_argument("--rate-limit", type=int, default=600, help="requests per minute in the limiter phase")
    parser.add_argument("--burst", type=int, default=10, help="burst in the limiter phase")
    parser.add_argument("--limit-seconds", type=float, default=10.0, help="length of the limiter phase")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="indexfoundry-http-bench-") as tmp:
        root = Path(tmp)
        (root / "docs").mkdir()
        build_corpus(root / "docs", args.chunks)
        config = {
            "connect": {"sources": [{"type": "folder", "path": str(root / "docs"), "glob": "**/*.md"}]},
            "normalize": {"chunk_strategy": "by_heading", "dedupe": False},
            "index": {"embedding_model": "hash"},
        }
        started = time.perf_counter()
        run = api.pipeline_run(config, runs_dir=root / "runs")
        build_s = time.perf_counter() - started
        chunks = run.summary.chunks_indexed
        report: dict[str, Any] = {"chunks": chunks, "index_build_s": round(build_s, 1)}

        port = free_port()
        server = api.serve_start(
            run.run_id, runs_dir=root / "runs", port=port, rate_limit=RateLimitConfig(enabled=False)
        )
        try:
            load(server.retrieval_endpoint, min(20, args.requests), 1)  # warm up
            report["hybrid_load"] = load(server.retrieval_endpoint, args.requests, args.concurrency)
        finally:
            serve_stop(runs_dir=root / "runs", port=port)

        limit = RateLimitConfig(requests_per_minute=args.rate_limit, burst=args.burst)
        port = free_port()
        server = api.serve_start(run.run_id, runs_dir=root / "runs", port=port, rate_limit=limit)
        try:
            report["rate_limiter"] = hold(server.retrieval_endpoint, args.limit_seconds, limit)
        finally:
            serve_stop(runs_dir=root / "runs", port=port)
    print(json.dumps(report, indent=2))
    if report["hybrid_load"]["errors"] or not report["rate_limiter"]["held"]:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
