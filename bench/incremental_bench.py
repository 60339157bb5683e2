"""Incremental runs: full run vs no-change rerun vs one-file-edit rerun (``--base``), as ratios.

    nice .venv/bin/python bench/incremental_bench.py [--corpus ../shared/corpora/markdown]
        [--model local|hash] [--limit N] [--json]

The corpus is copied to a temporary folder (the edit must not touch the shared corpora) and
indexed into a fresh runs folder, so the full run starts with an empty embedding cache.
The three runs happen in one process with the default `local` model (all-MiniLM-L6-v2),
which is loaded once before timing starts. Each rerun is a new run with ``--base`` the
previous one; the report gives wall times, ratios to the full run, and reused/new per phase.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from indexfoundry import api
from indexfoundry.models.manifests import PipelineRunOutput

DEFAULT_CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpora" / "markdown"


def _copy_corpus(corpus: Path, target: Path, limit: int | None) -> list[Path]:
    files = sorted(corpus.rglob("*.md"))[:limit] if limit else sorted(corpus.rglob("*.md"))
    for path in files:
        dest = target / path.relative_to(corpus)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, dest)
    return [target / p.relative_to(corpus) for p in files]


def _timed(config: dict[str, Any], runs: Path, base: str | None) -> tuple[float, PipelineRunOutput]:
    started = time.perf_counter()
    out = api.pipeline_run(config, runs_dir=runs, base=base)
    return time.perf_counter() - started, out


def _phases(out: PipelineRunOutput) -> dict[str, dict[str, Any]]:
    return {
        name: {"status": p.status, "seconds": round(p.duration_ms / 1000, 3), "reused": p.reused, "new": p.new}
        for name, p in out.phases.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--model", default="local", help="embedding model: local (default) or hash")
    parser.add_argument("--limit", type=int, default=None, help="only the first N markdown files")
    parser.add_argument("--json", action="store_true", help="print JSON only")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="if-incr-bench-") as tmp:
        root = Path(tmp)
        files = _copy_corpus(args.corpus, root / "corpus", args.limit)
        config: dict[str, Any] = {
            "connect": {"sources": [{"type": "folder", "path": str(root / "corpus"), "glob": "**/*.md"}]},
            "index": {"embedding_model": args.model},
        }
        if args.model == "local":
            from indexfoundry.backends.embedding.local import local_embedder

            local_embedder().embed(["warm up"])  # load the model before timing
        runs = root / "runs"
        full_s, full = _timed(config, runs, None)
        same_s, same = _timed(config, runs, full.run_id)
        edited = files[len(files) // 2]
        with edited.open("a", encoding="utf-8") as handle:
            handle.write("\n\n## Benchmark edit\n\nOne new paragraph added by the incremental benchmark.\n")
        edit_s, edit = _timed(config, runs, same.run_id)
        diff = api.diff(same.run_id, edit.run_id, runs_dir=runs, include_chunks=True)
        result = {
            "corpus": str(args.corpus),
            "files": len(files),
            "model": args.model,
            "chunks": full.summary.chunks_indexed,
            "full_run_s": round(full_s, 3),
            "no_change_rerun_s": round(same_s, 3),
            "one_file_edit_rerun_s": round(edit_s, 3),
            "ratio_no_change_over_full": round(same_s / full_s, 4),
            "ratio_one_edit_over_full": round(edit_s / full_s, 4),
            "edited_file": str(edited.relative_to(root / "corpus")),
            "edit_chunks": diff.chunk_summary.model_dump() if diff.chunk_summary else None,
            "phases": {"full": _phases(full), "no_change": _phases(same), "one_edit": _phases(edit)},
        }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(json.dumps({k: v for k, v in result.items() if k != "phases"}, indent=2))
    for label, phases in result["phases"].items():  # type: ignore[union-attr]
        print(f"{label}:")
        for name, p in phases.items():
            print(f"  {name:<10} {p['status']:<10} {p['seconds']:>8.3f}s  reused {p['reused']:>6}  new {p['new']:>6}")


if __name__ == "__main__":
    main()
