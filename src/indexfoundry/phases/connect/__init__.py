"""Phase 1, connect: bring every source's bytes into ``raw/`` as content-addressed files.

Writes ``raw/<sha256>.<ext>`` and ``raw/raw_manifest.jsonl`` (sorted). Fetch times go to
the phase manifest's ``details``, never into the content artifacts.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from indexfoundry.errors import IndexFoundryError
from indexfoundry.models.config import FolderSource, PdfSource, PipelineConfig, SitemapSource, UrlSource
from indexfoundry.models.records import RawRecord
from indexfoundry.phases.base import Phase, PhaseContext, PhaseOutcome, package_version
from indexfoundry.phases.connect.folder import FolderScan, scan_folder
from indexfoundry.phases.connect.sniff import extension_for
from indexfoundry.pipeline.clock import utc_now
from indexfoundry.storage.atomic import atomic_write_jsonl, new_temp_file
from indexfoundry.storage.hashing import sha256_bytes, sha256_file, sha256_json
from indexfoundry.storage.layout import RunLayout


def store_raw_bytes(layout: RunLayout, data: bytes, ext: str) -> tuple[str, Path]:
    """Store bytes as ``raw/<sha256>.<ext>`` (atomic, skipped when already there)."""
    from indexfoundry.storage.atomic import atomic_write_bytes

    digest = sha256_bytes(data)
    target = layout.raw_file(digest, ext)
    if not target.is_file():
        atomic_write_bytes(target, data)
    return digest, target


def store_raw_file(layout: RunLayout, source: Path, ext: str) -> tuple[str, Path]:
    """Copy a local file into ``raw/`` under the hash of the bytes actually copied.

    Hashing the copy (not the original) means a file that changes while being read is
    stored consistently: the name always matches the bytes.
    """
    layout.raw_dir.mkdir(parents=True, exist_ok=True)
    fd, tmp = new_temp_file(layout.raw_dir, "copy")
    try:
        with os.fdopen(fd, "wb") as out, source.open("rb") as src:
            shutil.copyfileobj(src, out, 1 << 20)
            out.flush()
            os.fsync(out.fileno())
        digest = sha256_file(tmp)
        target = layout.raw_file(digest, ext)
        if target.is_file():
            tmp.unlink()
        else:
            os.replace(tmp, target)
        return digest, target
    except BaseException:
        if tmp.exists():
            tmp.unlink()
        raise


class ConnectPhase(Phase):
    name = "connect"
    version = "1"

    def __init__(self) -> None:
        self._scans: dict[int, FolderScan | IndexFoundryError] = {}

    def config_slice(self, config: PipelineConfig) -> Any:
        return config.connect.model_dump(mode="json")

    def tool_versions(self) -> dict[str, str]:
        return {**super().tool_versions(), "httpx": package_version("httpx")}

    def _scan(self, index: int, source: FolderSource) -> FolderScan | IndexFoundryError:
        if index not in self._scans:
            try:
                self._scans[index] = scan_folder(source)
            except IndexFoundryError as error:
                self._scans[index] = error
        return self._scans[index]

    def input_hashes(self, ctx: PhaseContext) -> list[str]:
        hashes: list[str] = []
        for index, source in enumerate(ctx.config.connect.sources):
            if isinstance(source, FolderSource):
                scan = self._scan(index, source)
                if isinstance(scan, IndexFoundryError):
                    hashes.append(sha256_json({"error": scan.code, "source": source.path}))
                    continue
                hashes.extend(sha256_json({"uri": f.uri, "sha256": f.sha256}) for f in scan.files)
                hashes.extend(sha256_json({"uri": uri, "error": e.code}) for uri, e in scan.errors)
            else:
                # Remote sources cannot be known without fetching; a rerun in place keeps
                # what was fetched. Nightly refreshes use a new run (conditional requests).
                hashes.append(sha256_json(source.model_dump(mode="json")))
        return sorted(hashes)

    def run(self, ctx: PhaseContext) -> PhaseOutcome:
        records: list[RawRecord] = []
        fetched_at: dict[str, str] = {}
        sources = ctx.config.connect.sources
        with ctx.progress.task("connect", total=len(sources)) as task:
            for index, source in enumerate(sources):
                try:
                    if isinstance(source, FolderSource):
                        records.extend(self._run_folder(ctx, index, source, fetched_at))
                    elif isinstance(source, PdfSource) and "://" not in source.source:
                        records.extend(self._run_local_pdf(ctx, source, fetched_at))
                    else:
                        records.extend(self._run_remote(ctx, source, fetched_at))
                except IndexFoundryError as error:
                    ctx.record_error(error, "connect", uri=_source_label(source))
                task.advance()
        records = _unique_sorted(records)
        layout = ctx.layout
        atomic_write_jsonl(layout.raw_manifest, records)
        _prune_raw(layout, {r.path for r in records})
        artifacts = [*sorted({layout.root / r.path for r in records}), layout.raw_manifest]
        return PhaseOutcome(
            artifacts=artifacts,
            output_count=len(records),
            stats={
                "sources": len(sources),
                "files": len(records),
                "bytes": sum(r.size_bytes for r in records),
            },
            details={"fetched_at": fetched_at},
            new=len(records),
            record_counts={"raw/raw_manifest.jsonl": len(records)},
        )

    def _run_folder(
        self, ctx: PhaseContext, index: int, source: FolderSource, fetched_at: dict[str, str]
    ) -> list[RawRecord]:
        scan = self._scan(index, source)
        if isinstance(scan, IndexFoundryError):
            raise scan
        for uri, error in scan.errors:
            ctx.record_error(error, "connect", uri=uri)
        out: list[RawRecord] = []
        for file in scan.files:
            ext = extension_for(file.content_type, file.relative_path)
            try:
                digest, target = store_raw_file(ctx.layout, file.path, ext)
            except OSError as exc:
                from indexfoundry.errors import ParseError

                ctx.record_error(ParseError(f"cannot copy {file.uri}: {exc}"), "connect", uri=file.uri)
                continue
            fetched_at[file.uri] = utc_now()
            out.append(
                RawRecord(
                    uri=file.uri,
                    sha256=digest,
                    size_bytes=target.stat().st_size,
                    content_type=file.content_type,
                    ext=ext,
                    path=target.relative_to(ctx.layout.root).as_posix(),
                    source_kind="folder",
                    source_name=source.name or Path(source.path).name,
                    relative_path=file.relative_path,
                    extract_options=({"records": source.records.model_dump(mode="json")} if source.records else None),
                )
            )
        return out

    def _run_local_pdf(self, ctx: PhaseContext, source: PdfSource, fetched_at: dict[str, str]) -> list[RawRecord]:
        from indexfoundry.errors import ConfigInvalid

        path = Path(source.source)
        if not path.is_file():
            raise ConfigInvalid(f"PDF '{source.source}' does not exist", suggestion="Check the path")
        digest, target = store_raw_file(ctx.layout, path, "pdf")
        uri = source.name or path.name
        fetched_at[uri] = utc_now()
        return [
            RawRecord(
                uri=uri,
                sha256=digest,
                size_bytes=target.stat().st_size,
                content_type="application/pdf",
                ext="pdf",
                path=target.relative_to(ctx.layout.root).as_posix(),
                source_kind="pdf",
                source_name=uri,
                relative_path=path.name,
            )
        ]

    def _run_remote(
        self,
        ctx: PhaseContext,
        source: UrlSource | SitemapSource | PdfSource,
        fetched_at: dict[str, str],
    ) -> list[RawRecord]:
        raise IndexFoundryError(
            f"{source.type} sources are not supported yet",
            code="CONFIG_INVALID",
            suggestion="Use a folder source",
        )


def _source_label(source: Any) -> str:
    for attr in ("url", "path", "source"):
        value = getattr(source, attr, None)
        if isinstance(value, str):
            return value
    return str(source)


def _unique_sorted(records: list[RawRecord]) -> list[RawRecord]:
    seen: dict[tuple[str, str], RawRecord] = {}
    for record in records:
        seen.setdefault((record.uri, record.sha256), record)
    return [seen[key] for key in sorted(seen)]


def _prune_raw(layout: RunLayout, keep: set[str]) -> None:
    """Remove raw files no longer referenced (a rerun in place after sources changed)."""
    for path in layout.raw_dir.iterdir():
        rel = path.relative_to(layout.root).as_posix()
        if path.is_file() and path != layout.raw_manifest and rel not in keep:
            path.unlink()
