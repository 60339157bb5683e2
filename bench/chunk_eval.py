"""Keyword-mode (BM25) retrieval quality of chunking settings on a BEIR folder (default: SciFact).

Each setting indexes the corpus through the normal pipeline (one document per record, the hash
embedder: semantic numbers would be meaningless, so only keyword mode is scored) and evaluates
nDCG@10 / recall@100 / MRR@10 with ``indexfoundry.app.eval``. A document's rank is its
best chunk's rank.

    .venv/bin/python bench/chunk_eval.py recursive:1500:150 fixed_chars:1500:150 by_paragraph:1500:0 \
        [--beir ../shared/corpora/benchmark/scifact] [--runs-dir /tmp/chunk-eval-runs]

Each spec is STRATEGY:MAX_CHARS:OVERLAP_CHARS. One setting takes 1-6 minutes on a busy 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from indexfoundry import api
from indexfoundry.app.eval import beir_pipeline_config, evaluate

DEFAULT_BEIR = Path(__file__).resolve().parents[2] / "shared" / "corpora" / "benchmark" / "scifact"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("specs", nargs="+", help="STRATEGY:MAX_CHARS:OVERLAP_CHARS")
    parser.add_argument("--beir", type=Path, default=DEFAULT_BEIR)
    parser.add_argument("--runs-dir", type=Path, default=Path("/tmp/chunk-eval-runs"))
    args = parser.parse_args()
    args.runs_dir.mkdir(parents=True, exist_ok=True)
    for spec in args.specs:
        strategy, max_chars, overlap = spec.split(":")
        config = beir_pipeline_config(args.beir, "hash")
        config.pop("run_id")
        config["normalize"].update(
            {"chunk_strategy": strategy, "max_chars": int(max_chars), "overlap_chars": int(overlap)}
        )
        start = time.perf_counter()
        out = api.pipeline_run(config, runs_dir=args.runs_dir)
        built = time.perf_counter() - start
        result = evaluate(
            beir_dir=None,
            split="test",
            run_id=out.run_id,
            queries=args.beir / "queries.jsonl",
            qrels=args.beir / "qrels" / "test.tsv",
            mode="keyword",
            runs_dir=args.runs_dir,
        )
        row = {"spec": spec, "chunks": out.summary.chunks_indexed, "build_s": round(built, 1), **result.to_json()}
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
