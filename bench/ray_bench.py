"""Ray executor: overhead of a 2-worker local cluster vs the local executor, and chunks/s of the
index phase with 1 and 2 embedding workers, as ratios within one run.

    nice -n 15 .venv/bin/python bench/ray_bench.py [--corpus ../shared/corpora/markdown]
        [--limit 12] [--models hash,local] [--json]

Starts the same cluster as the tests (``tests/integration/ray_support.py``: a head node and a
worker node of 1 CPU each, inside a network namespace with only loopback up; needs root and
``ip``), then for each model runs the same config, each time into a fresh runs folder (empty
embedding cache), as separate ``indexfoundry pipeline run`` processes inside the namespace:

- ``local``: the local executor;
- ``ray-2``: the Ray executor, 2 embedding actors;
- ``ray-1``: the Ray executor, 1 embedding actor.

It reports wall time per run (process start included), the index phase's time and its
chunks/s, and the ratios to the local run. Artifacts of every run are compared to the local
run's: a mismatch is reported (and fails the benchmark).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.determinism.test_byte_identical import content_files  # noqa: E402
from tests.integration.ray_support import RayCluster, ray_cluster  # noqa: E402

DEFAULT_CORPUS = REPO.parent / "shared" / "corpora" / "markdown"


def _copy(corpus: Path, target: Path, limit: int) -> int:
    files = sorted(corpus.rglob("*.md"))[:limit]
    for path in files:
        dest = target / path.relative_to(corpus)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, dest)
    return len(files)


def _run(cluster: RayCluster, config: Path, runs: Path, extra: list[str]) -> dict[str, Any]:
    args = [sys.executable, "-m", "indexfoundry", "pipeline", "run", str(config), "--runs-dir", str(runs), "--json"]
    started = time.perf_counter()
    done = cluster.run(args + extra, timeout=7200)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"run failed: {done.stderr[-3000:]}")
    out = json.loads(done.stdout)
    manifest = json.loads((runs / out["run_id"] / "manifest.json").read_text())
    index_ms = manifest["phases"]["index"]["duration_ms"]
    chunks = out["summary"]["chunks_indexed"]
    return {
        "wall_s": round(wall, 2),
        "index_s": round(index_ms / 1000, 2),
        "chunks": chunks,
        "index_chunks_per_s": round(chunks / (index_ms / 1000), 2) if index_ms else None,
        "phases_s": {name: round(p["duration_ms"] / 1000, 2) for name, p in manifest["phases"].items()},
        "run": runs / out["run_id"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--limit", type=int, default=12, help="markdown files taken from the corpus")
    parser.add_argument("--models", default="hash,local")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ray-bench-"))
    report: dict[str, Any] = {"corpus": str(args.corpus), "files": _copy(args.corpus, work / "docs", args.limit)}
    try:
        with ray_cluster() as cluster:
            for model in args.models.split(","):
                config = {
                    "connect": {"sources": [{"type": "folder", "path": str(work / "docs"), "glob": "**/*.md"}]},
                    "normalize": {"chunk_strategy": "by_heading"},
                    "index": {"embedding_model": model, "batch_size": 16},
                }
                results: dict[str, Any] = {}
                for name, workers in (("local", None), ("ray-2", 2), ("ray-1", 1)):
                    cfg = dict(config)
                    if workers is not None:
                        cfg["execution"] = {"engine": "ray", "address": cluster.address, "embed_workers": workers}
                    path = work / f"{model}-{name}.yaml"
                    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
                    results[name] = _run(cluster, path, work / f"runs-{model}-{name}", [])
                    shown = {k: v for k, v in results[name].items() if k != "run"}
                    print(f"{model} {name}: {json.dumps(shown)}", file=sys.stderr, flush=True)  # kept if cut short
                local = results["local"]
                expected = content_files(local["run"])
                for name, result in results.items():
                    result["identical_to_local"] = content_files(result.pop("run")) == expected
                    if name != "local":
                        result["wall_vs_local"] = round(result["wall_s"] / local["wall_s"], 3)
                        result["index_vs_local"] = round(result["index_s"] / local["index_s"], 3)
                results["ray-2"]["speedup_2_vs_1_workers"] = round(
                    results["ray-1"]["index_s"] / results["ray-2"]["index_s"], 3
                )
                report[model] = results
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if args.json:
        print(json.dumps(report, indent=2, default=str))
    else:
        for model in args.models.split(","):
            print(f"model {model}: {report['files']} files")
            for name, r in report[model].items():
                print(f"  {name:<6} {json.dumps(r, default=str)}")
    if not all(r["identical_to_local"] for m in args.models.split(",") for r in report[m].values()):
        raise SystemExit("a Ray run's artifacts differ from the local run's")


if __name__ == "__main__":
    main()
