"""Local embedding throughput: the default `local` model, the fp32 `local` file and `SentenceTransformer.encode`.

All systems embed the same texts in one process, interleaved slice by slice (each slice of
``--slice`` texts by every system back to back, the order rotated), so the ratios are meaningful
on a busy machine. With ``--busy`` a second process keeps one core busy (a plain Python spin
loop) for the whole measurement.

    .venv/bin/python bench/embed_bench.py --n 300 [--rounds 2] [--busy] [--int8] [--lengths 32,64,128,256]

Texts are ~1,000-character pieces (about 256 tokens) of the corpora's markdown docs. Systems:

- ``st_encode_batch32``: ``SentenceTransformer.encode(texts, batch_size=32)`` on the packaged model;
- ``local_fp32``: the fp32 ONNX export (``INDEXFOUNDRY_LOCAL_BACKEND=onnx-fp32``; ``local`` before
  the fused int8 file), the reference the cosines are taken against;
- ``local``: the default ``local`` model file (fused kernels, row-wise int8 MatMuls);
- ``local_int8`` (``--int8``): the ``local-int8`` model, one text per run.

Reported per system: vectors/s, tokens/s (the tokens the model reads: each text's own, cut at
256, special tokens included; padding not counted), the ratio to ``encode`` (of the total
times, and the median of the per-slice ratios) and to ``local_fp32``, the lowest and highest
cosine to ``local_fp32``, and the arithmetic rate (GFLOP/s of the model's multiply-adds,
counted per text at its own length) next to an fp32 peak estimate: cores x ``cpu MHz`` x
``--flops-per-cycle`` (32: two 256-bit FMA pipes, what AVX2 and Zen 4's AVX-512 give). Also
checked: ``local``'s vectors are bit-identical when the same texts are embedded shuffled in
batches of 1, 7 and 32. ``--lengths`` adds, per system, the cost of one vector when every text
is cut to each of those token counts.
"""

from __future__ import annotations

import argparse
import json
import os
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
from indexfoundry.backends.embedding.onnx_fp32 import (
    OnnxEmbedder,
    _packaged_model_dir,
    default_threads,
    ensure_fp32_model,
    tokenizer,
)

DEFAULT_CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpora" / "markdown"

# all-MiniLM-L6-v2: 6 layers, hidden 384, feed-forward 1536.
LAYERS, HIDDEN, FFN = 6, 384, 1536


def sample_texts(corpus: Path, n: int, size: int = 1000) -> list[str]:
    texts: list[str] = []
    for path in sorted(corpus.rglob("*.md")):
        body = " ".join(path.read_text(encoding="utf-8", errors="replace").split())
        for start in range(0, len(body) - size, size):
            texts.append(body[start : start + size])
            if len(texts) == n:
                return texts
    return texts


def model_flops(lengths: list[int]) -> float:
    """Multiply-adds x 2 of the encoder for texts of these token counts (projections, feed-forward
    and the two attention products; embeddings, LayerNorm, softmax and GELU left out)."""
    total = 0.0
    for n in lengths:
        dense = 4 * HIDDEN * HIDDEN + 2 * HIDDEN * FFN
        total += 2.0 * LAYERS * n * (dense + 2 * n * HIDDEN)
    return total


def peak_gflops(flops_per_cycle: int) -> tuple[float, float]:
    """(fp32 peak GFLOP/s estimate, the MHz it used): usable cores x ``cpu MHz`` x flops/cycle."""
    mhz = 0.0
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as info:
            mhz = next(float(line.split(":")[1]) for line in info if line.startswith("cpu MHz"))
    except (OSError, StopIteration, ValueError):
        pass
    cores = len(os.sched_getaffinity(0))
    return cores * mhz * flops_per_cycle / 1000.0, mhz


def cut_to_tokens(texts: list[str], tokens: int) -> list[str]:
    """Each text cut on a token boundary so that it reads ``tokens`` tokens (special ones included)."""
    tok = tokenizer(_packaged_model_dir(), truncate=False)
    out = []
    for enc, text in zip(tok.encode_batch(texts), texts, strict=True):
        inner = enc.offsets[1:-1]
        out.append(text[: inner[min(tokens - 2, len(inner)) - 1][1]] if inner else text)
    return out


def shuffled_batches(embed: Callable[[list[str]], np.ndarray], texts: list[str], size: int, seed: int) -> list[bytes]:
    order = list(range(len(texts)))
    random.Random(seed).shuffle(order)
    out: dict[int, bytes] = {}
    for start in range(0, len(order), size):
        part = order[start : start + size]
        for index, row in zip(part, embed([texts[i] for i in part]), strict=True):
            out[index] = np.asarray(row, dtype=np.float32).tobytes()
    return [out[i] for i in range(len(texts))]


def timed_rounds(
    systems: dict[str, Callable[[list[str]], np.ndarray]], texts: list[str], rounds: int, size: int
) -> tuple[dict[str, float], dict[str, float], dict[str, np.ndarray]]:
    """Every system embeds the same slice of ``size`` texts back to back, slice after slice, the
    order rotated each time, so that load changes on a shared machine hit all systems alike.

    Returns each system's total seconds, its median per-slice speed ratio to the first system,
    and its vectors (normalised, of the first round).
    """
    names = list(systems)
    total = dict.fromkeys(names, 0.0)
    ratios: dict[str, list[float]] = {name: [] for name in names}
    parts: dict[str, list[np.ndarray]] = {name: [] for name in names}
    slices = [texts[start : start + size] for start in range(0, len(texts), size)]
    for number in range(rounds):
        for index, part in enumerate(slices):
            turn = (index + number) % len(names)
            took: dict[str, float] = {}
            for name in names[turn:] + names[:turn]:
                started = time.perf_counter()
                vectors = l2_normalize(np.asarray(systems[name](part), dtype=np.float32))
                took[name] = time.perf_counter() - started
                if number == 0:
                    parts[name].append(vectors)
            for name in names:
                total[name] += took[name]
                ratios[name].append(took[names[0]] / took[name])
    medians = {name: statistics.median(r) for name, r in ratios.items()}
    return total, medians, {name: np.concatenate(p) for name, p in parts.items()}


def build_systems(args: argparse.Namespace) -> dict[str, Callable[[list[str]], np.ndarray]]:
    model = local_st_embedder().model
    systems: dict[str, Callable[[list[str]], np.ndarray]] = {
        "st_encode_batch32": lambda ts: model.encode(ts, batch_size=args.batch_size, show_progress_bar=False),
        "local_fp32": OnnxEmbedder(ensure_fp32_model()).embed,
        "local": OnnxEmbedder().embed,
    }
    if args.int8:
        from indexfoundry.backends.embedding.onnx_int8 import Int8Embedder

        systems["local_int8"] = Int8Embedder().embed
    for embed in systems.values():
        embed(["warm up", "two texts"])
    return systems


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--n", type=int, default=300, help="number of texts")
    parser.add_argument("--rounds", type=int, default=2, help="passes over the texts")
    parser.add_argument("--slice", type=int, default=50, help="texts per interleaved slice")
    parser.add_argument("--batch-size", type=int, default=32, help="batch size of the encode baseline")
    parser.add_argument("--busy", action="store_true", help="keep one core busy with a second process")
    parser.add_argument("--int8", action="store_true", help="also measure local-int8 (one text per run)")
    parser.add_argument("--lengths", default="", help="comma-separated token counts: cost per vector at each")
    parser.add_argument("--flops-per-cycle", type=int, default=32, help="fp32 FLOP per cycle per core (peak)")
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    args = parser.parse_args()
    texts = sample_texts(args.corpus, args.n)
    if not texts:
        parser.error(f"no markdown texts under {args.corpus}")
    lengths = [len(e.ids) for e in tokenizer(_packaged_model_dir()).encode_batch(texts)]
    systems = build_systems(args)

    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if args.busy else None
    try:
        load_before = os.getloadavg()[0]
        seconds, slice_ratios, outputs = timed_rounds(systems, texts, args.rounds, args.slice)
        default = systems["local"]
        together = [v.tobytes() for v in np.asarray(default(texts), dtype=np.float32)]
        identical = all(shuffled_batches(default, texts, size, size) == together for size in (1, 7, 32))
        by_length: dict[str, dict[str, float]] = {}
        for tokens in [int(t) for t in args.lengths.split(",") if t.strip()]:
            cut = cut_to_tokens(texts, tokens)
            cut_seconds, _, _ = timed_rounds(systems, cut, 1, args.slice)
            by_length[str(tokens)] = {name: round(1000 * s / len(cut), 2) for name, s in cut_seconds.items()}
        load_after = os.getloadavg()[0]
    finally:
        if busy is not None:
            busy.kill()
            busy.wait()

    peak, mhz = peak_gflops(args.flops_per_cycle)
    flops = model_flops(lengths)
    result: dict[str, object] = {
        "texts": len(texts),
        "tokens": sum(lengths),
        "rounds": args.rounds,
        "busy_core": args.busy,
        "onnx_threads": default_threads(),
        "load_average_1min": [round(load_before, 2), round(load_after, 2)],
        "fp32_peak_gflops_estimate": round(peak, 1),
        "peak_basis": f"{len(os.sched_getaffinity(0))} cores x {mhz:.0f} MHz x {args.flops_per_cycle} FLOP/cycle",
        "slice": args.slice,
        "gflop_per_pass": round(flops / 1e9, 2),
    }
    reference = outputs["local_fp32"]
    for name in systems:
        cosine = np.sum(outputs[name] * reference, axis=1)
        result[name] = {
            "vectors_per_s": round(args.rounds * len(texts) / seconds[name], 2),
            "tokens_per_s": round(args.rounds * sum(lengths) / seconds[name]),
            "x_encode_batch32": round(seconds["st_encode_batch32"] / seconds[name], 3),
            "x_encode_batch32_median_slice": round(slice_ratios[name], 3),
            "x_local_fp32": round(seconds["local_fp32"] / seconds[name], 3),
            "gflops": round(args.rounds * flops / seconds[name] / 1e9, 1),
            "share_of_fp32_peak": round(args.rounds * flops / seconds[name] / 1e9 / peak, 3) if peak else None,
            "min_cosine_to_fp32": round(float(cosine.min()), 6),
            "max_cosine_to_fp32": round(float(cosine.max()), 6),
        }
    result["local_bit_identical_across_shuffled_batches"] = identical
    if by_length:
        result["ms_per_vector_by_tokens"] = by_length
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
