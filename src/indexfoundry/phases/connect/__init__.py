"""Phase 1, connect: bring every source's bytes into ``raw/`` as content-addressed files.

Writes ``raw/<sha256>.<ext>`` and ``raw/raw_manifest.jsonl`` (sorted). Fetch times go to
the phase manifest's ``details`` (per fetched uri; local files are read at the phase's start),
never into the content artifacts. Folders and local PDFs are
copied; URLs, sitemaps and remote PDFs are fetched through the SSRF-safe client in ``net``,
conditionally against the previous state (``remote``/``url``); URLs that now answer 404/410
are listed in ``details.removed``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from indexfoundry.errors import DISK_FULL_ERRNOS, ConfigInvalid, FileTooLarge, IndexFoundryError, ParseError
from indexfoundry.models.config import (
    CrawlSource,
    FolderSource,
    LlmsTxtSource,
    PdfSource,
    PipelineConfig,
    RenderOptions,
    RepoSource,
    SitemapSource,
    UrlSource,
)
from indexfoundry.models.records import RawRecord
from indexfoundry.phases.base import Phase, PhaseContext, PhaseOutcome, package_version, shared_rows
from indexfoundry.phases.connect.folder import FolderScan, scan_folder
from indexfoundry.phases.connect.report import FetchReport
from indexfoundry.phases.connect.sniff import extension_for, sniff_content_type
from indexfoundry.storage.atomic import atomic_write_jsonl, fsync_file, link_or_copy, new_temp_file
from indexfoundry.storage.clock import utc_now
from indexfoundry.storage.filehashes import file_sha256_many
from indexfoundry.storage.hashing import sha256_bytes, sha256_file, sha256_json
from indexfoundry.storage.layout import RunLayout

if TYPE_CHECKING:
    from indexfoundry.phases.connect.crawl import CrawlReport
    from indexfoundry.phases.connect.llms_txt import LlmsTxtReport
    from indexfoundry.phases.connect.url import UrlJob

# The network side (httpx, the HTML parser, the crawler, git) is imported by the sources that
# use it, when they are read: a run over folders never loads it.


def store_raw_bytes(layout: RunLayout, data: bytes, ext: str) -> tuple[str, Path]:
    """Store bytes as ``raw/<sha256>.<ext>`` (atomic, skipped when already there)."""
    from indexfoundry.storage.atomic import atomic_write_bytes

    digest = sha256_bytes(data)
    target = layout.raw_file(digest, ext)
    if not target.is_file():
        atomic_write_bytes(target, data)
    return digest, target


def store_raw_file(
    layout: RunLayout, source: Path, ext: str, max_bytes: int | None = None, uri: str | None = None
) -> tuple[str, Path]:
    """Copy a local file into ``raw/`` under the hash of the bytes actually copied.

    Hashing the copy (not the original) means a file that changes while being read is
    stored consistently: the name always matches the bytes. With ``max_bytes``, a file that
    grew past the limit after it was scanned is a FILE_TOO_LARGE, never copied whole.
    """
    layout.raw_dir.mkdir(parents=True, exist_ok=True)
    fd, tmp = new_temp_file(layout.raw_dir, "copy")
    try:
        with os.fdopen(fd, "wb") as out, source.open("rb") as src:
            if max_bytes is None:
                shutil.copyfileobj(src, out, 1 << 20)
            else:
                copied = 0
                while block := src.read(1 << 20):
                    copied += len(block)
                    if copied > max_bytes:
                        raise FileTooLarge(
                            f"{uri or source.name} grew past the {max_bytes / 1048576:g} MB limit while being read",
                            suggestion="Raise max_file_size_mb on the source, or exclude the file",
                        )
                    out.write(block)
            out.flush()
            fsync_file(out.fileno())  # deferred to the run's next commit in a pipeline run
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


def _stored_raws(
    layout: RunLayout, base: RunLayout | None, wanted: list[tuple[str, str]]
) -> list[tuple[str, str | None] | None]:
    """For each (digest, ext): ``(raw/<digest>.<ext>, None)`` when this run already holds it,
    ``(that path, the base run's file)`` when the base run does (to hard-link, else copy), so the
    scanned file is not copied again; None when neither holds it. The hashes are looked up in two
    batches (this run's, then the base run's for the rest), not once per file; this run's folder
    is listed once, so a new run looks up none of its names. Paths are strings: 20,000 files
    make no ``Path`` each."""
    names = [f"{digest}.{ext}" for digest, ext in wanted]
    here = os.fspath(layout.raw_dir)
    try:
        present = set(os.listdir(here))
    except FileNotFoundError:
        present = set()
    found: list[tuple[str, str | None] | None] = [None] * len(wanted)
    held_here = [i for i, name in enumerate(names) if name in present]
    targets = [os.path.join(here, names[i]) for i in held_here]
    for i, target, held in zip(held_here, targets, file_sha256_many(targets), strict=True):
        if held == wanted[i][0]:
            found[i] = (target, None)
    missing = [i for i, kept in enumerate(found) if kept is None]
    if base is None or not missing:
        return found
    there = os.fspath(base.raw_dir)
    places = [os.path.join(there, names[i]) for i in missing]
    for i, place, held in zip(missing, places, file_sha256_many(places), strict=True):
        if held == wanted[i][0]:
            found[i] = (os.path.join(here, names[i]), place)
    return found


def copy_folder_files(
    layout: RunLayout,
    source: FolderSource,
    scan: FolderScan,
    fetched_at: dict[str, str] | None = None,
    base: RunLayout | None = None,
) -> tuple[list[RawRecord], list[tuple[str, IndexFoundryError]]]:
    """Copy the files of a scanned folder into ``raw/`` (a file this run or its ``base`` run
    already holds under its scanned hash is kept or hard-linked); unreadable files become errors.
    ``fetched_at`` (a tool's record) gets each copied file's time."""
    errors: list[tuple[str, IndexFoundryError]] = list(scan.errors)
    out: list[RawRecord] = []
    exts = [extension_for(file.content_type, file.relative_path) for file in scan.files]
    stored = _stored_raws(layout, base, [(file.sha256, ext) for file, ext in zip(scan.files, exts, strict=True)])
    raw_dir_name = layout.raw_dir.name
    source_name = source.name or Path(source.path).name
    records_options = {"records": source.records.model_dump(mode="json")} if source.records else None
    for file, ext, kept in zip(scan.files, exts, stored, strict=True):
        try:
            if kept is not None:
                digest, name = file.sha256, f"{file.sha256}.{ext}"
                if kept[1] is not None:
                    link_or_copy(kept[1], kept[0])
                size = file.size_bytes  # a file kept under its scanned hash has the scanned size
            else:
                limit = int(source.max_file_size_mb * 1024 * 1024)
                digest, target = store_raw_file(layout, file.path, ext, limit, uri=file.uri)
                name, size = target.name, target.stat().st_size  # a copy, its own
        except FileTooLarge as exc:
            errors.append((file.uri, exc))
            continue
        except OSError as exc:
            if exc.errno in DISK_FULL_ERRNOS:
                raise  # the run's disk is full, not this file's fault: the phase fails and can be resumed
            errors.append((file.uri, ParseError(f"cannot copy {file.uri}: {exc}", suggestion="Check permissions")))
            continue
        if fetched_at is not None:
            fetched_at[file.uri] = utc_now()
        out.append(
            RawRecord(
                uri=file.uri,
                sha256=digest,
                size_bytes=size,
                content_type=file.content_type,
                ext=ext,
                path=f"{raw_dir_name}/{name}",
                source_kind="folder",
                source_name=source_name,
                relative_path=file.relative_path,
                extract_options=records_options,
            )
        )
    return out, errors


def copy_local_pdf(layout: RunLayout, path: Path, name: str | None = None) -> RawRecord:
    """Copy a local PDF into ``raw/`` (its uri is ``name`` or the file name)."""
    if not path.is_file():
        raise ConfigInvalid(f"PDF '{path}' does not exist", suggestion="Check the path")
    with path.open("rb") as handle:
        head = handle.read(1024)
    if sniff_content_type(path.name, head) != "application/pdf":
        raise ParseError(f"{path.name} is not a PDF", suggestion="Use a folder source for other files")
    digest, target = store_raw_file(layout, path, "pdf")
    uri = name or path.name
    return RawRecord(
        uri=uri,
        sha256=digest,
        size_bytes=target.stat().st_size,
        content_type="application/pdf",
        ext="pdf",
        path=target.relative_to(layout.root).as_posix(),
        source_kind="pdf",
        source_name=uri,
        relative_path=path.name,
    )


class ConnectPhase(Phase):
    name = "connect"
    version = "1"

    def __init__(self) -> None:
        self._scans: dict[int, FolderScan | IndexFoundryError] = {}
        # Per source type, per source: what the run found (crawl summaries, repo commits).
        self._source_details: dict[str, dict[str, Any]] = {}
        # Raw files this run copied or checked against their scanned hash, by path in the run:
        # the file list takes their hashes from here instead of reading 20,000 files again.
        self._verified: dict[str, str] = {}

    def config_slice(self, config: PipelineConfig) -> Any:
        # headers_env_hosts only when set: configs that do not use it keep their fingerprints.
        unset = set() if config.connect.headers_env_hosts else {"headers_env_hosts"}
        return config.connect.model_dump(mode="json", exclude=unset)

    def tool_versions(self) -> dict[str, str]:
        return {**super().tool_versions(), "httpx": package_version("httpx")}

    def same_output_for(self, config: PipelineConfig) -> bool:
        # Folder sources only: their input hashes are every scanned file's uri and content hash,
        # so the raw files and manifest follow from the fingerprint (no fetch times, no ETags). A
        # no-change run takes the followed run's raw files (linked) and manifest, as extract does.
        return all(isinstance(source, FolderSource) for source in config.connect.sources)

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
            elif isinstance(source, RepoSource) and source.path is not None:
                from indexfoundry.phases.connect.repo import local_repo, resolve_commit

                try:
                    commit = resolve_commit(local_repo(source), source.ref)
                except IndexFoundryError as error:
                    commit = f"error:{error.code}"
                hashes.append(sha256_json({"source": source.model_dump(mode="json"), "commit": commit}))
            else:
                # Remote sources cannot be known without fetching: a plain rerun in place keeps
                # what was fetched; --force or a base run refetches conditionally (ETag/304).
                hashes.append(sha256_json(source.model_dump(mode="json")))
        return sorted(hashes)

    def reuse_counts(self, ctx: PhaseContext, reused: int, new: int, output_count: int) -> tuple[int, int]:
        """Raw files already in the base run (same uri and hash), and the others."""
        if ctx.base_layout is None:
            return reused, new
        return shared_rows(ctx.layout.raw_manifest, ctx.base_layout.raw_manifest, "uri", "sha256")

    def run(self, ctx: PhaseContext) -> PhaseOutcome:
        records: list[RawRecord] = []
        fetched_at: dict[str, str] = {}
        self._source_details = {}
        self._verified = {}
        sources = ctx.config.connect.sources
        remote = [s for s in sources if not _is_local(s)]
        report = FetchReport()
        discovered = 0
        with ctx.progress.task("connect", total=len(sources) - len(remote)) as task:
            for index, source in enumerate(sources):
                if not _is_local(source):
                    continue  # fetched below, concurrently
                try:
                    # Local files are read now: their time is the phase's start (storage.manifest.fetch_times).
                    if isinstance(source, FolderSource):
                        records.extend(self._run_folder(ctx, index, source))
                    elif isinstance(source, PdfSource):
                        records.append(copy_local_pdf(ctx.layout, Path(source.source), source.name))
                    elif isinstance(source, RepoSource):
                        records.extend(self._run_repo(ctx, source))
                except IndexFoundryError as error:
                    ctx.record_error(error, "connect", uri=_source_label(source))
                task.advance()
        if remote:
            report, discovered = self._run_remote(ctx, remote)
            for result in report.results:
                fetched_at[result.uri] = result.fetched_at
                if result.record is not None:
                    records.append(result.record)
            for uri, failure in report.errors:
                ctx.record_error(failure, "connect", uri=uri)
            records.extend(report.stale)
        records = _unique_sorted(records)
        layout = ctx.layout
        atomic_write_jsonl(layout.raw_manifest, records)
        _prune_raw(layout, {r.path for r in records})
        removed = sorted(r.uri for r in report.results if r.status == "removed")
        if removed:
            ctx.event("urls_removed", phase="connect", uris=removed)
        return PhaseOutcome(
            artifacts=[layout.raw_manifest],
            files={r.path: self._verified.get(r.path) for r in records},  # the file list sorts them
            output_count=len(records),
            stats={
                "sources": len(sources),
                "files": len(records),
                "bytes": sum(r.size_bytes for r in records),
                "urls_discovered": discovered,
                "bodies_fetched": report.count("fetched"),
                "not_modified": report.count("not_modified"),
                "removed": len(removed),
                "fetch_errors": len(report.errors),
            },
            details={
                "fetched_at": fetched_at,
                "removed": removed,
                "stale": sorted(r.uri for r in report.stale),
                **{kind: _sorted(items) for kind, items in sorted(self._source_details.items())},
            },
            new=len(records) - report.count("not_modified"),
            reused=report.count("not_modified"),
            record_counts={"raw/raw_manifest.jsonl": len(records)},
        )

    def _run_folder(self, ctx: PhaseContext, index: int, source: FolderSource) -> list[RawRecord]:
        scan = self._scan(index, source)
        if isinstance(scan, IndexFoundryError):
            raise scan
        # A file the followed run (the base, or the 'latest' a plain rerun replaces) holds under
        # its scanned hash is hard-linked from there, not read and copied again.
        base = None if ctx.force else ctx.follows
        records, errors = copy_folder_files(ctx.layout, source, scan, base=base)
        # Each record's file holds its hash: copied and hashed now, or looked up under it.
        self._verified.update((record.path, record.sha256) for record in records)
        for uri, error in errors:
            ctx.record_error(error, "connect", uri=uri)
        return records

    def _run_repo(self, ctx: PhaseContext, source: RepoSource) -> list[RawRecord]:
        from indexfoundry.phases.connect.net import FetchPolicy
        from indexfoundry.phases.connect.repo import read_repo, repo_name

        policy = FetchPolicy.from_config(ctx.config.connect, ctx.global_config)
        read = read_repo(ctx.layout, source, policy)
        for uri, error in read.errors:
            ctx.record_error(error, "connect", uri=uri)
        name = repo_name(source)
        self._source_details.setdefault("repo", {})[name] = {
            "location": source.url or source.path,
            "ref": source.ref,
            "commit": read.commit,
            "files": len(read.records),
        }
        ctx.event("repo_read", phase="connect", source=name, ref=source.ref, commit=read.commit)
        return read.records

    def _run_remote(self, ctx: PhaseContext, sources: list[Any]) -> tuple[FetchReport, int]:
        """Discover sitemap pages, then fetch every URL conditionally against the previous state."""
        from indexfoundry.phases.connect.llms_txt import read_llms_txt
        from indexfoundry.phases.connect.net import FetchPolicy
        from indexfoundry.phases.connect.remote import RemoteConnector, unique_jobs
        from indexfoundry.phases.connect.url import UrlJob

        connect = ctx.config.connect
        policy = FetchPolicy.from_config(connect, ctx.global_config)
        jobs: list[UrlJob] = []
        crawls: list[CrawlReport | LlmsTxtReport | FetchReport] = []
        rendered: list[tuple[UrlJob, RenderOptions]] = []
        discovered = 0
        with RemoteConnector(
            ctx.layout, policy, base=ctx.base_layout, respect_robots=connect.respect_robots_txt
        ) as connector:
            for source in sources:
                try:
                    if isinstance(source, UrlSource) and source.render == "browser":
                        rendered.append((UrlJob(source.url, "url", source.name or source.url), source))
                    elif isinstance(source, UrlSource):
                        jobs.append(UrlJob(source.url, "url", source.name or source.url))
                    elif isinstance(source, PdfSource):
                        jobs.append(UrlJob(source.source, "pdf", source.name or source.source, expect_pdf=True))
                    elif isinstance(source, SitemapSource):
                        found = connector.discover(
                            source.url,
                            max_pages=source.max_pages,
                            include_patterns=source.include_patterns,
                            exclude_patterns=source.exclude_patterns,
                        )
                        discovered += found.discovered
                        for uri, error in found.errors:
                            ctx.record_error(error, "connect", uri=uri)
                        name = source.name or source.url
                        if source.render == "browser":
                            rendered.extend((UrlJob(url, "sitemap", name), source) for url in found.urls)
                        else:
                            jobs.extend(UrlJob(url, "sitemap", name) for url in found.urls)
                    elif isinstance(source, CrawlSource):
                        crawl = connector.crawl(source)
                        crawls.append(crawl)
                        discovered += len(crawl.results)
                        label = source.name or source.url
                        self._source_details.setdefault("crawl", {})[label] = {
                            **crawl.summary(),
                            "broken_links": crawl.broken_links,
                        }
                        ctx.event("crawl_finished", phase="connect", source=label, **crawl.summary())
                    elif isinstance(source, LlmsTxtSource):
                        llms = read_llms_txt(source, ctx.layout, connector.fetch_one, connector.policy.concurrency)
                        crawls.append(llms)
                        discovered += llms.linked
                        label = source.name or source.url
                        self._source_details.setdefault("llms_txt", {})[label] = llms.summary()
                except IndexFoundryError as error:
                    if error.recoverable and isinstance(source, SitemapSource):
                        # The sitemap is down for now: keep its pages from the previous state.
                        name = source.name or source.url
                        for uri, prev in connector.previous.items():
                            if prev.source_kind == "sitemap" and prev.source_name == name:
                                jobs.append(UrlJob(uri, "sitemap", name))
                    ctx.record_error(error, "connect", uri=_source_label(source))
            unique = unique_jobs(jobs)
            with ctx.progress.task("fetch", total=len(unique)) as task:
                report = connector.fetch_all(unique, on_done=task.advance)
            if rendered:
                with ctx.progress.task("render", total=len(rendered)) as task:
                    crawls.append(connector.render_all(rendered, on_done=task.advance))
            if connector.renderer is not None:
                self._source_details["browser"] = connector.renderer.log.summary()
            for found_pages in crawls:
                report.results.extend(found_pages.results)
                report.errors.extend(found_pages.errors)
            report.results.sort(key=lambda r: r.uri)
            report.errors.sort(key=lambda e: e[0])
            report.stale = connector.keep_stale(report.errors)
        return report, discovered


def _sorted(value: Any) -> Any:
    return dict(sorted(value.items())) if isinstance(value, dict) else value


def _is_local(source: Any) -> bool:
    """Sources read without the HTTP fetcher: folders, local PDFs, repositories."""
    return isinstance(source, FolderSource | RepoSource) or (
        isinstance(source, PdfSource) and "://" not in source.source
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
    folder = layout.raw_dir.name
    own = {layout.raw_manifest.name, layout.file_list("connect").name}
    with os.scandir(layout.raw_dir) as entries:
        for entry in entries:
            if entry.name not in own and f"{folder}/{entry.name}" not in keep and entry.is_file():
                os.unlink(entry.path)
