"""``export llms-txt``: an llms.txt (https://llmstxt.org) of a run, for clients without MCP.

Writes, into the run's ``served/`` folder or any folder:
- ``llms.txt``: an H1 title, a ``>`` summary, then one H2 section per folder (or site) with
  a link per document and a one-line description (its first sentence);
- ``pages/<document>.md``: each document's extracted text, which the links point to
  (relative links, so every link resolves wherever the folder is published);
- ``llms-full.txt``: every document's text in one file, each page between clear boundaries.

Content is derived from the run's extracted documents only, sorted by uri: the same run
gives byte-identical files.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlsplit

from pydantic import Field

from indexfoundry.errors import ConfigInvalid
from indexfoundry.models.base import Strict
from indexfoundry.models.records import ExtractedDocument
from indexfoundry.storage.atomic import atomic_write_text, iter_jsonl
from indexfoundry.storage.layout import RunLayout
from indexfoundry.storage.manifest import load_manifest, read_frozen_config

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")
_MARKUP = re.compile(r"[`*_]|\[([^\]]*)\]\([^)]*\)")
PAGE_BOUNDARY = "=" * 72


class LlmsTxtOutput(Strict):
    """Files written by the llms.txt export."""

    run_id: str = Field(description="Run exported")
    llms_txt: str = Field(description="Path of llms.txt")
    llms_full_txt: str = Field(description="Path of llms-full.txt")
    pages_dir: str = Field(description="Folder of the per-document markdown pages")
    pages: int = Field(description="Documents written")
    sections: int = Field(description="H2 sections in llms.txt")


def _components(doc: ExtractedDocument) -> list[str]:
    uri = doc.uri
    if "://" in uri:
        parts = urlsplit(uri)
        raw = [parts.netloc, *parts.path.split("/")]
        if parts.query:
            raw.append(parts.query)
    else:
        raw = uri.split("/")
    out = [_UNSAFE.sub("_", part).strip("._") for part in raw]
    return [part for part in out if part] or ["document"]


def _section(doc: ExtractedDocument) -> str:
    parts = _components(doc)
    if "://" in doc.uri:
        return parts[0]
    return parts[1] if len(parts) > 2 else parts[0]


def _page_path(doc: ExtractedDocument, taken: set[str]) -> str:
    parts = _components(doc)
    if doc.record_id is not None:
        parts[-1] = f"{parts[-1]}_{_UNSAFE.sub('_', doc.record_id).strip('._') or 'record'}"
    rel = "/".join(parts)
    if not rel.endswith(".md"):
        rel += ".md"
    if rel in taken:
        rel = f"{rel[:-3]}-{doc.doc_id[:8]}.md"
    taken.add(rel)
    return f"pages/{rel}"


def first_sentence(text: str, limit: int = 160) -> str:
    """The document's first prose sentence (headings, front matter and code skipped)."""
    in_code = False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            in_code = not in_code
            continue
        if in_code or not stripped or stripped.startswith(("#", "---", "|", "<", ">", "!", "- [", "[")):
            continue
        clean = " ".join(_MARKUP.sub(lambda m: m.group(1) or "", stripped).split())
        if len(clean) < 3:
            continue
        sentence = _SENTENCE_END.split(clean, maxsplit=1)[0]
        return sentence if len(sentence) <= limit else sentence[: limit - 1].rstrip() + "…"
    return ""


def _title(doc: ExtractedDocument) -> str:
    return doc.title or _components(doc)[-1].removesuffix(".md")


def _one_line(value: str) -> str:
    return " ".join(value.replace("[", "(").replace("]", ")").split())


def export_llms_txt(layout: RunLayout, out_dir: Path | None = None, title: str | None = None) -> LlmsTxtOutput:
    """Write llms.txt, llms-full.txt and the pages they link to (default: the run's served/)."""
    manifest = load_manifest(layout)
    extract = manifest.phases.get("extract")
    if extract is None or extract.status != "completed":
        raise ConfigInvalid(
            f"run {layout.run_id} has no completed extract phase",
            suggestion=f"Run 'indexfoundry pipeline run CONFIG --run-id {layout.run_id}' first",
        )
    out = out_dir or layout.served_dir
    docs = sorted(
        (ExtractedDocument.model_validate(row) for row in iter_jsonl(layout.documents)),
        key=lambda d: (d.uri, d.record_id or "", d.doc_id),
    )
    config = read_frozen_config(layout)
    sources = [s.get("name") or s.get("url") or s.get("source") or "" for s in config["connect"]["sources"]]
    name = title or ", ".join(sorted({s for s in sources if s})) or "IndexFoundry index"
    taken: set[str] = set()
    sections: dict[str, list[tuple[ExtractedDocument, str, str]]] = {}
    full: list[str] = [f"# {name}", ""]
    pages_dir = RunLayout.llms_pages_dir(out)
    written: set[Path] = set()
    for doc in docs:
        text = (layout.root / doc.text_path).read_text(encoding="utf-8")
        rel = _page_path(doc, taken)
        atomic_write_text(out / rel, text if text.endswith("\n") else text + "\n")
        written.add(out / rel)
        sections.setdefault(_section(doc), []).append((doc, rel, first_sentence(text)))
        full += [
            PAGE_BOUNDARY,
            f"Page: {_one_line(_title(doc))}",
            f"Source: {doc.uri}" + (f" (record {doc.record_id})" if doc.record_id else ""),
            PAGE_BOUNDARY,
            "",
            text.rstrip("\n"),
            "",
        ]
    summary = (
        f"{len(docs)} documents from {', '.join(sorted({s for s in sources if s})) or 'the configured sources'}, "
        "indexed by IndexFoundry. Each link is the document's extracted text as markdown; "
        "llms-full.txt holds every page in one file."
    )
    lines = [f"# {name}", "", f"> {summary}", ""]
    for section in sorted(sections):
        lines += [f"## {section}", ""]
        for doc, rel, description in sections[section]:
            entry = f"- [{_one_line(_title(doc))}]({rel})"
            lines.append(f"{entry}: {description}" if description else entry)
        lines.append("")
    llms = RunLayout.llms_txt(out)
    llms_full = RunLayout.llms_full_txt(out)
    atomic_write_text(llms, "\n".join(lines).rstrip("\n") + "\n")
    atomic_write_text(llms_full, "\n".join(full).rstrip("\n") + "\n")
    if pages_dir.is_dir():
        for path in sorted(pages_dir.rglob("*.md"), reverse=True):
            if path.is_file() and not path.is_symlink() and path not in written:
                path.unlink()
    return LlmsTxtOutput(
        run_id=layout.run_id,
        llms_txt=str(llms),
        llms_full_txt=str(llms_full),
        pages_dir=str(pages_dir),
        pages=len(docs),
        sections=len(sections),
    )
