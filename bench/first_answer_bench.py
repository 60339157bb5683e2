"""Docs mode, cold: seconds from ``indexfoundry mcp --docs`` to an agent's first useful answer.

Starts the real server over stdio with the official MCP SDK client on a docs folder (default:
the mkdocs 1.4.2 docs) with a new, empty runs folder, and calls ``search_docs`` at once, then
again until an answer comes from the finished build. For each it prints the seconds since the
server process was started, the mode that answered, its top page and whether the answer says the
index is still building; the first answer with a result is the figure (``first_answer_s``), the
first from the finished build is what a cold call used to wait for (``built_s``), their ratio is
the gain. ``--rounds`` repeats it (a new runs folder each); ``--warm`` also times a restart that
keeps the runs folder; ``--first-only`` stops at the first answer. The model's one-time export
(``scripts/setup.sh``) should be in place: the bench says whether it was.

    PYTHONPATH=src nice -n 10 .venv/bin/python bench/first_answer_bench.py --rounds 3
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

CORPORA = Path(__file__).resolve().parents[2] / "shared" / "corpora"
DEFAULT_DOCS = CORPORA / "markdown" / "mkdocs-1.4.2" / "docs"
QUERY = "how do I add a custom theme"


def _text(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


async def one_start(docs: Path, runs: Path, model: str, timeout: float, first_only: bool = False) -> dict[str, Any]:
    """One server start: the first answer, and the first answer of the finished build."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    env = {k: v for k, v in os.environ.items() if not k.startswith("INDEXFOUNDRY_")}
    args = ["-m", "indexfoundry", "mcp", "--docs", str(docs), "--runs-dir", str(runs), "--embedding-model", model]
    params = StdioServerParameters(command=sys.executable, args=args, env=env)
    calls: list[dict[str, Any]] = []
    progress: list[str] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(message or "")

    runs.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with (runs.parent / f"{runs.name}-stderr.log").open("a", encoding="utf-8") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            initialized = time.monotonic() - started
            while time.monotonic() - started < timeout:
                result = await session.call_tool("search_docs", {"query": QUERY}, progress_callback=on_progress)
                data = result.structured_content or {}
                hits = data.get("results") or []
                building = "still building" in _text(result)
                calls.append(
                    {
                        "at_s": round(time.monotonic() - started, 2),
                        "mode": data.get("mode"),
                        "top": hits[0]["path"] if hits else None,
                        "building": building,
                        "error": result.is_error,
                    }
                )
                if not result.is_error and (not building or (first_only and hits)):
                    break
                await asyncio.sleep(0.5)
    first = next((c["at_s"] for c in calls if c["top"] and not c["error"]), None)
    built = next((c["at_s"] for c in calls if not c["building"] and not c["error"]), None)
    return {
        "initialize_s": round(initialized, 2),
        "first_answer_s": first,
        "built_s": built,
        "progress_notifications": len(progress),
        "calls": calls,
    }


def export_cached() -> bool:
    """True when the local model's ONNX export is already in the user cache (the one-time step)."""
    from indexfoundry.backends.embedding.onnx_files import user_cache_dir

    folder = user_cache_dir() / "onnx"
    return folder.is_dir() and any(folder.glob("*.onnx"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=Path, default=DEFAULT_DOCS)
    parser.add_argument("--model", default="local")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warm", action="store_true", help="also time a restart on the kept runs folder")
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--first-only", action="store_true", help="stop at the first answer (no built_s)")
    args = parser.parse_args()
    cached = export_cached() if args.model == "local" else None
    rounds = []
    with tempfile.TemporaryDirectory(prefix="first-answer-") as tmp:
        for n in range(args.rounds):
            runs = Path(tmp) / f"runs-{n}"
            result = asyncio.run(one_start(args.docs, runs, args.model, args.timeout, args.first_only))
            print(json.dumps({"round": n, **result}), flush=True)
            rounds.append(result)
            if args.warm and n == args.rounds - 1:
                warm = asyncio.run(one_start(args.docs, runs, args.model, args.timeout))
                print(json.dumps({"warm restart": warm}), flush=True)
    firsts = [r["first_answer_s"] for r in rounds if r["first_answer_s"] is not None]
    builts = [r["built_s"] for r in rounds if r["built_s"] is not None]
    summary = {
        "docs": str(args.docs),
        "model": args.model,
        "export_cached_before": cached,
        "first_answer_s_median": statistics.median(firsts) if firsts else None,
        "built_s_median": statistics.median(builts) if builts else None,
        "ratio_first_to_built": round(statistics.median(firsts) / statistics.median(builts), 3)
        if firsts and builts
        else None,
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
    print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
