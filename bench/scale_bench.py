"""Small changes at any corpus size: full run, no-change rerun and one-file edit at N files.

    nice .venv/bin/python bench/scale_bench.py --sizes 1000 10000 50000 [--model hash] [--json]
        [--corpus ../shared/corpora/benchmark/scifact/corpus.jsonl] [--profile-edit FILE]

For each size N a corpus of N markdown files is written from real abstracts (SciFact's corpus:
``# <title>`` then the abstract; past its 5,183 records the texts repeat with a numbered
heading, so every file is distinct) into a fresh folder and runs folder. Each step is one
``indexfoundry pipeline run`` process, timed as a whole (start-up included, as a user or a cron
job sees it), with the per-phase seconds of its manifest:

- ``full``: the first run (empty embedding cache);
- ``no_change``: ``--base`` the full run, nothing changed;
- ``edit_in_place``: one file edited, then ``--run-id`` the no-change run (a rerun in place);
- ``edit_base``: the same file edited again, then ``--base`` the previous run;
- ``edit_plain``: the same file edited again, then a plain ``pipeline run`` (a nightly run
  without ``--base``: it follows the ``latest`` it replaces);
- ``no_change_plain``: a plain ``pipeline run`` again, nothing changed.

The default embedder is ``hash`` so that embedding is not the cost being measured; the store is
the default embedded Chroma. ``--profile-edit FILE`` also runs the in-place edit once more
under cProfile (in this process) and writes the stats to FILE. The curve printed at the end is
seconds per step against N: an edit that costs what the change costs stays flat.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DEFAULT_CORPUS = REPO.parent / "shared" / "corpora" / "benchmark" / "scifact" / "corpus.jsonl"
CLI = [sys.executable, "-m", "indexfoundry"]


def _records(corpus: Path) -> list[tuple[str, str]]:
    rows = []
    with corpus.open(encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            rows.append((" ".join(record["title"].split()) or record["_id"], record["text"].strip()))
    return rows


def write_corpus(folder: Path, size: int, records: list[tuple[str, str]]) -> list[Path]:
    """``size`` markdown files in folders of 500, each a distinct real abstract."""
    paths = []
    for index in range(size):
        title, text = records[index % len(records)]
        copy = index // len(records)
        heading = title if copy == 0 else f"{title} ({copy + 1})"
        path = folder / f"part-{index // 500:04d}" / f"doc-{index:06d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# {heading}\n\n{text}\n", encoding="utf-8")
        paths.append(path)
    return paths


def _run(config: Path, runs: Path, *extra: str) -> tuple[float, dict[str, Any]]:
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    started = time.perf_counter()
    proc = subprocess.run(
        [*CLI, "pipeline", "run", str(config), "--runs-dir", str(runs), "--json", *extra],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    seconds = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"pipeline run failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return seconds, json.loads(proc.stdout)


def _phases(out: dict[str, Any]) -> dict[str, float]:
    return {name: round(p["duration_ms"] / 1000, 2) for name, p in out["phases"].items()}


def _edit(path: Path, round_: int) -> None:
    with path.open("a", encoding="utf-8") as handle:
        handle.write(f"\n\n## Edit {round_}\n\nOne new paragraph added by the scale benchmark, round {round_}.\n")


def measure(size: int, records: list[tuple[str, str]], model: str, root: Path, profile: Path | None) -> dict[str, Any]:
    files = write_corpus(root / "corpus", size, records)
    config = root / "config.json"
    config.write_text(
        json.dumps(
            {
                "connect": {"sources": [{"type": "folder", "path": str(root / "corpus"), "glob": "**/*.md"}]},
                "index": {"embedding_model": model},
            }
        ),
        encoding="utf-8",
    )
    runs = root / "runs"
    result: dict[str, Any] = {"files": size, "model": model}
    full_s, full = _run(config, runs)
    same_s, same = _run(config, runs, "--base", full["run_id"])
    edited = files[size // 2]
    _edit(edited, 1)
    place_s, place = _run(config, runs, "--run-id", same["run_id"])
    _edit(edited, 2)
    base_s, base = _run(config, runs, "--base", place["run_id"])
    _edit(edited, 3)
    plain_s, plain = _run(config, runs)
    again_s, again = _run(config, runs)
    result["chunks"] = full["summary"]["chunks_indexed"]
    for step, seconds, out in (
        ("full", full_s, full),
        ("no_change", same_s, same),
        ("edit_in_place", place_s, place),
        ("edit_base", base_s, base),
        ("edit_plain", plain_s, plain),
        ("no_change_plain", again_s, again),
    ):
        result[f"{step}_s"] = round(seconds, 2)
        result[f"{step}_phases"] = _phases(out)
    if profile is not None:
        result["profile"] = str(_profile_edit(config, runs, edited, base["run_id"], profile))
    return result


def _profile_edit(config: Path, runs: Path, edited: Path, run_id: str, out: Path) -> Path:
    import cProfile

    from indexfoundry import api

    _edit(edited, 4)
    profiler = cProfile.Profile()
    profiler.enable()
    api.pipeline_run(str(config), runs_dir=runs, run_id=run_id)
    profiler.disable()
    profiler.dump_stats(str(out))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 50000])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="a BEIR corpus.jsonl of real texts")
    parser.add_argument("--model", default="hash", help="embedding model (default hash: embedding is not measured)")
    parser.add_argument("--profile-edit", type=Path, default=None, help="cProfile one more in-place edit into FILE")
    parser.add_argument("--json", action="store_true", help="print JSON only")
    args = parser.parse_args()
    if not args.corpus.is_file():
        raise SystemExit(f"no corpus at {args.corpus} (pass --corpus PATH to a BEIR corpus.jsonl)")
    records = _records(args.corpus)
    results = []
    for size in args.sizes:
        with tempfile.TemporaryDirectory(prefix=f"if-scale-{size}-") as tmp:
            profile = None
            if args.profile_edit is not None:
                profile = args.profile_edit.with_name(f"{args.profile_edit.stem}-{size}{args.profile_edit.suffix}")
            results.append(measure(size, records, args.model, Path(tmp), profile))
        if not args.json:
            print(json.dumps(results[-1]), flush=True)
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(
        f"\n{'files':>8} {'chunks':>8} {'full':>8} {'no-change':>10} {'edit in place':>14} {'edit --base':>12}"
        f" {'edit plain':>11} {'no-change plain':>16}"
    )
    for r in results:
        print(
            f"{r['files']:>8} {r['chunks']:>8} {r['full_s']:>7.1f}s {r['no_change_s']:>9.1f}s "
            f"{r['edit_in_place_s']:>13.1f}s {r['edit_base_s']:>11.1f}s {r['edit_plain_s']:>10.1f}s"
            f" {r['no_change_plain_s']:>15.1f}s"
        )


if __name__ == "__main__":
    main()
