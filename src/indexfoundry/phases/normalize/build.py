"""From extracted documents to ``DocumentChunk`` records: shared by the phase and the tools.

Each document is chunked as one job of the run's executor (``map_limited``: locally its
warm pool of limited workers, ``phases/isolation.py``), under the same time and memory limits
as its extraction (``extract.timeout_s``, ``extract.memory_mb``, ``extract.workers``): a
document that a chunker cannot finish within them fails alone with CHUNK_ERROR and the run
goes on.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from indexfoundry.errors import ChunkError, IndexFoundryError
from indexfoundry.models.config import ExtractConfig, NormalizeConfig
from indexfoundry.models.records import (
    ChunkContent,
    ChunkMetadata,
    ChunkPosition,
    ChunkSource,
    DocumentChunk,
    ExtractedDocument,
    PageExtraction,
)
from indexfoundry.phases.base import LazyItems
from indexfoundry.phases.executor import LOCAL, Executor
from indexfoundry.phases.isolation import Limits, Stopped, default_workers, preload
from indexfoundry.phases.normalize.blocks import fences_at
from indexfoundry.phases.normalize.chunkers import chunk_spans
from indexfoundry.phases.normalize.contentless import FORMATS as CONTENT_FREE_FORMATS
from indexfoundry.phases.normalize.contentless import drop_content_free
from indexfoundry.phases.normalize.packing import Span
from indexfoundry.phases.normalize.positions import TextPositions
from indexfoundry.phases.normalize.window import TokenWindow, fit_spans
from indexfoundry.storage.atomic import iter_jsonl
from indexfoundry.storage.hashing import chunk_id_for, sha256_file, sha256_json, sha256_text
from indexfoundry.storage.layout import RunLayout
from indexfoundry.storage.memo import Memo, memos_enabled
from indexfoundry.storage.workcache import WorkCache


def chunker_config(config: NormalizeConfig) -> dict[str, Any]:
    """The chunker settings that decide chunk boundaries, with their hash (the
    normalize output's ``chunker_config``: strategy, max_chars, overlap_chars, config_hash, and the rest)."""
    settings = {
        "strategy": config.chunk_strategy,
        "max_chars": config.max_chars,
        "min_chars": config.min_chars,
        "overlap_chars": config.overlap_chars,
        "split_hierarchy": config.split_hierarchy,
        "merge_short_sections": config.merge_short_sections,
    }
    return {**settings, "config_hash": sha256_json(settings)}


def _text_layout(span: Span) -> dict[str, str] | None:
    """How a chunk's text relates to its offsets when it is not a plain slice."""
    if not span.prefix and not span.suffix:
        return None
    return {
        "prefix": span.prefix,
        "suffix": span.suffix,
        "rule": "text = prefix + extracted[byte_start:byte_end] + suffix",
    }


def build_chunks(doc: ExtractedDocument, text: str, spans: list[Span]) -> list[DocumentChunk]:
    """Turn spans of one document into ``DocumentChunk`` records with stable ids."""
    positions = TextPositions(text)
    base_custom = {k: v for k, v in doc.metadata.items() if k != "title"}
    # A span with a prefix re-opens its fence itself; any other span may begin inside one.
    fences = fences_at(text, [s.start if not s.prefix else -1 for s in spans])
    chunks: list[DocumentChunk] = []
    for index, span in enumerate(spans):
        chunk_text = span.text(text)
        byte_start = positions.byte_of(span.start)
        byte_end = positions.byte_of(span.end)
        custom = dict(base_custom)
        layout = _text_layout(span)
        if layout is not None:
            custom["text_layout"] = layout
        chunks.append(
            DocumentChunk(
                doc_id=doc.doc_id,
                chunk_id=chunk_id_for(doc.doc_id, byte_start, byte_end),
                chunk_index=index,
                source=ChunkSource(
                    type=doc.format,
                    uri=doc.uri,
                    content_hash=doc.content_hash,
                    record_id=doc.record_id,
                    commit=doc.commit,
                ),
                content=ChunkContent(
                    text=chunk_text,
                    text_hash=sha256_text(chunk_text),
                    char_count=len(chunk_text),
                    token_count_approx=(len(chunk_text) + 3) // 4,
                ),
                position=ChunkPosition(
                    byte_start=byte_start,
                    byte_end=byte_end,
                    page=span.page,
                    section=span.section,
                    line_start=positions.line_of(span.start),
                    line_end=positions.line_of(max(span.start, span.end - 1)),
                    fence=fences[index],
                ),
                metadata=ChunkMetadata(
                    content_type=doc.content_type,
                    title=doc.title,
                    heading_path=span.heading_path,
                    heading_level=span.heading_level,
                    part=span.part,
                    custom=custom or None,
                ),
            )
        )
    return chunks


def load_pages(layout: RunLayout, doc: ExtractedDocument) -> list[PageExtraction] | None:
    """The per-page extraction of a paged document, if it has one."""
    return _pages(layout.root, doc)


def _pages(root: Path, doc: ExtractedDocument) -> list[PageExtraction] | None:
    if not doc.pages_path:
        return None
    return [PageExtraction.model_validate(p) for p in iter_jsonl(root / doc.pages_path)]


preload(["indexfoundry.phases.normalize.build", "pysbd"])


def chunk_limits(extract: ExtractConfig) -> Limits:
    """The limits documents are chunked under: the extraction's own (workers, time, memory)."""
    workers = default_workers() if extract.workers is None else extract.workers
    return Limits(workers, extract.timeout_s, extract.memory_mb)


@dataclass(frozen=True)
class ChunkJob:
    """One document to chunk on an executor's worker, with everything it needs."""

    doc: ExtractedDocument
    text: str
    pages: list[PageExtraction] | None
    config: NormalizeConfig
    # The limits it runs under on a remote worker (in one limited process there, as locally).
    limits: Limits | None = None
    window: TokenWindow | None = None


@dataclass(frozen=True)
class ChunkFileJob:
    """One document to chunk in a local worker process: it reads its text from the run."""

    root: str
    doc: ExtractedDocument
    config: NormalizeConfig
    memory_mb: int
    window: TokenWindow | None = None


@dataclass
class ChunkedDocument:
    """What chunking one document gave: its chunks, or the error that failed it."""

    chunks: list[DocumentChunk] = field(default_factory=list)
    hard_cuts: int = 0
    error: IndexFoundryError | None = None
    split_for_window: int = 0
    content_free: int = 0


def _guarded(doc: ExtractedDocument, memory_mb: int, work: Callable[[], ChunkedDocument]) -> ChunkedDocument:
    """``work()`` with every failure turned into a CHUNK_ERROR (the isolation boundary of a job)."""
    uri = doc.uri
    try:
        return work()
    except IndexFoundryError as error:
        return ChunkedDocument(error=error)
    except MemoryError:
        return ChunkedDocument(
            error=ChunkError(
                f"{uri} needs more memory to chunk than the limit (extract.memory_mb = {memory_mb})",
                suggestion="Raise extract.memory_mb, choose another chunk_strategy, or exclude the file",
                details={"uri": uri, "limit": "memory"},
            )
        )
    except RecursionError:
        return ChunkedDocument(
            error=ChunkError(
                f"{uri} is nested too deeply to chunk", suggestion="Exclude the file", details={"uri": uri}
            )
        )
    except OSError as exc:
        return ChunkedDocument(
            error=ChunkError(
                f"cannot read the extracted text of {uri}: {exc}",
                suggestion="Rerun extract with --force",
                details={"uri": uri},
            )
        )
    except Exception as exc:  # the job boundary: a chunker bug on one document must not end the run
        return ChunkedDocument(
            error=ChunkError(
                f"{uri} could not be chunked: {type(exc).__name__}: {' '.join(str(exc).split())[:300]}",
                suggestion="Choose another chunk_strategy or exclude the file, and report the problem with this file",
                details={"uri": uri, "traceback": traceback.format_exc(limit=8)},
            )
        )


def _chunked(
    doc: ExtractedDocument,
    text: str,
    pages: list[PageExtraction] | None,
    config: NormalizeConfig,
    window: TokenWindow | None = None,
) -> ChunkedDocument:
    spans = chunk_spans(text, doc.headings, config, pages)
    dropped = 0
    if doc.format in CONTENT_FREE_FORMATS:
        spans, dropped = drop_content_free(spans, lambda s: s.text(text))
    split = 0
    if window is not None:
        spans, split = fit_spans(text, spans, window)
    return ChunkedDocument(
        build_chunks(doc, text, spans),
        sum(1 for s in spans if s.hard_cut),
        split_for_window=split,
        content_free=dropped,
    )


def chunk_one(job: ChunkJob) -> ChunkedDocument:
    """Chunk one document (pure: runs on any worker)."""
    memory_mb = job.limits.memory_mb if job.limits else ExtractConfig().memory_mb
    return _guarded(job.doc, memory_mb, lambda: _chunked(job.doc, job.text, job.pages, job.config, job.window))


def chunk_file(job: ChunkFileJob) -> ChunkedDocument:
    """Chunk one document of a run's folder (what a local worker process runs)."""

    def work() -> ChunkedDocument:
        root = Path(job.root)
        text = (root / job.doc.text_path).read_text(encoding="utf-8")
        return _chunked(job.doc, text, _pages(root, job.doc), job.config, job.window)

    return _guarded(job.doc, job.memory_mb, work)


def _stopped(doc: ExtractedDocument, stopped: Stopped, limits: Limits) -> ChunkedDocument:
    hint = "extract.timeout_s" if stopped.limit == "time" else "extract.memory_mb"
    return ChunkedDocument(
        error=ChunkError(
            f"{doc.uri}: chunking {stopped.reason}",
            suggestion=f"Raise {hint} (normalize runs under the extraction limits), choose another "
            "chunk_strategy, or exclude the file",
            details={
                "uri": doc.uri,
                "limit": stopped.limit,
                "timeout_s": limits.timeout_s,
                "memory_mb": limits.memory_mb,
            },
        )
    )


@dataclass
class ChunkResult:
    """Chunks of many documents, with the counts the chunk stats need."""

    chunks: list[DocumentChunk] = field(default_factory=list)
    documents: int = 0
    hard_cuts: int = 0
    split_for_window: int = 0
    content_free: int = 0
    failed: list[tuple[ExtractedDocument, IndexFoundryError]] = field(default_factory=list)
    # Every document chunked without error, with its outcome (in document order).
    outcomes: list[tuple[ExtractedDocument, ChunkedDocument]] = field(default_factory=list)

    def add(
        self,
        doc: ExtractedDocument,
        one: ChunkedDocument,
        on_error: Callable[[ExtractedDocument, IndexFoundryError], None] | None,
    ) -> None:
        """Take one document's outcome (in document order); without ``on_error`` an error is raised."""
        if one.error is not None:
            if on_error is None:
                raise one.error
            on_error(doc, one.error)
            self.failed.append((doc, one.error))
            return
        self.documents += 1
        self.hard_cuts += one.hard_cuts
        self.split_for_window += one.split_for_window
        self.content_free += one.content_free
        self.chunks.extend(one.chunks)
        self.outcomes.append((doc, one))


def chunk_documents(
    layout: RunLayout,
    documents: list[ExtractedDocument],
    config: NormalizeConfig,
    on_error: Callable[[ExtractedDocument, IndexFoundryError], None] | None = None,
    advance: Callable[[], None] | None = None,
    limits: Limits | None = None,
    window: TokenWindow | None = None,
    executor: Executor = LOCAL,
    cache: ChunkCache | None = None,
) -> ChunkResult:
    """Chunk ``documents``, each as one job under ``limits`` (default: in this process, no
    limits); chunks come out in document order. A document that fails is reported to
    ``on_error`` (in document order) and skipped; without ``on_error`` the error is raised.
    With a ``window``, chunks longer than the embedding model reads are split further
    (``window.fit_spans``). The jobs go to ``executor.map_limited`` (the run's executor: locally
    its warm worker pool; a remote one gets each document's text with its job; ``LOCAL``:
    workers started for this call). With ``cache`` (the runs folder's work cache) a document
    chunked by an earlier run with the same record, pages, config and window is not chunked
    again: only changed documents go to the workers."""
    limits = limits or Limits(0, ExtractConfig().timeout_s, ExtractConfig().memory_mb)
    jobs = [ChunkFileJob(str(layout.root), doc, config, limits.memory_mb, window) for doc in documents]
    keyed = memos_enabled() or cache is not None
    keys = [_memo_key(layout, job) if keyed else "" for job in jobs]
    known_by_key = _chunked_memo.get_many([k for k in keys if k])
    if cache is not None:
        stored = cache.get_many([k for k in keys if k not in known_by_key])
        _chunked_memo.put_many(stored)
        known_by_key.update(stored)
    known = {i: known_by_key[k] for i, k in enumerate(keys) if k in known_by_key}
    todo = [i for i in range(len(jobs)) if i not in known]

    def done(index: int, outcome: ChunkedDocument | Stopped) -> None:
        if advance is not None:
            advance()

    for i in known:
        done(i, known[i])
    fresh: list[ChunkedDocument | Stopped] = []
    if not todo:
        pass
    elif executor.remote:

        def remote_job(n: int) -> ChunkJob:
            doc = documents[todo[n]]
            text = (layout.root / doc.text_path).read_text(encoding="utf-8")
            return ChunkJob(doc, text, load_pages(layout, doc), config, limits, window)

        fresh = executor.map_limited(chunk_one, LazyItems(len(todo), remote_job), limits, on_result=done)
    else:
        fresh = executor.map_limited(chunk_file, [jobs[i] for i in todo], limits, on_result=done)
    outcomes: dict[int, ChunkedDocument | Stopped] = {**known, **dict(zip(todo, fresh, strict=True))}
    chunked = {
        keys[i]: outcome
        for i in todo
        if keys[i] and isinstance(outcome := outcomes[i], ChunkedDocument) and outcome.error is None
    }
    _chunked_memo.put_many(chunked)
    if cache is not None:
        cache.put_many(chunked)
    result = ChunkResult()
    for i, job in enumerate(jobs):
        outcome = outcomes[i]
        result.add(job.doc, _stopped(job.doc, outcome, limits) if isinstance(outcome, Stopped) else outcome, on_error)
    return result


# Documents chunked in this process (storage/memo.py; on in docs mode), by everything their
# chunks depend on: the extracted document with its text hash, its pages, the config and the
# window. A docs-mode refresh after one edit chunks only the changed document.
_chunked_memo: Memo[ChunkedDocument] = Memo(5000)


@dataclass(frozen=True)
class ChunkCache:
    """Chunked documents kept in the runs folder's work cache (``storage/workcache.py``) under
    ``kind``: the phase version and the chunking libraries' versions, so that a hit is exactly
    what chunking would give. Keys are ``_memo_key``'s (record, pages, config, window)."""

    work: WorkCache
    kind: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", f"{self.kind}/{'+'.join(_COUNTERS)}")

    def get_many(self, keys: list[str]) -> dict[str, ChunkedDocument]:
        return {key: _from_cached(value) for key, value in self.work.get_many(self.kind, keys).items()}

    def put_many(self, items: dict[str, ChunkedDocument]) -> None:
        self.work.put_many(self.kind, {key: _to_cached(one) for key, one in items.items()})


# The counters of a chunked document besides its chunks (every field but ``chunks`` and ``error``):
# their names are part of the cache kind, so a counter added later never reads as 0 from an old row.
_COUNTERS = tuple(f.name for f in fields(ChunkedDocument) if f.name not in ("chunks", "error"))


def _to_cached(one: ChunkedDocument) -> dict[str, Any]:
    return {"chunks": [c.model_dump(mode="json") for c in one.chunks], **{n: getattr(one, n) for n in _COUNTERS}}


def _from_cached(value: dict[str, Any]) -> ChunkedDocument:
    chunks = [DocumentChunk.model_validate(c) for c in value["chunks"]]
    return ChunkedDocument(chunks=chunks, **{n: value[n] for n in _COUNTERS})


def _memo_key(layout: RunLayout, job: ChunkFileJob) -> str:
    pages = sha256_file(layout.root / job.doc.pages_path) if job.doc.pages_path else None
    window = job.window.describe() if job.window is not None else None
    return sha256_json(
        {
            "doc": job.doc.model_dump(mode="json"),
            "pages": pages,
            "config": job.config.model_dump(mode="json"),
            "window": window,
        }
    )


def chunk_stats(documents: int, chunks: list[DocumentChunk], config: NormalizeConfig, hard_cuts: int) -> dict[str, Any]:
    """The chunk stats over ``chunks`` (``normalized/chunk_stats.json``)."""
    total = sum(c.content.char_count for c in chunks)
    return {
        "documents_processed": documents,
        "chunks_created": len(chunks),
        "chunks_below_min": sum(1 for c in chunks if c.content.char_count < config.min_chars),
        "chunks_at_max": hard_cuts,
        "avg_chunk_chars": round(total / len(chunks), 1) if chunks else 0,
        "total_chars": total,
    }
