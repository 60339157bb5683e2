"""Read-only views of a run: its pages (extracted documents) and their sections (MCP, ``Run.page``).

A page is one extracted document, named by its source uri (``docs/guide/install.md``; a
record split from a csv/jsonl file is ``<uri>#<record id>``). Sections come from the
headings extract recorded (level, text, UTF-8 byte offset): a section runs from its heading
to the next heading of the same or a higher level, and is named by its heading or by its
breadcrumb (``Guide > Config > Theme``).

A run that reads one folder or one repository has a *root*: the source name every uri starts
with (``docs/``). ``find`` and ``relative`` name its pages relative to it (``guide/install.md``),
so the same page has the same path in every run of a library, whatever its folder is called.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import PurePosixPath

from indexfoundry.errors import IndexFoundryError, NotFound
from indexfoundry.models.config import FolderSource, RepoSource
from indexfoundry.models.manifests import RunManifest
from indexfoundry.models.records import ExtractedDocument, Heading
from indexfoundry.storage.atomic import iter_jsonl
from indexfoundry.storage.layout import RunLayout
from indexfoundry.storage.manifest import load_manifest, load_run_config

CRUMB_SEPARATOR = " > "


def page_key(doc: ExtractedDocument) -> str:
    return f"{doc.uri}#{doc.record_id}" if doc.record_id else doc.uri


def _norm(text: str) -> str:
    return " ".join(text.strip().lstrip("#").split()).casefold()


@dataclass(frozen=True)
class Section:
    heading: Heading
    breadcrumb: str
    byte_start: int
    byte_end: int


def sections_of(doc: ExtractedDocument, text_bytes_len: int) -> list[Section]:
    """Every heading's section with its breadcrumb, in text order."""
    stack: list[Heading] = []
    out: list[Section] = []
    headings = sorted(doc.headings, key=lambda h: h.byte_start)
    for index, heading in enumerate(headings):
        while stack and stack[-1].level >= heading.level:
            stack.pop()
        stack.append(heading)
        end = text_bytes_len
        for later in headings[index + 1 :]:
            if later.level <= heading.level:
                end = later.byte_start
                break
        out.append(
            Section(
                heading=heading,
                breadcrumb=CRUMB_SEPARATOR.join(h.text for h in stack),
                byte_start=heading.byte_start,
                byte_end=end,
            )
        )
    return out


def find_section(sections: list[Section], wanted: str) -> list[Section]:
    """Sections matching ``wanted``: a breadcrumb (or its tail) when it contains '>', else a heading."""
    target = _norm(wanted)
    if ">" in wanted:
        parts = [_norm(p) for p in wanted.split(">")]
        return [s for s in sections if [_norm(p) for p in s.breadcrumb.split(">")][-len(parts) :] == parts]
    return [s for s in sections if _norm(s.heading.text) == target]


class RunView:
    """One run's manifest and documents, loaded once (a finished run does not change)."""

    def __init__(self, layout: RunLayout) -> None:
        self.layout = layout
        self.manifest: RunManifest = load_manifest(layout)
        index = self.manifest.phases.get("index")
        self.indexed_at: str | None = index.completed_at if index is not None else None
        self._documents: dict[str, ExtractedDocument] | None = None
        self._root: str | None = None
        self._lock = threading.Lock()

    @property
    def run_id(self) -> str:
        return self.layout.run_id

    @property
    def documents(self) -> dict[str, ExtractedDocument]:
        with self._lock:
            if self._documents is None:
                if not self.layout.documents.is_file():
                    raise NotFound(
                        f"run {self.run_id} has no extracted documents",
                        suggestion=f"Run the extract phase: 'indexfoundry extract --run-id {self.run_id}'",
                    )
                docs = [ExtractedDocument.model_validate(row) for row in iter_jsonl(self.layout.documents)]
                self._documents = {page_key(d): d for d in sorted(docs, key=page_key)}
            return self._documents

    @property
    def root(self) -> str:
        """``<source name>/`` when the run reads one folder or one repository (every page path
        starts with it), else ''."""
        if self._root is None:
            try:
                sources = load_run_config(self.layout).connect.sources
            except (IndexFoundryError, OSError, ValueError):
                sources = []
            only = sources[0] if len(sources) == 1 else None
            self._root = f"{only.uri_root()}/" if isinstance(only, FolderSource | RepoSource) else ""
        return self._root

    def relative(self, key: str) -> str:
        """A page path (as stored) relative to the run's root."""
        root = self.root
        return key[len(root) :] if root and key.startswith(root) else key

    def find(self, path: str) -> ExtractedDocument:
        """The document a page path names relative to the run's root (``guide/install.md``) or as
        stored (``docs/guide/install.md``), the relative reading first; NOT_FOUND suggests
        relative paths."""
        _refuse_traversal(path, self.run_id)
        clean = path.strip().lstrip("/")
        root = self.root
        found = self.documents.get(root + clean) if root else None
        if found is not None:
            return found
        try:
            return self.document(path)
        except NotFound:
            if not root:
                raise
        close = [self.relative(k) for k in self.documents if k.endswith(clean)][:5]
        raise NotFound(
            f"no page '{path}' in run {self.run_id}",
            suggestion=("Did you mean: " + ", ".join(close)) if close else "Call list_pages for page paths",
        )

    def document(self, path: str) -> ExtractedDocument:
        """The document called ``path`` (its uri); traversal-looking names are refused outright."""
        _refuse_traversal(path, self.run_id)
        clean = path.strip()
        found = self.documents.get(clean) or self.documents.get(clean.lstrip("/"))
        if found is None:
            close = [k for k in self.documents if k.endswith(clean.lstrip("/"))][:5]
            raise NotFound(
                f"no page '{path}' in run {self.run_id}",
                suggestion=("Did you mean: " + ", ".join(close)) if close else "Call list_pages for page paths",
            )
        return found

    def text(self, doc: ExtractedDocument) -> str:
        """The extracted text of a document (its path is checked to stay inside the run)."""
        path = self.layout.resolve_inside(doc.text_path)
        try:
            return path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise NotFound(
                f"extracted text of '{doc.uri}' is missing from run {self.run_id}",
                suggestion="Rerun the extract phase",
            ) from None

    def section(self, path: str, heading: str) -> tuple[ExtractedDocument, Section, str, list[str]]:
        """The section of page ``path`` named ``heading``; also the other matches' breadcrumbs."""
        doc = self.document(path)
        text = self.text(doc)
        data = text.encode("utf-8")
        sections = sections_of(doc, len(data))
        matches = find_section(sections, heading)
        if not matches:
            names = [s.breadcrumb for s in sections][:20]
            raise NotFound(
                f"page '{path}' has no section '{heading}'",
                suggestion=("Sections: " + "; ".join(names)) if names else "This page has no headings; use get_page",
            )
        first = matches[0]
        body = data[first.byte_start : first.byte_end].decode("utf-8", errors="replace")
        return doc, first, body.rstrip("\n"), [m.breadcrumb for m in matches[1:]]


def _refuse_traversal(path: str, run_id: str) -> None:
    clean = path.strip()
    if not clean or "\0" in clean or ".." in PurePosixPath(clean).parts:
        raise NotFound(f"no page '{path}' in run {run_id}", suggestion="Call list_pages for page paths")
