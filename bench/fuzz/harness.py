"""Mutation fuzzing of the extractors, the markdown heading parser and the chunkers.

Hypothesis draws a seed file from ``../shared/corpora`` and a list of mutations (bit flips,
byte overwrites, inserted or deleted runs, truncation, splices of two seeds, repeated
slices); the target gets the mutated bytes. A *crash* is any exception other than the
product's own ``IndexFoundryError`` / ``Unsupported`` — the worker boundary would turn it
into a generic PARSE_ERROR, but it still marks a parser bug — and any single input that
takes longer than ``--slow`` seconds. Crashing inputs are saved under ``--out`` with their
traceback, one file per distinct (exception type, innermost frame).

Run one target for a fixed time (the process is its own sandbox: RLIMIT_AS caps memory)::

    nice -n 19 .venv/bin/python -m bench.fuzz.harness pdf --seconds 150 --out /tmp/fuzz

Targets: pdf, html, docx, csv, json, headings, chunkers.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import resource
import signal
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parents[2]
CORPORA = REPO.parent / "shared" / "corpora"

SEED_GLOBS: dict[str, list[str]] = {
    "pdf": ["pdf/**/*.pdf"],
    "html": ["html/pages/*.htm*", "html/python-3.11-docs-subset/**/*.html"],
    "docx": ["docx/**/*.docx"],
    "csv": ["csv_json/**/*.csv", "csv_json/**/*.tsv"],
    "json": ["csv_json/**/*.json", "csv_json/**/*.ndjson"],
    "headings": ["markdown/**/*.md"],
    "chunkers": ["markdown/**/*.md"],
}
MAX_SEED_BYTES = {"pdf": 400_000, "docx": 400_000}
DEFAULT_MAX_SEED = 200_000


class Slow(Exception):
    """One input ran past the per-input time limit."""


def load_seeds(target: str, limit: int = 40) -> list[bytes]:
    """Up to ``limit`` small seed files for ``target``, in sorted order (reproducible)."""
    cap = MAX_SEED_BYTES.get(target, DEFAULT_MAX_SEED)
    paths: list[Path] = []
    for pattern in SEED_GLOBS[target]:
        paths.extend(p for p in CORPORA.glob(pattern) if p.is_file() and p.stat().st_size <= cap)
    paths = sorted(set(paths))
    step = max(1, len(paths) // limit)
    seeds = [p.read_bytes() for p in paths[::step][:limit]]
    if not seeds:
        raise SystemExit(f"no seeds for {target} under {CORPORA}")
    return seeds


def mutate(data: bytes, other: bytes, ops: list[tuple[int, int, int, bytes]]) -> bytes:
    """Apply the drawn mutations to ``data`` (``other`` is a second seed for splices)."""
    buf = bytearray(data)
    for kind, a, b, blob in ops:
        n = len(buf)
        i = a % (n + 1)
        if kind == 0 and n:  # flip a bit
            buf[i % n] ^= 1 << (b % 8)
        elif kind == 1:  # overwrite with random bytes
            buf[i : i + len(blob)] = blob
        elif kind == 2:  # insert random bytes
            buf[i:i] = blob
        elif kind == 3:  # delete a run
            del buf[i : i + 1 + b % 4096]
        elif kind == 4:  # truncate
            del buf[i:]
        elif kind == 5 and other:  # splice in a slice of another seed
            j = b % len(other)
            buf[i:i] = other[j : j + 1 + b % 2048]
        elif kind == 6 and n:  # repeat a slice (nesting, long lines)
            chunk = bytes(buf[i : i + 1 + b % 64])
            buf[i:i] = chunk * (1 + b % 200)
        elif kind == 7:  # interesting tokens
            tokens = [
                b"\x00",
                b"\xff\xfe",
                b"<<",
                b">>",
                b"[",
                b"]",
                b"<!DOCTYPE x [",
                b"#",
                b"\n# ",
                b"```",
                b"\r\n",
                b'"',
                b",",
                b"{",
                b"}",
                b"\xef\xbb\xbf",
                b"obj",
                b"endobj",
                b"stream",
                b"<w:p>",
                b"<table>",
                b"|",
            ]
            buf[i:i] = tokens[b % len(tokens)] * (1 + (b >> 5) % 50)
    return bytes(buf)


def _raw(ctype: str, ext: str) -> Any:
    from indexfoundry.models.records import RawRecord

    return RawRecord(
        uri=f"fuzz/input.{ext}",
        sha256="0" * 64,
        size_bytes=0,
        content_type=ctype,
        ext=ext,
        path=f"raw/fuzz.{ext}",
        source_kind="folder",
        source_name="fuzz",
    )


def make_target(name: str) -> Callable[[bytes], None]:
    """The function one mutated input is fed to."""
    from indexfoundry.errors import IndexFoundryError
    from indexfoundry.models.config import NormalizeConfig, PipelineConfig
    from indexfoundry.phases.extract import ExtractOptions, Unsupported, extract_bytes
    from indexfoundry.phases.extract.markdown import find_headings
    from indexfoundry.phases.normalize.chunkers import chunk_spans

    config = PipelineConfig.model_validate(
        {"connect": {"sources": [{"type": "folder", "path": "."}]}, "index": {"embedding_model": "hash"}}
    )
    types = {
        "pdf": ("application/pdf", "pdf"),
        "html": ("text/html", "html"),
        "docx": ("application/vnd.openxmlformats-officedocument.wordprocessingml.document", "docx"),
        "csv": ("text/csv", "csv"),
        "json": ("application/json", "json"),
    }
    if name in types:
        raw = _raw(*types[name])

        def extract(data: bytes) -> None:
            with contextlib.suppress(IndexFoundryError, Unsupported):
                extract_bytes(data, raw, config, ExtractOptions())

        return extract
    if name == "headings":

        def headings(data: bytes) -> None:
            text = data.decode("utf-8", errors="replace")
            found = find_headings(text)
            encoded = text.encode("utf-8")
            for heading in found:
                assert 0 <= heading.byte_start < max(1, len(encoded)), heading
                assert 1 <= heading.level <= 6

        return headings
    strategies = ["recursive", "by_heading", "fixed_chars", "by_paragraph", "by_sentence", "by_page"]

    def chunkers(data: bytes) -> None:
        text = data.decode("utf-8", errors="replace")
        headings = find_headings(text)
        for index, strategy in enumerate(strategies):
            norm = NormalizeConfig(
                chunk_strategy=strategy,  # type: ignore[arg-type]
                max_chars=100 + (data[0] if data else 0) * 10 if index % 2 else 500,
                min_chars=50,
                overlap_chars=data[-1] % 100 if data else 0,
            )
            spans = chunk_spans(text, headings, norm)
            for span in spans:
                assert 0 <= span.start <= span.end <= len(text), (strategy, span)

    return chunkers


def fuzz(target: str, seconds: float, out: Path, slow: float) -> dict[str, Any]:
    """Feed ``target`` mutated seeds for ``seconds``; returns counts and the crashes saved."""
    seeds = load_seeds(target)
    run = make_target(target)
    out.mkdir(parents=True, exist_ok=True)
    crashes: dict[str, str] = {}
    stats = {"inputs": 0, "slow": 0}

    def on_alarm(signum: int, frame: Any) -> None:
        raise Slow(f"input ran longer than {slow} s")

    signal.signal(signal.SIGALRM, on_alarm)
    deadline = time.monotonic() + seconds
    op = st.tuples(st.integers(0, 7), st.integers(0, 1 << 30), st.integers(0, 1 << 16), st.binary(max_size=64))

    @settings(
        max_examples=200,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
        derandomize=False,
    )
    @given(st.integers(0, len(seeds) - 1), st.integers(0, len(seeds) - 1), st.lists(op, min_size=1, max_size=8))
    def one(i: int, j: int, ops: list[tuple[int, int, int, bytes]]) -> None:
        if time.monotonic() > deadline:
            return  # out of time: the rest of this round's examples are no-ops
        data = mutate(seeds[i], seeds[j], ops)
        stats["inputs"] += 1
        signal.setitimer(signal.ITIMER_REAL, slow)
        try:
            run(data)
        except Slow as exc:
            stats["slow"] += 1
            _save(out, target, data, exc, crashes)
        except Exception as exc:  # a crash: anything but the product's own errors
            _save(out, target, data, exc, crashes)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)

    while time.monotonic() < deadline:
        one()
    return {"target": target, "seconds": seconds, **stats, "crashes": sorted(crashes.values())}


def _save(out: Path, target: str, data: bytes, exc: BaseException, crashes: dict[str, str]) -> None:
    frames = traceback.extract_tb(exc.__traceback__)
    where = f"{frames[-1].filename}:{frames[-1].lineno}" if frames else "?"
    key = f"{type(exc).__name__}@{where}"
    if key in crashes:
        return
    digest = hashlib.sha256(data).hexdigest()[:16]
    path = out / f"{target}-{digest}.bin"
    path.write_bytes(data)
    path.with_suffix(".txt").write_text(
        key + "\n" + "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)), encoding="utf-8"
    )
    crashes[key] = f"{key} -> {path.name}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("target", choices=sorted(SEED_GLOBS))
    parser.add_argument("--seconds", type=float, default=120)
    parser.add_argument("--out", type=Path, default=Path("/tmp/indexfoundry-fuzz"))
    parser.add_argument("--slow", type=float, default=20.0, help="seconds one input may take")
    parser.add_argument("--memory-mb", type=int, default=3072, help="address-space cap of this process")
    args = parser.parse_args(argv)
    limit = args.memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    start = time.monotonic()
    result = fuzz(args.target, args.seconds, args.out, args.slow)
    result["seconds"] = round(time.monotonic() - start, 1)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
