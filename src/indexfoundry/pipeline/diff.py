"""``run diff A B``: what changed between two runs, for people and for code review.

Every form leads with the source documents added, removed and modified, by source path (the
raw manifests' SHA-256 of each source's bytes). Then the frozen configs (changed keys), per
phase the artifacts each manifest records (added / removed / modified, by SHA-256, with record
counts; the text form counts the files named by their content hash) and error counts, and, with
``include_chunks``, the chunks of every source document. Times and durations (the
manifests' ``TIMING_FIELDS``) never count as differences: only content does.

Chunk ids change whenever a document changes (the document id hashes its content), so
chunks are matched per source document by the text that is embedded (breadcrumb + text):
``difflib.SequenceMatcher`` aligns the two documents' chunk sequences; equal chunks are
unchanged, aligned unequal ones are modified (with a short text diff), the rest are
added or removed. A chunk reported as added or modified is exactly a chunk whose embedding
text is new, i.e. one the index phase had to embed.
"""

from __future__ import annotations

import difflib
import html
import re
from typing import Any, Literal

from pydantic import Field

from indexfoundry.models.base import Strict
from indexfoundry.models.manifests import TIMING_FIELDS, ArtifactRecord, PhaseName
from indexfoundry.models.records import DocumentChunk
from indexfoundry.storage.atomic import iter_jsonl
from indexfoundry.storage.hashing import sha256_text, short
from indexfoundry.storage.layout import PHASES, RunLayout
from indexfoundry.storage.manifest import listed_files, load_manifest, read_frozen_config

# Keys of the frozen config that are not content (the run id, the one-off --force).
_IGNORED_CONFIG_KEYS = frozenset({"run_id", "force"})
MAX_DIFF_LINES = 24


class ConfigChange(Strict):
    key: str = Field(description="Dotted key path in the pipeline config")
    a: Any = Field(default=None, description="Value in run A (absent: null)")
    b: Any = Field(default=None, description="Value in run B (absent: null)")


class ArtifactChange(Strict):
    path: str = Field(description="Artifact path relative to the run folder")
    sha_a: str | None = Field(default=None, description="Short SHA-256 in run A")
    sha_b: str | None = Field(default=None, description="Short SHA-256 in run B")
    records_a: int | None = Field(default=None, description="Records in run A (JSONL)")
    records_b: int | None = Field(default=None, description="Records in run B (JSONL)")


class PhaseDiff(Strict):
    status_a: str | None = Field(default=None, description="Phase status in run A")
    status_b: str | None = Field(default=None, description="Phase status in run B")
    outputs_a: int = Field(default=0, description="Output count in run A")
    outputs_b: int = Field(default=0, description="Output count in run B")
    errors_a: int = Field(default=0, description="Errors in run A")
    errors_b: int = Field(default=0, description="Errors in run B")
    added: list[ArtifactChange] = Field(default_factory=list, description="Artifacts only in B")
    removed: list[ArtifactChange] = Field(default_factory=list, description="Artifacts only in A")
    modified: list[ArtifactChange] = Field(default_factory=list, description="Artifacts with different content")
    unchanged: int = Field(default=0, description="Artifacts identical in both runs")

    @property
    def changed(self) -> bool:
        return bool(
            self.added
            or self.removed
            or self.modified
            or self.status_a != self.status_b
            or self.errors_a != self.errors_b
            or self.outputs_a != self.outputs_b
        )


class ChunkRef(Strict):
    chunk_id: str = Field(description="Chunk id")
    chunk_index: int = Field(description="Index in its document")
    section: str | None = Field(default=None, description="Heading path or section")
    chars: int = Field(description="Characters")


class ChunkChange(Strict):
    a: ChunkRef = Field(description="The chunk in run A")
    b: ChunkRef = Field(description="The chunk in run B")
    diff: str = Field(description="Short unified diff of the embedded text")


class DocumentChunkDiff(Strict):
    uri: str = Field(description="Source document uri (with #record id for records)")
    change: Literal["added", "removed", "modified"] = Field(description="What happened to the document")
    added: list[ChunkRef] = Field(default_factory=list, description="Chunks only in B")
    removed: list[ChunkRef] = Field(default_factory=list, description="Chunks only in A")
    modified: list[ChunkChange] = Field(default_factory=list, description="Chunks whose text changed")
    unchanged: int = Field(default=0, description="Chunks with the same text in both runs")


class ChunkDiffSummary(Strict):
    documents_added: int = 0
    documents_removed: int = 0
    documents_modified: int = 0
    chunks_added: int = 0
    chunks_removed: int = 0
    chunks_modified: int = 0
    chunks_unchanged: int = 0


class DocumentChanges(Strict):
    """The source documents that changed from run A to run B, by source path."""

    added: list[str] = Field(default_factory=list, description="Source paths only in run B")
    removed: list[str] = Field(default_factory=list, description="Source paths only in run A")
    modified: list[str] = Field(default_factory=list, description="Source paths whose bytes changed")
    unchanged: int = Field(default=0, description="Sources with the same bytes in both runs")

    def counts(self) -> str:
        return (
            f"{len(self.added)} added, {len(self.removed)} removed, {len(self.modified)} modified, "
            f"{self.unchanged} unchanged"
        )

    def listed(self) -> list[tuple[str, str]]:
        """(change, source path) of every changed document: added, removed, then modified."""
        return [
            *(("added", uri) for uri in self.added),
            *(("removed", uri) for uri in self.removed),
            *(("modified", uri) for uri in self.modified),
        ]


class RunDiffOutput(Strict):
    """What ``indexfoundry_run_diff`` answers."""

    run_id_a: str = Field(description="Older side of the comparison")
    run_id_b: str = Field(description="Newer side of the comparison")
    identical: bool = Field(description="True when the runs' content is the same (times ignored)")
    document_changes: DocumentChanges = Field(
        default_factory=DocumentChanges, description="Source documents added, removed and modified, by source path"
    )
    config: list[ConfigChange] = Field(default_factory=list, description="Config keys that changed")
    phases: dict[PhaseName, PhaseDiff] = Field(default_factory=dict, description="Per phase artifact changes")
    documents: list[DocumentChunkDiff] | None = Field(
        default=None, description="With include_chunks: chunk changes grouped by source document"
    )
    chunk_summary: ChunkDiffSummary | None = Field(default=None, description="With include_chunks: counts")


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if key in TIMING_FIELDS:
                continue
            out.update(_flatten(item, f"{prefix}.{key}" if prefix else str(key)))
        return out or {prefix: {}}
    return {prefix: value}


def config_changes(a: dict[str, Any], b: dict[str, Any]) -> list[ConfigChange]:
    """Changed leaf keys between two frozen configs (lists compared whole)."""
    fa = {k: v for k, v in _flatten(a).items() if k.split(".")[0] not in _IGNORED_CONFIG_KEYS}
    fb = {k: v for k, v in _flatten(b).items() if k.split(".")[0] not in _IGNORED_CONFIG_KEYS}
    keys = sorted(k for k in fa.keys() | fb.keys() if fa.get(k) != fb.get(k))
    return [ConfigChange(key=k, a=fa.get(k), b=fb.get(k)) for k in keys]


def _artifacts(layout: RunLayout, artifacts: list[ArtifactRecord]) -> dict[str, ArtifactRecord]:
    """A phase's artifacts by path, the files of its file lists one by one (the lists themselves
    are an index of those files, not content)."""
    out = {a.path: a for a in artifacts if a.files is None}
    listed = listed_files(layout, [a for a in artifacts if a.files is not None])
    out.update({path: ArtifactRecord(path=path, sha256=digest) for path, digest in listed.items()})
    return out


def _phase_diff(layout_a: RunLayout, layout_b: RunLayout) -> dict[PhaseName, PhaseDiff]:
    ma, mb = load_manifest(layout_a), load_manifest(layout_b)
    out: dict[PhaseName, PhaseDiff] = {}
    for name in PHASES:
        pa = ma.phases.get(name)  # type: ignore[call-overload]
        pb = mb.phases.get(name)  # type: ignore[call-overload]
        arts_a = _artifacts(layout_a, pa.artifacts) if pa else {}
        arts_b = _artifacts(layout_b, pb.artifacts) if pb else {}
        diff = PhaseDiff(
            status_a=pa.status if pa else None,
            status_b=pb.status if pb else None,
            outputs_a=pa.outputs.count if pa else 0,
            outputs_b=pb.outputs.count if pb else 0,
            errors_a=len(pa.errors) if pa else 0,
            errors_b=len(pb.errors) if pb else 0,
        )
        for path in sorted(arts_a.keys() | arts_b.keys()):
            x, y = arts_a.get(path), arts_b.get(path)
            change = ArtifactChange(
                path=path,
                sha_a=short(x.sha256) if x else None,
                sha_b=short(y.sha256) if y else None,
                records_a=x.records if x else None,
                records_b=y.records if y else None,
            )
            if x is None:
                diff.added.append(change)
            elif y is None:
                diff.removed.append(change)
            elif x.sha256 != y.sha256:
                diff.modified.append(change)
            else:
                diff.unchanged += 1
        out[name] = diff  # type: ignore[index]
    return out


def _source_hashes(layout: RunLayout) -> dict[str, str]:
    if not layout.raw_manifest.is_file():
        return {}
    return {str(row["uri"]): str(row["sha256"]) for row in iter_jsonl(layout.raw_manifest)}


def document_changes(layout_a: RunLayout, layout_b: RunLayout) -> DocumentChanges:
    """The sources added, removed and modified (by the SHA-256 of their bytes), sorted by path."""
    a, b = _source_hashes(layout_a), _source_hashes(layout_b)
    return DocumentChanges(
        added=sorted(b.keys() - a.keys()),
        removed=sorted(a.keys() - b.keys()),
        modified=sorted(uri for uri in a.keys() & b.keys() if a[uri] != b[uri]),
        unchanged=sum(1 for uri in a.keys() & b.keys() if a[uri] == b[uri]),
    )


def _load_chunks(layout: RunLayout) -> dict[str, list[DocumentChunk]]:
    by_doc: dict[str, list[DocumentChunk]] = {}
    if not layout.chunks.is_file():
        return by_doc
    for row in iter_jsonl(layout.chunks):
        chunk = DocumentChunk.model_validate(row)
        key = chunk.source.uri + (f"#{chunk.source.record_id}" if chunk.source.record_id else "")
        by_doc.setdefault(key, []).append(chunk)
    for chunks in by_doc.values():
        chunks.sort(key=lambda c: (c.chunk_index, c.chunk_id))
    return by_doc


def _ref(chunk: DocumentChunk) -> ChunkRef:
    return ChunkRef(
        chunk_id=chunk.chunk_id,
        chunk_index=chunk.chunk_index,
        section=chunk.metadata.heading_path or chunk.position.section,
        chars=chunk.content.char_count,
    )


def text_diff(a: str, b: str, max_lines: int = MAX_DIFF_LINES) -> str:
    """A short unified diff of two texts (one line of context, at most ``max_lines`` lines)."""
    lines = list(difflib.unified_diff(a.splitlines(), b.splitlines(), "a", "b", n=1, lineterm=""))[2:]
    if len(lines) > max_lines:
        lines = [*lines[:max_lines], f"… {len(lines) - max_lines} more diff lines"]
    return "\n".join(lines)


def _document_diff(uri: str, a: list[DocumentChunk], b: list[DocumentChunk]) -> DocumentChunkDiff | None:
    if not a:
        return DocumentChunkDiff(uri=uri, change="added", added=[_ref(c) for c in b])
    if not b:
        return DocumentChunkDiff(uri=uri, change="removed", removed=[_ref(c) for c in a])
    keys_a = [sha256_text(c.embedding_text()) for c in a]
    keys_b = [sha256_text(c.embedding_text()) for c in b]
    doc = DocumentChunkDiff(uri=uri, change="modified")
    matcher = difflib.SequenceMatcher(a=keys_a, b=keys_b, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            doc.unchanged += i2 - i1
            continue
        pairs = min(i2 - i1, j2 - j1) if op == "replace" else 0
        for k in range(pairs):
            ca, cb = a[i1 + k], b[j1 + k]
            doc.modified.append(
                ChunkChange(a=_ref(ca), b=_ref(cb), diff=text_diff(ca.embedding_text(), cb.embedding_text()))
            )
        doc.removed.extend(_ref(c) for c in a[i1 + pairs : i2])
        doc.added.extend(_ref(c) for c in b[j1 + pairs : j2])
    if not (doc.added or doc.removed or doc.modified):
        return None
    return doc


def chunk_diff(layout_a: RunLayout, layout_b: RunLayout) -> tuple[list[DocumentChunkDiff], ChunkDiffSummary]:
    """Chunk changes grouped by source document, sorted by uri."""
    docs_a, docs_b = _load_chunks(layout_a), _load_chunks(layout_b)
    out: list[DocumentChunkDiff] = []
    summary = ChunkDiffSummary()
    for uri in sorted(docs_a.keys() | docs_b.keys()):
        doc = _document_diff(uri, docs_a.get(uri, []), docs_b.get(uri, []))
        if doc is None:
            summary.chunks_unchanged += len(docs_a[uri])
            continue
        out.append(doc)
        summary.chunks_added += len(doc.added)
        summary.chunks_removed += len(doc.removed)
        summary.chunks_modified += len(doc.modified)
        summary.chunks_unchanged += doc.unchanged
        if doc.change == "added":
            summary.documents_added += 1
        elif doc.change == "removed":
            summary.documents_removed += 1
        else:
            summary.documents_modified += 1
    return out, summary


def run_diff(layout_a: RunLayout, layout_b: RunLayout, include_chunks: bool = False) -> RunDiffOutput:
    """Compare two runs (A is the older/base side)."""
    config = config_changes(read_frozen_config(layout_a), read_frozen_config(layout_b))
    phases = _phase_diff(layout_a, layout_b)
    documents: list[DocumentChunkDiff] | None = None
    summary: ChunkDiffSummary | None = None
    if include_chunks:
        documents, summary = chunk_diff(layout_a, layout_b)
    changes = document_changes(layout_a, layout_b)
    identical = not config and not any(p.changed for p in phases.values()) and not documents and not changes.listed()
    return RunDiffOutput(
        run_id_a=layout_a.run_id,
        run_id_b=layout_b.run_id,
        identical=identical,
        document_changes=changes,
        config=config,
        phases=phases,
        documents=documents,
        chunk_summary=summary,
    )


# ---------------------------------------------------------------- rendering
def _value(value: Any) -> str:
    import json

    return json.dumps(value, ensure_ascii=False)


def _records(a: int | None, b: int | None) -> str:
    if a is None and b is None:
        return ""
    if a == b:
        return f" ({a} records)"
    return f" ({a if a is not None else '-'} → {b if b is not None else '-'} records)"


def _chunk_line(chunk: ChunkRef, code: str = "") -> str:
    return f"{code}{short(chunk.chunk_id)}{code} #{chunk.chunk_index} {chunk.section or ''}".rstrip()


def _modified_line(change: ChunkChange, code: str = "") -> str:
    return f"{code}{short(change.a.chunk_id)}{code} → {_chunk_line(change.b, code)}"


# An artifact named by its content hash (raw/<sha256>.md, extracted/<sha256>.txt): the documents
# list already names what changed, so the text form counts these instead of listing them.
_CONTENT_FILE = re.compile(r"(^|/)[0-9a-f]{64}(\.[A-Za-z0-9]+)?$")
_MARKS = {"added": "+", "removed": "-", "modified": "~"}


def _artifact_lines(p: PhaseDiff) -> list[str]:
    lines: list[str] = []
    hashed = {"added": 0, "removed": 0, "modified": 0}
    for kind, changes in (("added", p.added), ("removed", p.removed), ("modified", p.modified)):
        for x in changes:
            if _CONTENT_FILE.search(x.path):
                hashed[kind] += 1
            elif kind == "added":
                lines.append(f"  + {x.path} {x.sha_b}{_records(None, x.records_b)}")
            elif kind == "removed":
                lines.append(f"  - {x.path} {x.sha_a}{_records(x.records_a, None)}")
            else:
                lines.append(f"  ~ {x.path} {x.sha_a} → {x.sha_b}{_records(x.records_a, x.records_b)}")
    if any(hashed.values()):
        counted = ", ".join(f"{n} {kind}" for kind, n in hashed.items() if n)
        lines.insert(0, f"  per-document files (named by content hash): {counted}")
    return lines


def render_text(diff: RunDiffOutput) -> str:
    """Plain-text report for the terminal: the changed documents first, by source path."""
    lines = [f"run diff {diff.run_id_a} → {diff.run_id_b}"]
    if diff.identical:
        lines.append("identical (timing fields ignored)")
        return "\n".join(lines) + "\n"
    changes = diff.document_changes
    lines.append(f"documents: {changes.counts()}")
    lines.extend(f"  {_MARKS[kind]} {uri}" for kind, uri in changes.listed())
    if diff.config:
        lines.append("config:")
        lines.extend(f"  ~ {c.key}: {_value(c.a)} → {_value(c.b)}" for c in diff.config)
    for name, p in diff.phases.items():
        if not p.changed:
            continue
        head = f"{name}: {len(p.added)} added, {len(p.removed)} removed, {len(p.modified)} modified"
        head += f", {p.unchanged} unchanged artifacts"
        if p.status_a != p.status_b:
            head += f"; status {p.status_a} → {p.status_b}"
        if p.errors_a != p.errors_b:
            head += f"; errors {p.errors_a} → {p.errors_b}"
        lines.append(head)
        lines.extend(_artifact_lines(p))
    if diff.documents is not None and diff.chunk_summary is not None:
        s = diff.chunk_summary
        lines.append(
            f"chunks: {s.chunks_added} added, {s.chunks_removed} removed, {s.chunks_modified} modified, "
            f"{s.chunks_unchanged} unchanged"
        )
        for doc in diff.documents:
            lines.append(f"  {doc.change} {doc.uri}")
            lines.extend(f"    + {_chunk_line(c)}" for c in doc.added)
            lines.extend(f"    - {_chunk_line(c)}" for c in doc.removed)
            for m in doc.modified:
                lines.append(f"    ~ {_modified_line(m)}")
                lines.extend(f"        {line}" for line in m.diff.splitlines())
    return "\n".join(lines) + "\n"


# A pull request comment names this many changed documents, and this many chunks of each.
MAX_MD_DOCUMENTS = 25
MAX_MD_CHUNKS = 5


def _changed_documents(documents: list[DocumentChunkDiff], max_documents: int, max_chunks: int) -> list[str]:
    """The changed documents and their changed chunks, capped, with "… N more" for the rest."""
    lines = ["**Changed documents**", ""]
    for doc in documents[:max_documents]:
        lines.append(f"- {doc.change} `{doc.uri}`")
        chunks = [f"added {_chunk_line(c, '`')}" for c in doc.added]
        chunks += [f"removed {_chunk_line(c, '`')}" for c in doc.removed]
        chunks += [f"modified {_modified_line(m, '`')}" for m in doc.modified]
        lines += [f"  - {c}" for c in chunks[:max_chunks]]
        if len(chunks) > max_chunks:
            lines.append(f"  - … {len(chunks) - max_chunks} more chunks")
    if len(documents) > max_documents:
        lines.append(f"- … {len(documents) - max_documents} more documents")
    lines.append("")
    return lines


def render_markdown(
    diff: RunDiffOutput,
    *,
    with_text_diffs: bool = False,
    max_documents: int = MAX_MD_DOCUMENTS,
    max_chunks: int = MAX_MD_CHUNKS,
) -> str:
    """GitHub-flavoured markdown, ready to post as a pull request comment: the artifact-count
    table as the summary, then the changed documents with their changed chunks (capped; the text
    diffs of every chunk with ``with_text_diffs``, i.e. ``--include-chunks``)."""
    lines = ["### IndexFoundry run diff", "", f"`{diff.run_id_a}` → `{diff.run_id_b}`", ""]
    if diff.identical:
        lines.append("No content changes (timing fields ignored).")
        return "\n".join(lines) + "\n"
    changes = diff.document_changes
    lines += [f"**Documents:** {changes.counts()}", ""]
    listed = changes.listed()
    lines += [f"- {kind} `{uri}`" for kind, uri in listed[:max_documents]]
    if len(listed) > max_documents:
        lines.append(f"- … {len(listed) - max_documents} more documents")
    if listed:
        lines.append("")
    if diff.config:
        lines += ["**Config changes**", "", "| key | before | after |", "| --- | --- | --- |"]
        lines += [f"| `{c.key}` | `{_value(c.a)}` | `{_value(c.b)}` |" for c in diff.config]
        lines.append("")
    lines += [
        "| phase | added | removed | modified | unchanged | records |",
        "| --- | ---: | ---: | ---: | ---: | --- |",
    ]
    for name, p in diff.phases.items():
        records = f"{p.outputs_a} → {p.outputs_b}" if p.outputs_a != p.outputs_b else str(p.outputs_b)
        lines.append(f"| {name} | {len(p.added)} | {len(p.removed)} | {len(p.modified)} | {p.unchanged} | {records} |")
    lines.append("")
    if diff.documents is not None and diff.chunk_summary is not None:
        s = diff.chunk_summary
        lines.append(
            f"**Chunks:** {s.chunks_added} added, {s.chunks_removed} removed, {s.chunks_modified} modified, "
            f"{s.chunks_unchanged} unchanged in {s.documents_added} added, {s.documents_removed} removed and "
            f"{s.documents_modified} modified documents."
        )
        lines.append("")
        if not with_text_diffs:
            lines += _changed_documents(diff.documents, max_documents, max_chunks)
            return "\n".join(lines) + "\n"
        for doc in diff.documents:
            lines += ["<details>", f"<summary>{doc.change}: <code>{html.escape(doc.uri)}</code></summary>", ""]
            lines += [f"- added {_chunk_line(c, '`')}" for c in doc.added]
            lines += [f"- removed {_chunk_line(c, '`')}" for c in doc.removed]
            for m in doc.modified:
                # A four-backtick fence: the chunk text may itself hold ``` fences.
                lines.append(f"- modified {_modified_line(m, '`')}")
                lines += ["", "  ````diff", *[f"  {line}" for line in m.diff.splitlines()], "  ````", ""]
            lines += ["", "</details>", ""]
    return "\n".join(lines) + "\n"
