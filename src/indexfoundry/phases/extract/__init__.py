"""Phase 2, extract: turn each raw file into text (markdown where structure exists).

Reads ``raw/raw_manifest.jsonl``; writes ``extracted/<key>.txt``, ``<key>.pages.jsonl`` for
paged formats, ``documents.jsonl`` (one ``ExtractedDocument`` per document, sorted) and
``extraction_report.json``.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from indexfoundry.errors import EmptyContent
from indexfoundry.models.artifacts import ExtractionReport
from indexfoundry.models.config import PipelineConfig
from indexfoundry.models.records import DocFormat, ExtractedDocument, Heading, PageExtraction, RawRecord
from indexfoundry.phases.base import (
    LazyItems,
    Phase,
    PhaseContext,
    PhaseOutcome,
    package_version,
    upstream_artifact_hashes,
)
from indexfoundry.phases.executor import Executor
from indexfoundry.phases.extract.reuse import Document, ExtractReuse, TakenDocument
from indexfoundry.storage.artifacts import write_artifact
from indexfoundry.storage.atomic import (
    atomic_write_bytes,
    atomic_write_jsonl,
    atomic_write_text,
    iter_jsonl,
    jsonl_line,
    sync_filesystem,
)
from indexfoundry.storage.hashing import doc_id_for, sha256_text
from indexfoundry.storage.layout import RunLayout


@dataclass
class ExtractedText:
    """What an extractor returns for one document."""

    text: str
    format: DocFormat
    title: str | None = None
    headings: list[Heading] | None = None  # None: find markdown headings in ``text``
    metadata: dict[str, Any] = field(default_factory=dict)
    pages: list[PageExtraction] | None = None
    record_id: str | None = None
    warnings: list[str] = field(default_factory=list)
    # Extractor figures for extraction_report.json (pages processed/empty/OCR, mode used...).
    stats: dict[str, Any] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        """No text at all (an EMPTY_CONTENT document)."""
        return not self.text.strip()


FormatHint = Literal["auto", "markdown", "docx", "txt", "csv", "json", "html", "pdf"]


@dataclass(frozen=True)
class ExtractOptions:
    """Per-call options beyond the pipeline config: tool arguments and secrets read by the caller.

    Secrets are read from the environment by the caller (the phase or a tool), never by the
    extractor, so a worker process sees exactly what the parent saw.
    """

    page_range: tuple[int, int] | None = None  # PDF pages, 1-based inclusive
    format_hint: FormatHint = "auto"
    pdf_password: str | None = None

    @classmethod
    def from_config(cls, config: PipelineConfig) -> ExtractOptions:
        """Options of a pipeline run: the PDF password from ``extract.pdf_password_env``."""
        env = config.extract.pdf_password_env
        return cls(pdf_password=os.environ.get(env) if env else None)


class Unsupported(Exception):
    """The file's type has no extractor; it is skipped with a warning, not an error."""


def extract_bytes(
    data: bytes, raw: RawRecord, config: PipelineConfig, options: ExtractOptions | None = None
) -> list[ExtractedText]:
    """Extract one raw file (pure function: safe to run in a worker process)."""
    from indexfoundry.phases.extract.dispatch import extract_by_type
    from indexfoundry.phases.extract.markdown import find_headings

    items = extract_by_type(data, raw, config, options or ExtractOptions())
    for item in items:
        # Here, in the worker and under its limits, not later in the phase's own process:
        # finding the headings of a 50 MB HTML page's markdown is work on hostile input too.
        if item.headings is None:
            item.headings = find_headings(item.text)
    return items


def _text_key(raw: RawRecord, item: ExtractedText) -> str:
    if item.record_id is None:
        return raw.sha256
    return f"{raw.sha256}.{sha256_text(item.record_id)[:16]}"


class ExtractPhase(Phase):
    name = "extract"
    version = "2"
    same_output_for_same_fingerprint = True

    def config_slice(self, config: PipelineConfig) -> Any:
        # The number of workers changes how fast, never what is extracted.
        return config.extract.model_dump(mode="json", exclude={"workers"})

    def tool_versions(self) -> dict[str, str]:
        from indexfoundry.phases.extract.ocr import tesseract_version

        return {
            **super().tool_versions(),
            "mistune": package_version("mistune"),
            "pdfminer.six": package_version("pdfminer.six"),
            "pypdfium2": package_version("pypdfium2"),
            "tesseract": tesseract_version() or "not-installed",
            "beautifulsoup4": package_version("beautifulsoup4"),
            "lxml": package_version("lxml"),
            "markdownify": package_version("markdownify"),
            "python-docx": package_version("python-docx"),
            "charset-normalizer": package_version("charset-normalizer"),
        }

    def input_hashes(self, ctx: PhaseContext) -> list[str]:
        return upstream_artifact_hashes(ctx, "connect")

    def reuse_counts(self, ctx: PhaseContext, reused: int, new: int, output_count: int) -> tuple[int, int]:
        """Documents copied from the base run (``ExtractReuse`` counts them), and the others."""
        if ctx.base_layout is None:
            return reused, new
        copied = ctx.reuse_counts.get("extract", 0)
        return copied, max(0, output_count - copied)

    def run(self, ctx: PhaseContext) -> PhaseOutcome:
        layout = ctx.layout
        cfg = ctx.config.extract
        raws = [RawRecord.model_validate(row) for row in iter_jsonl(layout.raw_manifest)]
        found = _Found()
        jobs, results, workers = self._extract(ctx, raws, found)
        _gather(ctx, jobs, results, found)
        documents = found.documents
        # The commit a repo file was read at is the run's, also for documents taken from a base run.
        commits = {raw.uri: raw.commit for raw in raws if raw.commit}
        if commits:
            documents = [_with_commit(d, commits.get(d.uri)) for d in documents]
        documents.sort(key=lambda d: (d.uri, d.record_id or "", d.doc_id))
        sync_filesystem()
        # A taken document's line as it was; the others' canonical JSON (the same form).
        atomic_write_bytes(
            layout.documents,
            b"".join(d.line if isinstance(d, TakenDocument) else (jsonl_line(d) + "\n").encode() for d in documents),
        )
        pdf_stats = _pdf_stats(layout, documents, cfg.pdf_mode)
        report = {
            "extractor_versions": self.tool_versions(),
            "pdf_mode": cfg.pdf_mode,
            "documents_extracted": len(documents),
            "documents_by_format": dict(sorted(Counter(d.format for d in documents).items())),
            "files_failed": len(found.failures),
            "failures": sorted(found.failures, key=lambda f: (f["uri"], f["message"])),
            "files_skipped": sorted(found.skipped, key=lambda s: s["uri"]),
            "chars_extracted": sum(d.char_count for d in documents),
            "pdf": pdf_stats,
            "warnings": sorted(found.warnings),
        }
        write_artifact(layout.extraction_report, ExtractionReport.model_validate(report))
        _prune(layout, set(found.written))
        return PhaseOutcome(
            artifacts=[layout.documents, layout.extraction_report],
            files=found.written,  # the file list sorts them by relative path
            output_count=len(documents),
            stats={
                "documents": len(documents),
                "files_failed": len(found.failures),
                "files_skipped": len(found.skipped),
                "chars_extracted": report["chars_extracted"],
                "pdf_pages": pdf_stats["pages_processed"],
                "workers": workers if jobs else 0,
            },
            reused=ctx.reuse_counts.get("extract", 0),
            new=len(documents) - ctx.reuse_counts.get("extract", 0),
            record_counts={"extracted/documents.jsonl": len(documents)},
        )

    def _extract(
        self, ctx: PhaseContext, raws: list[RawRecord], found: _Found
    ) -> tuple[list[Any], dict[int, Any], int]:
        """Every raw file's extraction: taken from the base run when unchanged, else a job for the
        run's executor, its files written as it finishes. (jobs, results by job key, workers)"""
        from indexfoundry.phases.extract.workers import ExtractJob, ExtractResult, default_workers
        from indexfoundry.phases.isolation import Limits

        layout = ctx.layout
        cfg = ctx.config.extract
        options = ExtractOptions.from_config(ctx.config)
        jobs: list[ExtractJob] = []
        # Incremental run or rerun in place: unchanged raw files take their extraction from the
        # base run (or this run's last committed extraction), read and verified once here.
        reuse = ExtractReuse(ctx, raws)
        with ctx.progress.task("extract", total=len(raws)) as task:
            for index, raw in enumerate(raws):
                if reuse.take(raw, found.documents, found.written, found.warnings):
                    task.advance()
                    continue
                # Everything else is extracted by extract_bytes(data, raw, config) in a worker.
                jobs.append(ExtractJob(index, str(layout.root / raw.path), raw, ctx.config, options))
            workers = default_workers() if cfg.workers is None else cfg.workers

            def store(job: ExtractJob, result: ExtractResult) -> None:
                # Written as each job finishes, so only pending documents are held in memory;
                # the files are content-addressed and documents.jsonl is sorted, so the order
                # the workers finish in changes nothing.
                found.extracted[job.key] = [
                    self._write(layout, job.raw, item, found.written) for item in result.items if item.text.strip()
                ]
                found.notes[job.key] = [(item.warnings, item.empty, item.record_id) for item in result.items]
                result.items = []
                task.advance()

            limits = Limits(workers, cfg.timeout_s, cfg.memory_mb)
            if jobs:  # this process now mostly waits (for the fork server, then the workers)
                ctx.waiting_on_workers()
            results = _run_on(ctx.executor, jobs, limits, ctx.config.execution.raw_transfer, store)
        return jobs, results, workers

    def _write(
        self, layout: RunLayout, raw: RawRecord, item: ExtractedText, written: dict[str, str | None]
    ) -> ExtractedDocument:
        from indexfoundry.phases.extract.markdown import find_headings

        key = _text_key(raw, item)
        text_path = layout.extracted_text(key)
        text_rel = text_path.relative_to(layout.root).as_posix()
        text_sha256 = sha256_text(item.text)  # the file's hash: its bytes are the text's UTF-8
        if text_rel not in written:
            # One sync for all the texts (sync_filesystem in run): thousands of records, one file each.
            atomic_write_text(text_path, item.text, fsync=False)
            written[text_rel] = text_sha256
        pages_rel = None
        if item.pages is not None:
            pages_path = layout.extracted_pages(key)
            pages_rel = pages_path.relative_to(layout.root).as_posix()
            if pages_rel not in written:
                atomic_write_jsonl(pages_path, item.pages)
                written[pages_rel] = None
        headings = item.headings if item.headings is not None else find_headings(item.text)
        return ExtractedDocument(
            doc_id=doc_id_for(raw.uri, raw.sha256, item.record_id),
            uri=raw.uri,
            format=item.format,
            content_hash=raw.sha256,
            content_type=raw.content_type,
            text_path=text_rel,
            text_sha256=text_sha256,
            char_count=len(item.text),
            title=item.title,
            headings=headings,
            pages_path=pages_rel,
            page_count=len(item.pages) if item.pages is not None else None,
            record_id=item.record_id,
            metadata=item.metadata,
        )


def _with_commit(document: Document, commit: str | None) -> Document:
    """``document`` read at ``commit`` (a taken line is kept when it already says so)."""
    if isinstance(document, TakenDocument):
        if document.commit == commit:
            return document
        document = document.model()
    return document.model_copy(update={"commit": commit})


@dataclass
class _Found:
    """What the extract phase found so far: documents, the files it wrote, and what went wrong."""

    documents: list[Document] = field(default_factory=list)
    # The per-item files written or taken, by path in the run -> their SHA-256 where known.
    written: dict[str, str | None] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)
    failures: list[dict[str, str]] = field(default_factory=list)
    # Per job key: its documents, and per item (warnings, empty, record id) -- what is left of a
    # job's result once its files are written.
    extracted: dict[int, list[ExtractedDocument]] = field(default_factory=dict)
    notes: dict[int, list[tuple[list[str], bool, str | None]]] = field(default_factory=dict)


def _gather(ctx: PhaseContext, jobs: list[Any], results: dict[int, Any], found: _Found) -> None:
    """The jobs' outcomes in raw-manifest order, whatever order the workers finished in: files
    skipped as unsupported, failures recorded (an empty extraction is EMPTY_CONTENT), documents."""
    for job in jobs:
        raw, result = job.raw, results[job.key]
        if result.unsupported is not None:
            found.skipped.append({"uri": raw.uri, "reason": result.unsupported})
            continue
        if result.error is not None:
            found.failures.append({"uri": raw.uri, "code": result.error.code, "message": result.error.message})
            ctx.record_error(result.error, "extract", uri=raw.uri)
            continue
        for item_warnings, empty, record_id in found.notes.get(job.key, []):
            found.warnings.extend(f"{raw.uri}: {w}" for w in item_warnings)
            if empty:
                error = EmptyContent(
                    f"no text could be extracted from {raw.uri}" + (f" (record {record_id})" if record_id else ""),
                    suggestion="Check the file; for scanned PDFs use pdf_mode: ocr",
                )
                found.failures.append({"uri": raw.uri, "code": error.code, "message": error.message})
                ctx.record_error(error, "extract", uri=raw.uri)
        found.documents.extend(found.extracted.get(job.key, []))


def _run_on(executor: Executor, jobs: list[Any], limits: Any, transfer: str, store: Any) -> dict[int, Any]:
    """Jobs handed to the run's executor, each under the extraction limits (``map_limited``:
    locally its warm worker pool, on a remote executor one limited process per job on its
    worker). A remote job carries the raw bytes (object store) unless every node sees the runs
    folder (``shared_path``); a job stopped at a limit becomes its PARSE_ERROR here."""
    from indexfoundry.phases.extract.workers import outcome_of, run_job

    remote = executor.remote

    def item(index: int) -> Any:
        job = jobs[index]
        return job if not remote or transfer == "shared_path" else replace(job, data=Path(job.path).read_bytes())

    results: dict[int, Any] = {}

    def done(index: int, outcome: Any) -> None:
        job = jobs[index]
        results[job.key] = result = outcome_of(job, outcome)
        store(job, result)

    executor.map_limited(run_job, LazyItems(len(jobs), item), limits, on_result=done)
    return results


def _pdf_stats(layout: RunLayout, documents: list[Document], mode: str) -> dict[str, Any]:
    """Page figures of the PDFs, read back from their pages files (reused documents included)."""
    stats = {
        "documents": 0,
        "pages_processed": 0,
        "pages_empty": 0,
        "pages_ocr": 0,
        "pages_ocr_fallback": 0,
        "chars_extracted": 0,
    }
    for doc in documents:
        if doc.format != "pdf" or doc.pages_path is None:
            continue
        stats["documents"] += 1
        stats["chars_extracted"] += doc.char_count
        for row in iter_jsonl(layout.root / doc.pages_path):
            page = PageExtraction.model_validate(row)
            stats["pages_processed"] += 1
            stats["pages_empty"] += int(page.is_empty)
            stats["pages_ocr"] += int(page.ocr_used)
            stats["pages_ocr_fallback"] += int(page.ocr_used and mode != "ocr")
    return {"mode_used": mode, **stats}


def _prune(layout: RunLayout, keep: set[str]) -> None:
    """Remove the files of ``extracted/`` this run did not write or take (``keep``: paths in the
    run); its documents, report and file list stay."""
    folder = layout.extracted_dir.relative_to(layout.root).as_posix() + "/"
    names = {rel[len(folder) :] for rel in keep if rel.startswith(folder) and "/" not in rel[len(folder) :]}
    names.update(path.name for path in (layout.documents, layout.extraction_report, layout.file_list("extract")))
    with os.scandir(layout.extracted_dir) as entries:
        for entry in entries:
            if entry.name not in names and entry.is_file():
                os.unlink(entry.path)
