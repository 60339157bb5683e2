"""Incremental runs (``pipeline run --base RUN``, and reruns in place): take what did not change
from the base run (or from the run's own last committed phase).

- connect: the connect phase itself uses ``ctx.base_layout`` (conditional requests for URLs;
  folder files are only copied).
- extract: a raw file with the same SHA-256 (and uri and per-source options) as in the base run
  (without one, the 'latest' a plain rerun of the same sources replaces: ``ctx.follows``),
  extracted there under the same extract config hash, phase version and extractor versions, is
  not extracted again: its text files are hard-linked (or copied) and its document records
  copied (``ExtractReuse``: the base run's extraction read once per phase run, the files it
  copies verified in one batch).
- normalize: documents chunked by an earlier run come from the runs folder's work cache
  (``phases/normalize/build.py``); unchanged chunks keep their ids, text and hashes.
- index: the (model, text hash) embedding cache shared by the runs folder means unchanged
  chunks are never embedded again.

What is copied is exactly what extraction would have written, so a run with a base has
byte-identical artifacts to a run from scratch over the same inputs.
"""

from __future__ import annotations

import functools
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from indexfoundry.models.artifacts import ExtractionReport
from indexfoundry.models.manifests import PhaseManifest
from indexfoundry.models.records import ExtractedDocument, RawRecord
from indexfoundry.phases.base import completed_phase
from indexfoundry.storage.artifacts import read_artifact
from indexfoundry.storage.atomic import iter_jsonl, link_or_copy, loads_json
from indexfoundry.storage.filehashes import file_sha256_many
from indexfoundry.storage.hashing import canonical_json, sha256_json
from indexfoundry.storage.layout import RunLayout
from indexfoundry.storage.manifest import listed_files

if TYPE_CHECKING:
    from indexfoundry.phases.base import PhaseContext


def _raw_key(raw: RawRecord) -> tuple[str, str, str | None]:
    """What makes a raw file's extraction the same: its uri, hash and per-source options (an
    in-memory key: the index is built anew by every process)."""
    options = canonical_json(raw.extract_options) if raw.extract_options is not None else None
    return (raw.uri, raw.sha256, options)


@dataclass(frozen=True)
class TakenDocument:
    """A line of the base run's ``documents.jsonl``, taken as it is (it is not validated and
    dumped again: the line is what the phase would write), with the fields the phase reads."""

    line: bytes  # newline included
    doc_id: str
    uri: str
    format: str
    char_count: int
    text_path: str
    pages_path: str | None
    record_id: str | None
    commit: str | None

    @classmethod
    def of(cls, line: bytes, row: dict[str, Any]) -> TakenDocument:
        return cls(
            line,
            str(row["doc_id"]),
            str(row["uri"]),
            str(row["format"]),
            int(row["char_count"]),
            str(row["text_path"]),
            row.get("pages_path"),
            row.get("record_id"),
            row.get("commit"),
        )

    def model(self) -> ExtractedDocument:
        return ExtractedDocument.model_validate(loads_json(self.line))


Document = ExtractedDocument | TakenDocument


@dataclass
class _ExtractIndex:
    """What the base run extracted, by raw file key."""

    documents: dict[tuple[str, str, str | None], list[TakenDocument]] = field(default_factory=dict)
    warnings: dict[tuple[str, str, str | None], list[str]] = field(default_factory=dict)
    artifact_hashes: dict[str, str] = field(default_factory=dict)


@functools.lru_cache(maxsize=4)
def _load_extract_index(root: str, manifest_stamp: tuple[int, int], config_hash: str, tools_hash: str) -> _ExtractIndex:
    base = RunLayout(Path(root))
    return _build_extract_index(base, completed_phase(base, "extract"), config_hash, tools_hash)


def _build_extract_index(
    base: RunLayout, phase: PhaseManifest | None, config_hash: str, tools_hash: str
) -> _ExtractIndex:
    index = _ExtractIndex()
    if (
        phase is None
        or phase.config_hash != config_hash
        or sha256_json({"version": phase.phase_version, "tools": phase.tool_versions}) != tools_hash
    ):
        return index
    failed_uris = {e.uri for e in phase.errors if e.uri is not None}
    # Raw file keys (``_raw_key``) by uri, from the raw manifest's rows as they are.
    raws: dict[str, tuple[str, str, str | None]] = {}
    for row in iter_jsonl(base.raw_manifest):
        options = row.get("extract_options")
        raws[row["uri"]] = (row["uri"], row["sha256"], canonical_json(options) if options is not None else None)
    for line in base.documents.read_bytes().splitlines(keepends=True):
        if not line.strip():
            continue
        row = loads_json(line)
        raw = raws.get(row["uri"])
        if raw is None or raw[1] != row["content_hash"] or row["uri"] in failed_uris:
            continue
        index.documents.setdefault(raw, []).append(TakenDocument.of(line, row))
    report = read_artifact(base.extraction_report, ExtractionReport)
    for warning in report.warnings or []:
        for uri in raws:
            if warning.startswith(f"{uri}: "):
                index.warnings.setdefault(raws[uri], []).append(warning)
    index.artifact_hashes = listed_files(base, phase.artifacts)
    return index


# In-place indexes built by the extract phases under way, by run, committed phase and config.
_in_place_indexes: dict[str, _ExtractIndex] = {}
_in_place_lock = threading.Lock()


def _extract_index(ctx: PhaseContext) -> _ExtractIndex | None:
    from indexfoundry.phases.extract import ExtractPhase

    phase = ExtractPhase()
    config_hash = sha256_json(phase.config_slice(ctx.config))
    tools_hash = sha256_json({"version": phase.version, "tools": phase.tool_versions()})
    base = reuse_source(ctx)
    previous = ctx.previous_phase
    if base == ctx.layout and previous is not None:
        # A rerun in place reuses its own last committed extraction the same way: the raw
        # manifest connect just wrote decides which files are unchanged (same uri, hash,
        # options), the committed manifest's artifact hashes which files may be copied.
        if previous.config_hash != config_hash or not ctx.layout.documents.is_file():
            return None
        # Built once per phase run, not once per raw file (that was quadratic in the files).
        stat = ctx.layout.documents.stat()
        key = (str(ctx.layout.root), previous.fingerprint, previous.completed_at, stat.st_mtime_ns, stat.st_size)
        key_text = sha256_json([*key, config_hash, tools_hash])
        with _in_place_lock:
            found = _in_place_indexes.get(key_text)
        if found is None:
            found = _build_extract_index(ctx.layout, previous, config_hash, tools_hash)
            with _in_place_lock:
                _in_place_indexes[key_text] = found
                while len(_in_place_indexes) > 4:
                    del _in_place_indexes[next(iter(_in_place_indexes))]
        return found
    if base is None or not base.manifest.is_file():
        return None
    stat = base.manifest.stat()
    return _load_extract_index(str(base.root), (stat.st_mtime_ns, stat.st_size), config_hash, tools_hash)


def reuse_source(ctx: PhaseContext) -> RunLayout | None:
    """Where unchanged extractions are copied from: the base run; in a rerun in place, this run;
    in a plain rerun, the 'latest' it replaces (``ctx.follows``)."""
    if ctx.base_layout is not None:
        return ctx.base_layout
    return ctx.layout if ctx.previous_phase is not None else ctx.follows


class ExtractReuse:
    """What this phase run takes from the base run's extraction (or, in place, from its own last
    committed one): built once per phase run, with every text and pages file it may copy verified
    against the base run's manifest in one batch of hash look-ups (by stat when unchanged since
    hashed: ``storage/filehashes.py``), not once per raw file."""

    def __init__(self, ctx: PhaseContext, raws: list[RawRecord]) -> None:
        self.ctx = ctx
        self.base = None if ctx.force else reuse_source(ctx)
        self.index = _extract_index(ctx) if self.base is not None else None
        self.verified: set[str] = set()
        if self.base is None or self.index is None:
            return
        index = self.index
        wanted = sorted(
            {
                rel
                for raw in raws
                for doc in index.documents.get(_raw_key(raw), [])
                for rel in (doc.text_path, doc.pages_path)
                if rel is not None and rel in index.artifact_hashes
            }
        )
        # Paths as strings, here and in ``take``: 20,000 texts make no ``Path`` each.
        self._from, self._to = os.fspath(self.base.root), os.fspath(ctx.layout.root)
        digests = file_sha256_many([os.path.join(self._from, rel) for rel in wanted])
        hashes = index.artifact_hashes
        self.verified = {rel for rel, digest in zip(wanted, digests, strict=True) if digest == hashes[rel]}

    def take(
        self, raw: RawRecord, documents: list[Document], written: dict[str, str | None], warnings: list[str]
    ) -> bool:
        """Copy the base run's extraction of ``raw`` into this run when it is unchanged.

        Appends the documents and warnings, records the files written, and returns True; returns
        False (nothing done) when the raw file must be extracted.
        """
        if self.base is None or self.index is None:
            return False
        key = _raw_key(raw)
        docs = self.index.documents.get(key)
        if not docs:
            return False
        base, ctx = self.base, self.ctx
        copies: list[str] = []
        for doc in docs:
            for rel in (doc.text_path, doc.pages_path):
                if rel is None:
                    continue
                if rel not in self.verified:
                    return False
                copies.append(rel)
        in_place = base.root == ctx.layout.root
        hashes = self.index.artifact_hashes
        for rel in copies:
            if rel not in written:
                if not in_place:  # in place the file is already there, with the bytes just verified
                    # a hard link where possible
                    link_or_copy(os.path.join(self._from, rel), os.path.join(self._to, rel))
                written[rel] = hashes[rel]  # verified against the base run's file list
        documents.extend(docs)
        warnings.extend(self.index.warnings.get(key, []))
        ctx.reuse_counts["extract"] = ctx.reuse_counts.get("extract", 0) + len(docs)
        return True
