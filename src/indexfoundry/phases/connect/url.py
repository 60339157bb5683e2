"""One URL into ``raw/``: conditional GET against the previous state, content type, storage.

A URL known from the previous state (a base run, or this run before a forced rerun) is
requested with ``If-None-Match``/``If-Modified-Since``; a 304 reuses the stored artifact
(copied from the base run's ``raw/`` when needed) without downloading the body. A known URL
that now answers 404/410 is reported as removed, so later phases prune its chunks.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import unquote

import httpx

from indexfoundry.errors import ParseError
from indexfoundry.models.records import RawRecord, SourceKind
from indexfoundry.phases.connect.net import Fetcher, FetchResult, HttpStatusError
from indexfoundry.phases.connect.sniff import extension_for, sniff_content_type
from indexfoundry.storage.atomic import new_temp_file
from indexfoundry.storage.clock import utc_now
from indexfoundry.storage.hashing import sha256_file
from indexfoundry.storage.layout import RunLayout

UrlStatus = Literal["fetched", "not_modified", "removed"]


@dataclass(frozen=True)
class UrlJob:
    """A URL to bring into ``raw/`` and how to label it."""

    uri: str
    source_kind: SourceKind
    source_name: str
    expect_pdf: bool = False


@dataclass
class UrlResult:
    """What happened to one URL."""

    uri: str
    status: UrlStatus
    record: RawRecord | None
    fetched_at: str
    attempts: int = 1
    final_url: str | None = None


def _name_of(url: str) -> str:
    """The last path segment of ``url`` (for extension-based content type hints)."""
    path = httpx.URL(url).path
    return unquote(path.rsplit("/", 1)[-1])


def _artifact_in(layout: RunLayout, record: RawRecord) -> Path | None:
    path = layout.root / record.path
    if path.is_file() and sha256_file(path) == record.sha256:
        return path
    return None


def reusable_artifact(layout: RunLayout, base: RunLayout | None, record: RawRecord) -> bool:
    """Make ``record``'s artifact present in ``layout`` (copying it from ``base``); False if lost."""
    if _artifact_in(layout, record) is not None:
        return True
    source = _artifact_in(base, record) if base is not None else None
    if source is None:
        return False
    target = layout.root / record.path
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = new_temp_file(target.parent, "copy")
    try:
        with os.fdopen(fd, "wb") as out, source.open("rb") as src:
            shutil.copyfileobj(src, out, 1 << 20)
            out.flush()
            os.fsync(out.fileno())
        if sha256_file(tmp) != record.sha256:
            tmp.unlink()
            return False
        os.replace(tmp, target)
        return True
    except BaseException:
        if tmp.exists():
            tmp.unlink()
        raise


def store_fetched(layout: RunLayout, result: FetchResult, job: UrlJob) -> RawRecord:
    """Move a fetched body into ``raw/<sha256>.<ext>`` and describe it."""
    assert result.body_path is not None
    content_type = sniff_content_type(_name_of(result.final_url), result.head, result.content_type)
    if job.expect_pdf and content_type != "application/pdf":
        result.discard()
        raise ParseError(
            f"{job.uri} is not a PDF (it looks like {content_type})",
            suggestion="Use a url source for non-PDF documents",
            details={"url": job.uri, "content_type": content_type},
        )
    ext = extension_for(content_type)
    digest = sha256_file(result.body_path)
    target = layout.raw_file(digest, ext)
    if target.is_file():
        result.discard()
    else:
        os.replace(result.body_path, target)
        result.body_path = None
    return RawRecord(
        uri=job.uri,
        sha256=digest,
        size_bytes=result.size,
        content_type=content_type,
        ext=ext,
        path=target.relative_to(layout.root).as_posix(),
        source_kind=job.source_kind,
        source_name=job.source_name,
        etag=result.headers.get("etag"),
        last_modified=result.headers.get("last-modified"),
    )


def fetch_url(
    fetcher: Fetcher,
    layout: RunLayout,
    job: UrlJob,
    previous: RawRecord | None = None,
    base: RunLayout | None = None,
    conditional: bool = True,
) -> UrlResult:
    """Fetch one URL into ``layout``'s ``raw/``, conditionally when ``previous`` allows it."""
    headers: dict[str, str] = {}
    reusable = (
        previous is not None
        and conditional
        and bool(previous.etag or previous.last_modified)
        and reusable_artifact(layout, base, previous)
    )
    if reusable and previous is not None:
        if previous.etag:
            headers["If-None-Match"] = previous.etag
        if previous.last_modified:
            headers["If-Modified-Since"] = previous.last_modified
    try:
        result = fetcher.get(job.uri, headers=headers, to_dir=layout.raw_dir)
    except HttpStatusError as error:
        if error.status in (404, 410) and previous is not None:
            return UrlResult(job.uri, "removed", None, utc_now())
        raise
    fetched_at = utc_now()
    if result.status == 304:
        if not reusable or previous is None:
            # A 304 to an unconditional request: ask again without any validators.
            return fetch_url(fetcher, layout, job, None, None, conditional=False)
        record = previous.model_copy(
            update={
                "source_kind": job.source_kind,
                "source_name": job.source_name,
                "etag": result.headers.get("etag") or previous.etag,
                "last_modified": result.headers.get("last-modified") or previous.last_modified,
            }
        )
        return UrlResult(job.uri, "not_modified", record, fetched_at, result.attempts, result.final_url)
    record = store_fetched(layout, result, job)
    return UrlResult(job.uri, "fetched", record, fetched_at, result.attempts, result.final_url)
