"""Read-only views over a loaded search service: documents and stats (used by the HTTP API)."""

from __future__ import annotations

import threading
import weakref
from collections import defaultdict

from indexfoundry.errors import NotFound
from indexfoundry.models.records import DocumentChunk, ExtractedDocument
from indexfoundry.models.serve import ChunkRef, DocumentView, StatsView
from indexfoundry.retrieval.service import SearchService
from indexfoundry.storage.atomic import iter_jsonl

_DOCS: weakref.WeakKeyDictionary[SearchService, _DocIndex] = weakref.WeakKeyDictionary()
_DOCS_LOCK = threading.Lock()


class _DocIndex:
    """Documents of a run and their chunks, built once per loaded service."""

    def __init__(self, service: SearchService) -> None:
        by_doc: dict[str, list[DocumentChunk]] = defaultdict(list)
        for chunk in service.chunks.values():
            by_doc[chunk.doc_id].append(chunk)
        self.chunks = {doc: sorted(chunks, key=lambda c: c.chunk_index) for doc, chunks in by_doc.items()}
        self.documents: dict[str, ExtractedDocument] = {}
        if service.layout.documents.is_file():
            for row in iter_jsonl(service.layout.documents):
                doc = ExtractedDocument.model_validate(row)
                if doc.doc_id in self.chunks:
                    self.documents[doc.doc_id] = doc


def _index(service: SearchService) -> _DocIndex:
    with _DOCS_LOCK:
        found = _DOCS.get(service)
        if found is None:
            found = _DocIndex(service)
            _DOCS[service] = found
        return found


def document_view(service: SearchService, doc_id: str, include_text: bool = False) -> DocumentView:
    """The document ``doc_id`` of the served run, with its chunk list (and text if asked)."""
    index = _index(service)
    chunks = index.chunks.get(doc_id)
    if not chunks:
        raise NotFound(f"document {doc_id} is not in run {service.run_id}", suggestion="Check the document id")
    first = chunks[0]
    doc = index.documents.get(doc_id)
    text = None
    if include_text and doc is not None:
        text = service.layout.resolve_inside(doc.text_path).read_text(encoding="utf-8")
    return DocumentView(
        doc_id=doc_id,
        uri=doc.uri if doc else first.source.uri,
        format=doc.format if doc else first.source.type,
        content_type=doc.content_type if doc else first.metadata.content_type,
        title=doc.title if doc else first.metadata.title,
        char_count=doc.char_count if doc else None,
        page_count=doc.page_count if doc else None,
        metadata=dict(doc.metadata) if doc else {},
        chunks=[
            ChunkRef(
                chunk_id=c.chunk_id,
                chunk_index=c.chunk_index,
                byte_start=c.position.byte_start,
                byte_end=c.position.byte_end,
                page=c.position.page,
                heading_path=c.metadata.heading_path,
            )
            for c in chunks
        ],
        text=text,
        run_id=service.run_id,
    )


def stats_view(service: SearchService, *, follows_latest: bool, reloads: int) -> StatsView:
    """What the server serves: the run, its counts, model, modes and filters."""
    index = _index(service)
    vm = service.vector_manifest
    rc = service.profile.retrieval_config
    return StatsView(
        run_id=service.run_id,
        run_status=service.manifest.status,
        indexed_at=service.indexed_at,
        documents=len(index.chunks),
        chunks=len(service.chunks),
        vectors=vm.vectors,
        model=service.model_id,
        dimensions=vm.dimensions,
        collection=vm.collection,
        namespace=vm.namespace,
        search_modes=list(rc.search_modes),
        default_top_k=rc.default_top_k,
        allowed_filters=list(service.profile.allowed_filters),
        follows_latest=follows_latest,
        reloads=reloads,
    )
