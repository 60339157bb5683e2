"""Chunking throughput (MB/s) of every IndexFoundry strategy vs LangChain's RecursiveCharacterTextSplitter.

All run in one process on the same extracted texts (the corpora's markdown docs, front matter
removed, headings found once up front) at the same settings, so the ratios are meaningful on a
busy machine. Only chunking is timed: not reading files, not extraction, not building records.

    .venv/bin/pip install -e '.[bench]'    # langchain-text-splitters, for the baseline
    .venv/bin/python bench/chunk_bench.py [--repeat 3] [--max-chars 1500] [--overlap 150] [--limit N]

LangChain's splitter gets IndexFoundry's default separators (["\\n\\n", "\\n", ". ", " ", ""]),
the same chunk_size and chunk_overlap, and len() as the length function; its
MarkdownHeaderTextSplitter + recursive pair is timed too as the nearest equivalent of by_heading.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from indexfoundry.models.config import NormalizeConfig
from indexfoundry.models.records import Heading
from indexfoundry.phases.extract.markdown import extract_markdown
from indexfoundry.phases.normalize.chunkers import chunk_spans

DEFAULT_CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpora" / "markdown"
STRATEGIES = ["fixed_chars", "by_paragraph", "by_heading", "by_page", "by_sentence", "recursive"]


def load_docs(corpus: Path, limit: int | None) -> list[tuple[str, list[Heading]]]:
    docs: list[tuple[str, list[Heading]]] = []
    for path in sorted(corpus.rglob("*.md")):
        body, _, headings, _ = extract_markdown(path.read_text(encoding="utf-8", errors="replace"))
        docs.append((body, headings))
        if limit is not None and len(docs) == limit:
            break
    return docs


def timed(run: Callable[[], int], repeat: int) -> tuple[float, int]:
    best = float("inf")
    chunks = 0
    for _ in range(repeat):
        start = time.perf_counter()
        chunks = run()
        best = min(best, time.perf_counter() - start)
    return best, chunks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--repeat", type=int, default=3, help="runs per splitter; the fastest is reported")
    parser.add_argument("--max-chars", type=int, default=1500)
    parser.add_argument("--overlap", type=int, default=150)
    parser.add_argument("--limit", type=int, default=None, help="only the first N documents")
    parser.add_argument("--skip", nargs="*", default=[], help="strategies to leave out (by_sentence is slow)")
    args = parser.parse_args()

    docs = load_docs(args.corpus, args.limit)
    megabytes = sum(len(text.encode("utf-8")) for text, _ in docs) / 1e6
    rows: list[dict[str, Any]] = []

    for strategy in STRATEGIES:
        if strategy in args.skip:
            continue
        config = NormalizeConfig.model_validate(
            {"chunk_strategy": strategy, "max_chars": args.max_chars, "overlap_chars": args.overlap}
        )

        def run(config: NormalizeConfig = config) -> int:
            return sum(len(chunk_spans(text, headings, config)) for text, headings in docs)

        seconds, chunks = timed(run, args.repeat)
        rows.append({"splitter": f"indexfoundry {strategy}", "seconds": seconds, "chunks": chunks})

    try:
        from langchain_text_splitters import MarkdownHeaderTextSplitter, RecursiveCharacterTextSplitter
    except ImportError:
        print("langchain-text-splitters is not installed: pip install -e '.[bench]' for the baseline")
    else:
        splitter = RecursiveCharacterTextSplitter(
            separators=["\n\n", "\n", ". ", " ", ""],
            chunk_size=args.max_chars,
            chunk_overlap=args.overlap,
            length_function=len,
            add_start_index=False,
        )
        seconds, chunks = timed(lambda: sum(len(splitter.split_text(text)) for text, _ in docs), args.repeat)
        rows.append({"splitter": "langchain RecursiveCharacterTextSplitter", "seconds": seconds, "chunks": chunks})
        headers = MarkdownHeaderTextSplitter(
            headers_to_split_on=[("#", "h1"), ("##", "h2"), ("###", "h3"), ("####", "h4")], strip_headers=False
        )

        def markdown_then_recursive() -> int:
            return sum(len(splitter.split_documents(headers.split_text(text))) for text, _ in docs)

        seconds, chunks = timed(markdown_then_recursive, args.repeat)
        rows.append({"splitter": "langchain MarkdownHeader + Recursive", "seconds": seconds, "chunks": chunks})

    print(
        f"{len(docs)} documents, {megabytes:.2f} MB, max_chars={args.max_chars}, overlap={args.overlap}, "
        f"best of {args.repeat}"
    )
    print(f"{'splitter':45} {'MB/s':>8} {'seconds':>8} {'chunks':>7}")
    for row in rows:
        row["mb_per_s"] = round(megabytes / row["seconds"], 2) if row["seconds"] else None
        print(f"{row['splitter']:45} {row['mb_per_s']:>8} {row['seconds']:>8.3f} {row['chunks']:>7}")
    print(json.dumps({"documents": len(docs), "megabytes": round(megabytes, 3), "rows": rows}))


if __name__ == "__main__":
    main()
