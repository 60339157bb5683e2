"""Docs mode: edit → searchable latency of ``indexfoundry mcp --docs``.

Starts the real server over stdio with the official MCP SDK client on a copy of a docs folder
(default: the mkdocs 1.4.2 docs), waits for the first build, then ``--edits`` times: writes a
file holding a new, unique term (alternately a new page and an edit of an existing one) and
polls ``search_docs`` (keyword mode, so the check does not depend on the model's ranking)
until a result contains the term. Prints each latency as it is measured, then p50/p95 and the
load average, as JSON.

    PYTHONPATH=src nice -n 15 .venv/bin/python bench/docs_latency_bench.py --edits 20
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

CORPORA = Path(__file__).resolve().parents[2] / "shared" / "corpora"
DEFAULT_DOCS = CORPORA / "markdown" / "mkdocs-1.4.2" / "docs"


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(share * (len(ordered) - 1))))]


async def measure(docs: Path, runs: Path, edits: int, model: str, timeout: float) -> dict[str, Any]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    env = {k: v for k, v in os.environ.items() if not k.startswith("INDEXFOUNDRY_")}
    args = ["-m", "indexfoundry", "mcp", "--docs", str(docs), "--runs-dir", str(runs), "--embedding-model", model]
    params = StdioServerParameters(command=sys.executable, args=args, env=env)
    latencies: list[float] = []
    runs.mkdir(parents=True, exist_ok=True)
    with (runs / "server-stderr.log").open("a", encoding="utf-8") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            started = time.monotonic()
            await session.call_tool("search_docs", {"query": "install mkdocs"})
            first_build = time.monotonic() - started
            print(json.dumps({"first_build_s": round(first_build, 2)}), flush=True)
            target = next(p for p in sorted(docs.rglob("*.md")))
            original = target.read_text(encoding="utf-8")
            for n in range(edits):
                term = f"zebraquokka{n}x{os.getpid()}"
                if n % 2 == 0:
                    path = docs / f"bench-new-{n}.md"
                    body = f"# Bench page {n}\n\nThis page mentions {term} once.\n"
                else:
                    path = target
                    body = original + f"\n\n## Bench edit {n}\n\nThis paragraph mentions {term} once.\n"
                written = time.monotonic()
                path.write_text(body, encoding="utf-8")
                while True:
                    result = await session.call_tool("search_docs", {"query": term, "mode": "keyword", "top_k": 3})
                    text = "\n".join(getattr(b, "text", "") for b in result.content)
                    if term in text:
                        break
                    if time.monotonic() - written > timeout:
                        raise SystemExit(f"edit {n}: {term} not searchable after {timeout} s")
                    await asyncio.sleep(0.02)
                latency = time.monotonic() - written
                latencies.append(latency)
                print(
                    json.dumps(
                        {"edit": n, "kind": "new page" if n % 2 == 0 else "edit", "latency_s": round(latency, 3)}
                    ),
                    flush=True,
                )
    return {
        "edits": len(latencies),
        "p50_s": round(statistics.median(latencies), 3),
        "p95_s": round(percentile(latencies, 0.95), 3),
        "max_s": round(max(latencies), 3),
        "first_build_s": round(first_build, 2),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "model": model,
        "docs": str(docs),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=Path, default=DEFAULT_DOCS)
    parser.add_argument("--edits", type=int, default=20)
    parser.add_argument("--embedding-model", default="local")
    parser.add_argument(
        "--runs-dir", type=Path, help="Runs folder (default: a temporary one); its embedding cache is reused"
    )
    parser.add_argument("--timeout", type=float, default=300.0, help="Give up on one edit after this many seconds")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="docs-latency-") as tmp:
        docs = Path(tmp) / "docs"
        shutil.copytree(args.docs, docs, copy_function=shutil.copyfile)  # writable copies
        runs = args.runs_dir or Path(tmp) / "runs"
        result = asyncio.run(measure(docs, runs, args.edits, args.embedding_model, args.timeout))
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
