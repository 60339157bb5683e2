"""Docs mode: profile one edit -> searchable refresh in one warm process.

What ``indexfoundry mcp --docs`` does for an edit, without the MCP transport: a ``DocsIndex``
over a copy of a docs folder (default: the mkdocs 1.4.2 docs) builds its first run, takes
``--warm`` edits to warm every cache (model session, memos, worker pool), then for each of
``--edits`` edits writes a new term into a page, refreshes (``ensure_fresh``) and searches the
new run through an ``api.RunPool`` (keyword mode, as ``bench/docs_latency_bench.py`` polls).
Prints each edit's seconds, then the top functions of the cProfile of the last edit by
cumulative time (``--top``), as text on stderr and the timings as JSON on stdout.

    PYTHONPATH=src nice -n 10 .venv/bin/python bench/docs_refresh_profile.py --embedding-model hash
    PYTHONPATH=src nice -n 10 .venv/bin/python bench/docs_refresh_profile.py --embedding-model local
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

CORPORA = Path(__file__).resolve().parents[2] / "shared" / "corpora"
DEFAULT_DOCS = CORPORA / "markdown" / "mkdocs-1.4.2" / "docs"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=Path, default=DEFAULT_DOCS)
    parser.add_argument("--embedding-model", default="hash")
    parser.add_argument("--warm", type=int, default=2)
    parser.add_argument("--edits", type=int, default=5)
    parser.add_argument("--top", type=int, default=45)
    parser.add_argument("--sort", default="cumulative")
    parser.add_argument("--profile-out", type=Path, help="Also write the last edit's profile here (pstats)")
    args = parser.parse_args()

    from indexfoundry import api
    from indexfoundry.app.docs_index import DocsIndex

    with tempfile.TemporaryDirectory(prefix="docs-refresh-") as tmp:
        docs = Path(tmp) / "docs"
        shutil.copytree(args.docs, docs, copy_function=shutil.copyfile)
        runs = Path(tmp) / "runs"
        index = DocsIndex(docs, runs, embedding_model=args.embedding_model)
        pool = api.RunPool(runs)
        target = sorted(docs.rglob("*.md"))[0]
        original = target.read_text(encoding="utf-8")
        started = time.monotonic()
        index.ensure_fresh()
        print(json.dumps({"first_build_s": round(time.monotonic() - started, 2)}), flush=True)
        seconds: list[float] = []
        profile = cProfile.Profile()
        try:
            for n in range(args.warm + args.edits):
                term = f"zebraquokka{n}x{os.getpid()}"
                target.write_text(original + f"\n\n## Edit {n}\n\nThis paragraph mentions {term}.\n", encoding="utf-8")
                last = n == args.warm + args.edits - 1
                began = time.monotonic()
                if last:
                    profile.enable()
                run_id = index.ensure_fresh()
                with pool.using(run_id) as run:
                    hits = run.search(term, mode="keyword", top_k=3)
                if last:
                    profile.disable()
                took = time.monotonic() - began
                found = any(term in hit.text for hit in hits.results)
                if n >= args.warm:
                    seconds.append(took)
                print(json.dumps({"edit": n, "warm": n < args.warm, "s": round(took, 3), "found": found}), flush=True)
        finally:
            pool.close()
            index.stop()
        if args.profile_out is not None:
            profile.dump_stats(args.profile_out)
        out = io.StringIO()
        pstats.Stats(profile, stream=out).sort_stats(args.sort).print_stats(args.top)
        print(out.getvalue(), file=sys.stderr)
        print(
            json.dumps(
                {
                    "model": args.embedding_model,
                    "edits": len(seconds),
                    "p50_s": round(statistics.median(seconds), 3),
                    "max_s": round(max(seconds), 3),
                    "load_average": [round(x, 2) for x in os.getloadavg()],
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()
