"""Local embedding throughput: IndexFoundry's `local` embedder vs plain SentenceTransformer.encode.

Both embed the same texts in the same process run, so the ratio is meaningful on a busy machine.

    .venv/bin/python bench/embed_bench.py --n 300 [--corpus ../shared/corpora/markdown]

Texts are ~1,000-character pieces (about 256 tokens) of the corpora's markdown docs.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from indexfoundry.backends.embedding.providers import local_embedder

DEFAULT_CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpora" / "markdown"


def sample_texts(corpus: Path, n: int, size: int = 1000) -> list[str]:
    texts: list[str] = []
    for path in sorted(corpus.rglob("*.md")):
        body = " ".join(path.read_text(encoding="utf-8", errors="replace").split())
        for start in range(0, len(body) - size, size):
            texts.append(body[start : start + size])
            if len(texts) == n:
                return texts
    return texts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=300, help="number of texts")
    parser.add_argument("--batch-size", type=int, default=32, help="batch size for the plain encode baseline")
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    args = parser.parse_args()
    texts = sample_texts(args.corpus, args.n)
    ours = local_embedder()
    ours.embed(texts[:2])  # load and warm up
    model = ours.model

    started = time.perf_counter()
    baseline = model.encode(texts, batch_size=args.batch_size, normalize_embeddings=True, show_progress_bar=False)
    baseline_s = time.perf_counter() - started

    started = time.perf_counter()
    vectors = ours.embed(texts)
    ours_s = time.perf_counter() - started

    cosine = np.sum(vectors * baseline, axis=1)
    result = {
        "texts": len(texts),
        "baseline_encode_batch": args.batch_size,
        "baseline_chunks_per_s": round(len(texts) / baseline_s, 2),
        "indexfoundry_local_chunks_per_s": round(len(texts) / ours_s, 2),
        "ratio_indexfoundry_over_baseline": round(baseline_s / ours_s, 3),
        "min_cosine_to_baseline": round(float(cosine.min()), 6),
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
