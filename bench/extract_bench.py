"""PDF extraction throughput: pages per second, serial (in-process) vs parallel worker processes.

Both runs extract the same pages of the corpora's born-digital PDFs with the same config, and
the outputs are compared (they must be identical). The worker pool is warmed up first, so
the fork server's one-time start is not counted.

    .venv/bin/python bench/extract_bench.py --max-pages 8 --workers 2 [--mode layout]

Keep --max-pages small on a shared machine: pdfminer's layout analysis costs ~0.1-1 s a page.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from indexfoundry.models.config import PipelineConfig
from indexfoundry.models.records import RawRecord
from indexfoundry.phases.connect.sniff import sniff_content_type
from indexfoundry.phases.extract import ExtractOptions
from indexfoundry.phases.extract.workers import ExtractJob, ExtractResult, default_workers, run_jobs
from indexfoundry.storage.hashing import sha256_bytes

DEFAULT_CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpora" / "pdf"
FOLDERS = ("multicolumn", "cjk", "large")


def make_jobs(corpus: Path, config: PipelineConfig, max_pages: int) -> list[ExtractJob]:
    jobs: list[ExtractJob] = []
    for folder in FOLDERS:
        for path in sorted((corpus / folder).glob("*.pdf")):
            data = path.read_bytes()
            raw = RawRecord(
                uri=f"{folder}/{path.name}",
                sha256=sha256_bytes(data),
                size_bytes=len(data),
                content_type=sniff_content_type(path.name, data[:4096]),
                ext="pdf",
                path=str(path),
                source_kind="folder",
                source_name="pdf",
            )
            options = ExtractOptions(page_range=(1, max_pages))
            jobs.append(ExtractJob(len(jobs), str(path), raw, config, options))
    return jobs


def pages_of(results: dict[int, ExtractResult]) -> int:
    return sum(len(item.pages or []) for result in results.values() for item in result.items)


def texts_of(results: dict[int, ExtractResult]) -> list[str]:
    return [item.text for key in sorted(results) for item in results[key].items]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="the corpora's pdf/ folder")
    parser.add_argument("--max-pages", type=int, default=8, help="pages extracted from each PDF")
    parser.add_argument("--workers", type=int, default=default_workers(), help="worker processes")
    parser.add_argument("--mode", choices=("layout", "plain"), default="layout")
    args = parser.parse_args()
    config = PipelineConfig.model_validate(
        {
            "connect": {"sources": [{"type": "folder", "path": str(args.corpus)}]},
            "extract": {"pdf_mode": args.mode, "ocr_fallback": False, "timeout_s": 3600},
        }
    )
    jobs = make_jobs(args.corpus, config, args.max_pages)
    limits = (config.extract.timeout_s, config.extract.memory_mb)
    run_jobs(jobs[:1], 1, *limits)  # warm-up: start the fork server

    start = time.perf_counter()
    serial = run_jobs(jobs, 0, *limits)
    serial_s = time.perf_counter() - start

    start = time.perf_counter()
    parallel = run_jobs(jobs, args.workers, *limits)
    parallel_s = time.perf_counter() - start

    pages = pages_of(serial)
    report = {
        "pdfs": len(jobs),
        "pages": pages,
        "mode": args.mode,
        "workers": args.workers,
        "serial_s": round(serial_s, 2),
        "parallel_s": round(parallel_s, 2),
        "serial_pages_per_s": round(pages / serial_s, 2),
        "parallel_pages_per_s": round(pages_of(parallel) / parallel_s, 2),
        "speedup": round(serial_s / parallel_s, 2),
        "identical_output": texts_of(serial) == texts_of(parallel),
        "errors": sorted(f"{jobs[k].raw.uri}: {r.error.code}" for k, r in serial.items() if r.error is not None),
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
