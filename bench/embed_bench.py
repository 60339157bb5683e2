"""Local embedding throughput: `local` (ONNX Runtime fp32) and `local-int8` vs SentenceTransformer.encode.

All systems embed the same texts in one process, interleaved round by round, so the ratios are
meaningful on a busy machine. With ``--busy`` a second process keeps one core busy (a plain
Python spin loop) for the whole measurement.

    .venv/bin/python bench/embed_bench.py --n 300 [--rounds 2] [--busy] [--corpus ../shared/corpora/markdown]

Texts are ~1,000-character pieces (about 256 tokens) of the corpora's markdown docs. The
baseline is ``SentenceTransformer.encode(texts, batch_size=32)`` on the same packaged model.
Also checked: ``local``'s vectors are bit-identical when the same texts are embedded shuffled in
batches of 1, 7 and 32.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from indexfoundry.backends.embedding.base import l2_normalize
from indexfoundry.backends.embedding.local import local_st_embedder
from indexfoundry.backends.embedding.onnx_fp32 import OnnxEmbedder, default_threads

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


def shuffled_batches(embed: Callable[[list[str]], np.ndarray], texts: list[str], size: int, seed: int) -> list[bytes]:
    order = list(range(len(texts)))
    random.Random(seed).shuffle(order)
    out: dict[int, bytes] = {}
    for start in range(0, len(order), size):
        part = order[start : start + size]
        for index, row in zip(part, embed([texts[i] for i in part]), strict=True):
            out[index] = np.asarray(row, dtype=np.float32).tobytes()
    return [out[i] for i in range(len(texts))]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--n", type=int, default=300, help="number of texts")
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds (median reported)")
    parser.add_argument("--batch-size", type=int, default=32, help="batch size of the encode baseline")
    parser.add_argument("--busy", action="store_true", help="keep one core busy with a second process")
    parser.add_argument("--no-int8", action="store_true", help="skip local-int8")
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    args = parser.parse_args()
    texts = sample_texts(args.corpus, args.n)

    st = local_st_embedder()
    model = st.model
    onnx = OnnxEmbedder()
    systems: dict[str, Callable[[list[str]], np.ndarray]] = {
        "st_encode_batch32": lambda ts: model.encode(ts, batch_size=args.batch_size, show_progress_bar=False),
        "local_onnx": onnx.embed,
    }
    if not args.no_int8:
        from indexfoundry.backends.embedding.onnx_int8 import Int8Embedder

        systems["local_int8"] = Int8Embedder().embed
    for embed in systems.values():
        embed(texts[:4])  # load and warm up

    busy = None
    if args.busy:
        busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        seconds: dict[str, list[float]] = {name: [] for name in systems}
        outputs: dict[str, np.ndarray] = {}
        for _ in range(args.rounds):
            for name, embed in systems.items():
                started = time.perf_counter()
                outputs[name] = np.asarray(embed(texts), dtype=np.float32)
                seconds[name].append(time.perf_counter() - started)
        together = [v.tobytes() for v in outputs["local_onnx"]]
        identical = all(shuffled_batches(onnx.embed, texts, size, size) == together for size in (1, 7, 32))
    finally:
        if busy is not None:
            busy.kill()
            busy.wait()

    base = statistics.median(seconds["st_encode_batch32"])
    baseline = l2_normalize(outputs["st_encode_batch32"])
    result: dict[str, object] = {
        "texts": len(texts),
        "rounds": args.rounds,
        "busy_core": args.busy,
        "onnx_threads": default_threads(),
    }
    for name in systems:
        median = statistics.median(seconds[name])
        result[f"{name}_chunks_per_s"] = round(len(texts) / median, 2)
        result[f"{name}_speedup_vs_st"] = round(base / median, 3)
        cosine = np.sum(l2_normalize(outputs[name]) * baseline, axis=1)
        result[f"{name}_min_cosine_to_st"] = round(float(cosine.min()), 6)
    result["local_onnx_bit_identical_across_shuffled_batches"] = identical
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
