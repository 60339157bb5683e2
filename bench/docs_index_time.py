"""Full index of a docs folder as docs mode builds it (every file, ``by_heading``), in a fresh
runs folder: wall seconds, CPU seconds (this process, and the worker processes that ended
before it reports: a pool still alive is not counted), each phase's seconds (from the run
manifest) and the chunk count.

Run it once per code version, interleaved, to compare index time (A/B in one session):

    PYTHONPATH=src nice -n 10 .venv/bin/python bench/docs_index_time.py \\
        ../shared/corpora/markdown/mkdocs-1.4.2/docs /tmp/docs-index-time --embedding-model hash
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import time
from datetime import datetime
from pathlib import Path

from indexfoundry.app import runs as api
from indexfoundry.app.docs_index import docs_config


def _seconds(start: str, end: str) -> float:
    parse = lambda s: datetime.fromisoformat(s.replace("Z", "+00:00"))  # noqa: E731
    return round((parse(end) - parse(start)).total_seconds(), 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", type=Path)
    parser.add_argument("runs_dir", type=Path, help="emptied first: nothing is reused")
    parser.add_argument("--embedding-model", default="local")
    args = parser.parse_args()
    shutil.rmtree(args.runs_dir, ignore_errors=True)
    args.runs_dir.mkdir(parents=True)
    config = docs_config(args.folder.resolve(), args.runs_dir, args.embedding_model)
    started = time.monotonic()
    out = api.pipeline_run(config, runs_dir=args.runs_dir)
    wall = round(time.monotonic() - started, 2)
    manifest = json.loads((args.runs_dir / out.run_id / "manifest.json").read_text(encoding="utf-8"))
    phases = {name: _seconds(p["started_at"], p["completed_at"]) for name, p in manifest["phases"].items()}
    stats = manifest["phases"]["normalize"]["stats"]
    cpu = sum(
        getattr(resource.getrusage(who), field)
        for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
        for field in ("ru_utime", "ru_stime")
    )
    report = {"status": out.status, "wall_s": wall, "cpu_s": round(cpu, 2), "phases_s": phases}
    report["chunks"] = stats["chunks_created"]
    report["content_free_dropped"] = stats.get("content_free_dropped")
    print(json.dumps(report))


if __name__ == "__main__":
    main()
