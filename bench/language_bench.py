"""Language detection of a run's chunks: seconds and samples detected (lingua, the normalize
phase's ``detect_grouped_languages`` without a work cache, in one process).

    .venv/bin/python bench/language_bench.py [--markdown ../shared/corpora/markdown]
        [--scifact ../shared/corpora/benchmark/scifact/corpus.jsonl] [--records 1500] [--json]

The texts stand in for chunks: every markdown file of the corpus cut into pieces of 1,500
characters (a document of several chunks), and the first ``--records`` SciFact abstracts cut into
pieces of 700 characters. Each piece's group is its file or record, as a chunk's is its document.
Prints the seconds of the detection (the detector built and warmed before the clock starts), the
number of samples lingua was asked about, and a hash of the languages found, so that two source
trees can be compared (``PYTHONPATH=TREE/src``): the same hash means the same languages.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

from indexfoundry.phases.normalize import language

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.unit.phases.normalize.test_language import CountingDetector  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / "shared" / "corpora"


def _pieces(markdown: Path, scifact: Path, records: int) -> tuple[list[str], list[str]]:
    texts: list[str] = []
    groups: list[str] = []
    for path in sorted(markdown.rglob("*.md")):
        text = path.read_text(encoding="utf-8")
        for start in range(0, len(text), 1500):
            texts.append(text[start : start + 1500])
            groups.append(str(path))
    with scifact.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle):
            if number >= records:
                break
            record = json.loads(line)
            for start in range(0, len(record["text"]), 700):
                texts.append(record["text"][start : start + 700])
                groups.append(record["_id"])
    return texts, groups


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--markdown", type=Path, default=SHARED / "markdown")
    parser.add_argument("--scifact", type=Path, default=SHARED / "benchmark" / "scifact" / "corpus.jsonl")
    parser.add_argument("--records", type=int, default=1500)
    parser.add_argument("--json", action="store_true", help="print JSON only")
    args = parser.parse_args()
    texts, groups = _pieces(args.markdown, args.scifact, args.records)
    counting = CountingDetector(language._detector())
    counting.real.detect_language_of("The language models are loaded by a first detection.")
    language._detector = lambda: counting  # type: ignore[assignment]
    started = time.perf_counter()
    found = language.detect_grouped_languages(texts, groups, None)
    seconds = time.perf_counter() - started
    out = {
        "texts": len(texts),
        "groups": len(set(groups)),
        "samples_detected": counting.samples,
        "seconds": round(seconds, 2),
        "languages_sha256": hashlib.sha256(json.dumps(found).encode()).hexdigest()[:16],
    }
    print(json.dumps(out) if args.json else "\n".join(f"{key}: {value}" for key, value in out.items()))


if __name__ == "__main__":
    main()
