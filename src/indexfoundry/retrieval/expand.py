"""Context expansion: around each hit, its neighbouring chunks or its whole enclosing section.

``expand: neighbors`` takes the chunks just before and after the hit in its document;
``expand: section`` takes every chunk of the document around the hit whose heading path is the
hit's or lies under it (``Guide > Config`` takes ``Guide > Config > Theme`` too), found by the
heading paths and chunk order of the run's chunks; a chunk without a heading path falls back to
its neighbours. The expanded text is cut from the extracted document by the chunks' byte
ranges, so overlapping chunks are not repeated.

Hits of one document whose expansions overlap or touch are merged without duplicates: the best
ranked of them carries the merged text, the others carry no text and name it in
``merged_into``.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

from indexfoundry.errors import NotFound
from indexfoundry.models.fences import fence_opener
from indexfoundry.models.records import DocumentChunk, ExtractedDocument, Heading
from indexfoundry.models.retrieval import ExpandMode, Expansion
from indexfoundry.storage.atomic import iter_jsonl
from indexfoundry.storage.layout import RunLayout

_TEXT_CACHE = 16


def _under(path: str | None, section: str) -> bool:
    return path is not None and (path == section or path.startswith(section + " > "))


class Expander:
    """Expands hits of one run (documents and their chunk order loaded once)."""

    def __init__(self, layout: RunLayout, chunks: dict[str, DocumentChunk]) -> None:
        self.layout = layout
        self._chunks = chunks
        self._by_doc: dict[str, list[DocumentChunk]] | None = None
        self._docs: dict[str, ExtractedDocument] | None = None
        self._texts: OrderedDict[str, bytes] = OrderedDict()
        self._lock = threading.Lock()

    def _doc_chunks(self, doc_id: str) -> list[DocumentChunk]:
        with self._lock:
            if self._by_doc is None:
                by_doc: dict[str, list[DocumentChunk]] = {}
                for chunk in self._chunks.values():
                    by_doc.setdefault(chunk.doc_id, []).append(chunk)
                for items in by_doc.values():
                    items.sort(key=lambda c: (c.chunk_index, c.position.byte_start, c.chunk_id))
                self._by_doc = by_doc
            return self._by_doc.get(doc_id, [])

    def _text(self, doc_id: str) -> bytes:
        with self._lock:
            if self._docs is None:
                self._docs = {}
                if self.layout.documents.is_file():
                    for row in iter_jsonl(self.layout.documents):
                        record = ExtractedDocument.model_validate(row)
                        self._docs.setdefault(record.doc_id, record)
            cached = self._texts.get(doc_id)
            if cached is not None:
                self._texts.move_to_end(doc_id)
                return cached
            found = self._docs.get(doc_id)
        if found is None:
            raise NotFound(f"document {doc_id} is not in run {self.layout.run_id}", suggestion="Rerun the pipeline")
        root = self.layout.root.resolve()
        path = (root / found.text_path).resolve()
        if not path.is_relative_to(root):
            raise NotFound(f"document {doc_id} has a text path outside the run", suggestion="Rerun the pipeline")
        data = Path(path).read_bytes()
        with self._lock:
            self._texts[doc_id] = data
            while len(self._texts) > _TEXT_CACHE:
                self._texts.popitem(last=False)
        return data

    def _doc(self, doc_id: str) -> ExtractedDocument | None:
        self._text(doc_id)  # loads the documents
        assert self._docs is not None
        return self._docs.get(doc_id)

    def _section(self, chunk: DocumentChunk, data: bytes) -> tuple[int, int, str] | None:
        """Byte range and breadcrumb of the section the chunk's content starts in.

        By the document's headings: headings the chunk starts with are passed over, so a chunk
        beginning with ``# Guide`` then ``## Install`` and a paragraph belongs to Install.
        """
        doc = self._doc(chunk.doc_id)
        headings = sorted(doc.headings, key=lambda h: h.byte_start) if doc is not None else []
        starts = {h.byte_start for h in headings}
        at = chunk.position.byte_start
        while True:
            while at < len(data) and data[at : at + 1].isspace():
                at += 1
            if at not in starts:
                break
            line_end = data.find(b"\n", at)
            at = len(data) if line_end < 0 else line_end + 1
        at = min(at, max(chunk.position.byte_end - 1, chunk.position.byte_start))
        stack: list[Heading] = []
        found: int | None = None
        for index, heading in enumerate(headings):
            if heading.byte_start > at:
                break
            while stack and stack[-1].level >= heading.level:
                stack.pop()
            stack.append(heading)
            found = index
        if found is None:
            return None
        head = headings[found]
        end = next((h.byte_start for h in headings[found + 1 :] if h.level <= head.level), len(data))
        return head.byte_start, end, " > ".join(h.text for h in stack)

    def span(self, chunk: DocumentChunk, mode: ExpandMode) -> tuple[int, int, str | None]:
        """Byte range (and section breadcrumb) that ``mode`` takes around ``chunk``."""
        items = self._doc_chunks(chunk.doc_id)
        if mode == "section":
            section = self._section(chunk, self._text(chunk.doc_id))
            if section is not None:
                start, end, crumb = section
                return min(start, chunk.position.byte_start), max(end, chunk.position.byte_end), crumb
        at = next(i for i, c in enumerate(items) if c.chunk_id == chunk.chunk_id)
        window = items[max(at - 1, 0) : at + 2]
        return min(c.position.byte_start for c in window), max(c.position.byte_end for c in window), None

    def expand(self, chunk_ids: list[str], mode: ExpandMode) -> list[tuple[str, Expansion, str | None]]:
        """(text, expansion, fence) for each hit in rank order; merged hits get an empty text.
        ``fence`` is the opener of the code block the text begins inside (``SearchResult.fence``)."""
        spans = [(self._chunks[cid].doc_id, *self.span(self._chunks[cid], mode)) for cid in chunk_ids]
        # Groups of overlapping or touching ranges of one document (only whitespace between them),
        # each owned by its best-ranked hit.
        groups: list[_Group] = []
        for i, (doc, lo, hi, _crumb) in enumerate(spans):
            data = self._text(doc)
            group = _Group(owner=i, doc=doc, lo=lo, hi=hi, members=[i])
            merged = True
            while merged:
                merged = False
                for other in groups:
                    if other.doc == doc and _touch(data, (group.lo, group.hi), (other.lo, other.hi)):
                        groups.remove(other)
                        group = _Group(
                            owner=min(group.owner, other.owner),
                            doc=doc,
                            lo=min(group.lo, other.lo),
                            hi=max(group.hi, other.hi),
                            members=other.members + group.members,
                        )
                        merged = True
                        break
            groups.append(group)
        group_of = {member: g for g in groups for member in g.members}
        out: list[tuple[str, Expansion, str | None]] = []
        for i in range(len(chunk_ids)):
            doc, _lo, _hi, crumb = spans[i]
            found = group_of[i]
            head, start, end = found.owner, found.lo, found.hi
            covered = [
                c.chunk_id for c in self._doc_chunks(doc) if c.position.byte_start < end and c.position.byte_end > start
            ]
            info = Expansion(
                mode=mode,
                chunk_ids=covered,
                byte_start=start,
                byte_end=end,
                heading_path=crumb,
                merged_into=None if head == i else chunk_ids[head],
            )
            text = "" if head != i else self._text(doc)[start:end].decode("utf-8", errors="replace")
            out.append((text, info, self._fence_at(doc, start) if text else None))
        return out

    def _fence_at(self, doc_id: str, start: int) -> str | None:
        """The code fence byte ``start`` of the document lies inside, as the chunk starting there
        knows it: its ``fence``, or the fence its text re-opens (a prefix, ``text_layout``).
        A range that starts at a heading starts outside every fence."""
        first = next((c for c in self._doc_chunks(doc_id) if c.position.byte_start == start), None)
        if first is None or first.position.fence:
            return None if first is None else first.position.fence
        layout = (first.metadata.custom or {}).get("text_layout") or {}
        prefix = str(layout.get("prefix", ""))
        return prefix.strip() if fence_opener(prefix) else None


@dataclass
class _Group:
    owner: int
    doc: str
    lo: int
    hi: int
    members: list[int]


def _touch(data: bytes, a: tuple[int, int], b: tuple[int, int]) -> bool:
    """Whether two byte ranges overlap or meet with only whitespace between them."""
    (_, ahi), (blo, _) = sorted([a, b])
    return blo <= ahi or not data[ahi:blo].strip()
