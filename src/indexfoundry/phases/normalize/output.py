"""How normalize's output is made: from every document, or from the changed ones only.

``normalize_all`` chunks every document (a document in the chunk cache is not chunked again),
dedupes, enriches and counts them all. ``carry_over`` is a rerun's path when this phase's
previous output (the run's own, rerun in place, or the followed run's: its base, or the
``latest`` a plain run replaces) was made with the same config, phase version and library
versions and recorded no errors: a document whose ``documents.jsonl`` line and pages file are
those of the previous output keeps its lines of ``chunks.jsonl`` and ``document_figures.jsonl``
as they were, and only the other documents are chunked. Dedupe (exact, the default) runs over
every chunk from the text hashes in the figures; a kept document whose dedupe verdicts change
(the original of its duplicate was edited away, or an edit put a new original before it) is
redone as well. Both paths write the same bytes (tested); near-duplicate dedupe (simhash,
minhash) needs every text and always takes ``normalize_all``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from indexfoundry.errors import IndexFoundryError
from indexfoundry.models.config import DedupeOptions, EnrichRules, NormalizeConfig
from indexfoundry.models.records import ExtractedDocument
from indexfoundry.phases.base import PhaseContext, carry_source
from indexfoundry.phases.isolation import Limits
from indexfoundry.phases.normalize.build import ChunkCache, ChunkedDocument, ChunkResult, chunk_documents
from indexfoundry.phases.normalize.dedupe import exact_removals, removals
from indexfoundry.phases.normalize.enrich import enrich_each
from indexfoundry.phases.normalize.figures import DocumentInput, chunk_lines, figures_of, kept_count
from indexfoundry.phases.normalize.window import TokenWindow, token_counts
from indexfoundry.storage.atomic import jsonl_line
from indexfoundry.storage.layout import RunLayout
from indexfoundry.storage.workcache import WorkCache


@dataclass(frozen=True)
class Settings:
    """What normalizing a run's documents depends on (the phase's config, resolved)."""

    config: NormalizeConfig
    rules: EnrichRules
    detect: bool
    window: TokenWindow | None  # the model's window, measured into the stats
    split: TokenWindow | None  # the window chunks are split to fit (normalize.max_tokens)
    options: DedupeOptions | None
    limits: Limits
    cache_kind: str  # the chunk cache's kind (phase and library versions)


@dataclass
class Output:
    """Each chunked document's lines of ``chunks.jsonl`` and figures, in document order, and
    which chunks dedupe removed (by position among all documents' chunks)."""

    documents: list[tuple[list[bytes], bytes, dict[str, Any]]] = field(default_factory=list)
    removed_at: dict[int, tuple[int, float]] = field(default_factory=dict)
    carried: int = 0  # documents whose lines were taken from the previous output


@dataclass(frozen=True)
class Previous:
    """The previous output of this phase: its figures lines (parsed) and its chunk lines."""

    run: RunLayout
    figures: list[tuple[bytes, dict[str, Any]]]
    chunk_lines: list[bytes]


def previous_output(ctx: PhaseContext, config_hash: str, version: str, tools: dict[str, str]) -> Previous | None:
    """The output ``carry_over`` may start from, or None (forced; none made the same way; a
    normalize tool rewrote ``chunks.jsonl`` since, so the figures no longer describe it)."""
    from indexfoundry.storage.manifest import artifacts_verify

    found = carry_source(ctx, "normalize", config_hash, version, tools)
    if found is None:
        return None
    run, entry = found
    figures_path = run.document_figures.relative_to(run.root).as_posix()
    if figures_path not in {a.path for a in entry.artifacts} or not artifacts_verify(run, entry.artifacts):
        return None
    figures = [(line, orjson.loads(line)) for line in run.document_figures.read_bytes().splitlines(keepends=True)]
    return Previous(run, figures, run.chunks.read_bytes().splitlines(keepends=True))


OnError = Callable[[ExtractedDocument, IndexFoundryError], None]


def _document(source: DocumentInput) -> ExtractedDocument:
    return ExtractedDocument.model_validate(orjson.loads(source.line))


def _chunk(
    ctx: PhaseContext,
    settings: Settings,
    work: WorkCache,
    documents: list[ExtractedDocument],
    on_error: OnError,
    advance: Callable[[], None] | None,
) -> ChunkResult:
    return chunk_documents(
        ctx.layout,
        documents,
        settings.config,
        on_error=on_error,
        advance=advance,
        limits=settings.limits,
        window=settings.split,
        executor=ctx.executor,
        cache=None if ctx.force else ChunkCache(work, settings.cache_kind),
    )


Item = tuple[DocumentInput, ChunkedDocument, list[bool]]  # a document, its chunks, dedupe's verdicts


def _finish(
    ctx: PhaseContext, settings: Settings, work: WorkCache, items: list[Item]
) -> list[tuple[list[bytes], bytes, dict[str, Any]]]:
    """Enrich and count the kept chunks of ``items`` (document, its chunks, dedupe's verdicts)."""
    kept = [c for _, one, flags in items for c, keep in zip(one.chunks, flags, strict=True) if keep]
    pairs = enrich_each(kept, settings.rules, settings.detect, work) if kept else []
    tokens: list[int] | None = None
    if settings.window is not None and pairs:
        texts = [c.embedding_text() for c, _ in pairs]
        tokens = token_counts(settings.window, texts, None if ctx.force else work)
    out = []
    at = 0
    for source, one, flags in items:
        n = sum(flags)
        mine = pairs[at : at + n]
        counts = tokens[at : at + n] if tokens is not None else None
        at += n
        figures = figures_of(source, one, flags, [found for _, found in mine], counts, settings.config, settings.window)
        out.append((chunk_lines(c for c, _ in mine), (jsonl_line(figures) + "\n").encode("utf-8"), figures))
    return out


def normalize_all(
    ctx: PhaseContext,
    settings: Settings,
    work: WorkCache,
    inputs: list[DocumentInput],
    on_error: OnError,
    advance: Callable[[], None],
) -> Output:
    """Chunk, dedupe, enrich and count every document."""
    result = _chunk(ctx, settings, work, [_document(s) for s in inputs], on_error, advance)
    removed_at = removals(result.chunks, settings.options) if settings.options is not None else {}
    by_id = {s.doc_id: s for s in inputs}
    items = []
    at = 0
    for doc, one in result.outcomes:
        items.append((by_id[doc.doc_id], one, [at + i not in removed_at for i in range(len(one.chunks))]))
        at += len(one.chunks)
    return Output(_finish(ctx, settings, work, items), removed_at)


def carry_over(
    ctx: PhaseContext,
    settings: Settings,
    work: WorkCache,
    inputs: list[DocumentInput],
    previous: Previous,
    on_error: OnError,
    advance: Callable[[int], None],
) -> Output | None:
    """The output with every unchanged document's lines taken from ``previous``; None when this
    path cannot make exactly what ``normalize_all`` would (then nothing was recorded)."""
    options = settings.options
    if options is not None and options.method != "exact":
        return None
    figures = [f for _, f in previous.figures]
    starts = [0]
    for one in figures:
        starts.append(starts[-1] + kept_count(one))
    if starts[-1] != len(previous.chunk_lines):
        return None
    index = {f["doc_id"]: n for n, f in enumerate(figures)}
    carried: dict[int, int] = {}
    for i, source in enumerate(inputs):
        n = index.get(source.doc_id)
        if n is not None and figures[n]["record"] == source.record and figures[n]["pages"] == source.pages:
            carried[i] = n
    order = list(carried.values())
    if not carried or any(b <= a for a, b in itertools.pairwise(order)):
        return None
    advance(len(carried))
    # Errors are recorded once this path is sure to finish (else normalize_all records them).
    errors: list[tuple[ExtractedDocument, IndexFoundryError]] = []
    todo = [i for i in range(len(inputs)) if i not in carried]
    documents = [_document(inputs[i]) for i in todo]
    fresh = _chunk(ctx, settings, work, documents, lambda d, e: errors.append((d, e)), lambda: advance(1))
    chunked = {doc.doc_id: one for doc, one in fresh.outcomes}
    # Every chunked document's chunks (id, text hash) in order: dedupe needs no more.
    present = [i for i in range(len(inputs)) if i in carried or inputs[i].doc_id in chunked]
    keys: list[tuple[str, str]] = []
    for i in present:
        scope = inputs[i].doc_id if options is not None and options.scope == "per_document" else ""
        if i in carried:
            keys.extend((scope, text_hash) for _, text_hash, _ in figures[carried[i]]["chunks"])
        else:
            keys.extend((scope, c.content.text_hash) for c in chunked[inputs[i].doc_id].chunks)
    removed_at = exact_removals(keys) if options is not None else {}
    flags: dict[int, list[bool]] = {}
    at = 0
    for i in present:
        n = len(figures[carried[i]]["chunks"]) if i in carried else len(chunked[inputs[i].doc_id].chunks)
        flags[i] = [at + k not in removed_at for k in range(n)]
        at += n
    affected = [i for i in carried if flags[i] != [bool(f) for _, _, f in figures[carried[i]]["chunks"]]]
    if affected:  # unchanged documents with other dedupe verdicts: their chunks from the chunk cache
        redone = _chunk(ctx, settings, work, [_document(inputs[i]) for i in affected], lambda d, e: None, None)
        chunked.update({doc.doc_id: one for doc, one in redone.outcomes})
        for i in affected:  # the same chunks the figures record (ids and text hashes), else no carry
            again = chunked.get(inputs[i].doc_id, ChunkedDocument()).chunks
            if [[c.chunk_id, c.content.text_hash] for c in again] != [f[:2] for f in figures[carried[i]]["chunks"]]:
                return None
        for i in affected:
            del carried[i]
    redo = [(inputs[i], chunked[inputs[i].doc_id], flags[i]) for i in present if i not in carried]
    finished = iter(_finish(ctx, settings, work, redo))
    out = Output(removed_at=removed_at, carried=len(carried))
    for i in present:
        if i in carried:
            n = carried[i]
            line, one = previous.figures[n]
            out.documents.append((previous.chunk_lines[starts[n] : starts[n + 1]], line, one))
        else:
            out.documents.append(next(finished))
    for doc, error in errors:
        on_error(doc, error)
    return out


__all__ = ["Output", "Previous", "Settings", "carry_over", "normalize_all", "previous_output"]
