"""``check_freshness``: which sources of a run changed since the run read them.

- Files (folder sources): the file under the folder the run's config names is hashed again and
  compared with the SHA-256 the run recorded; a missing file is ``gone``.
- URLs (url, sitemap, crawl, llms.txt sources): a conditional GET (``If-None-Match`` with the
  recorded ETag, ``If-Modified-Since`` with the recorded Last-Modified) through the connect
  phase's guarded fetcher with the run's own network policy (SSRF guard, allowed and blocked
  domains, size limit). 304 → unchanged; 200 → changed unless the bytes hash the same;
  404/410 → gone; any other failure → an error for that source, with its code.
- Other sources (local PDFs, repos): not checked (``unchecked``).

Bounded: ``max_seconds`` stops checking when the time is up (the rest are reported as not
checked); ``sample`` checks a stated share of the sources, chosen deterministically (the
sources whose uri hashes lowest), so the same request checks the same sources.

Costs what it says: with a :class:`FreshnessCache`, a source checked less than ``reuse_s``
seconds ago (default 300) is answered from that check, with no request and no hashing; a
``budget`` callback is then asked to pay for the sources still to check, one unit each, and
may pay for fewer (the rest are reported unchecked and the report says ``limited``) or raise
(``RATE_LIMITED``). So repeated calls cost at most one sweep of the sources per interval.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable
from pathlib import Path

from indexfoundry.errors import IndexFoundryError
from indexfoundry.models.config import FolderSource, GlobalConfig, PipelineConfig
from indexfoundry.models.freshness import FreshnessReport, SourceFreshness, Status
from indexfoundry.models.records import RawRecord
from indexfoundry.phases.connect.net import Fetcher, FetchPolicy, HttpStatusError
from indexfoundry.storage.atomic import iter_jsonl
from indexfoundry.storage.hashing import sha256_file, sha256_text
from indexfoundry.storage.layout import RunLayout
from indexfoundry.storage.manifest import fetch_times, load_manifest, load_run_config

_URL_KINDS = frozenset({"url", "sitemap", "crawl", "llms_txt"})


def _folder_file(config: PipelineConfig, record: RawRecord) -> Path | None:
    for source in config.connect.sources:
        if isinstance(source, FolderSource) and (source.name or Path(source.path).name) == record.source_name:
            if record.relative_path is None:
                return None
            return Path(source.path) / record.relative_path
    return None


def _check_url(fetcher: Fetcher, record: RawRecord) -> tuple[Status, str]:
    headers: dict[str, str] = {}
    if record.etag:
        headers["If-None-Match"] = record.etag
    if record.last_modified:
        headers["If-Modified-Since"] = record.last_modified
    how = "etag" if record.etag else ("last-modified" if record.last_modified else "bytes")
    try:
        result = fetcher.get(record.uri, headers=headers)
    except HttpStatusError as exc:
        if exc.status in (404, 410):
            return "gone", how
        raise
    if result.status == 304:
        return "unchanged", how
    body = result.body or b""
    same = hashlib.sha256(body).hexdigest() == record.sha256
    return ("unchanged" if same else "changed"), ("bytes" if same else how)


DEFAULT_REUSE_S = 300.0


class FreshnessCache:
    """The last check of each source of each run, answered again for ``reuse_s`` seconds (thread-safe)."""

    def __init__(self, reuse_s: float = DEFAULT_REUSE_S, clock: Callable[[], float] = time.monotonic) -> None:
        self.reuse_s = reuse_s
        self._clock = clock
        self._entries: dict[tuple[str, str], tuple[float, SourceFreshness]] = {}
        self._lock = threading.Lock()

    def get(self, run: Path, uri: str) -> SourceFreshness | None:
        with self._lock:
            found = self._entries.get((str(run), uri))
            if found is None or self._clock() - found[0] >= self.reuse_s:
                return None
            return found[1].model_copy()

    def put(self, run: Path, entry: SourceFreshness) -> None:
        if self.reuse_s <= 0:
            return
        with self._lock:
            now = self._clock()
            self._entries[(str(run), entry.uri)] = (now, entry.model_copy())
            if len(self._entries) > 100_000:  # bounded: forget what is too old to be reused
                self._entries = {k: v for k, v in self._entries.items() if now - v[0] < self.reuse_s}


def _checkable(record: RawRecord, local_only: bool) -> bool:
    if record.source_kind == "folder":
        return True
    remote = record.source_kind in _URL_KINDS or record.uri.startswith(("http://", "https://"))
    return remote and not local_only


def _check_one(config: PipelineConfig, fetcher: Fetcher, record: RawRecord, entry: SourceFreshness) -> None:
    try:
        if record.source_kind == "folder":
            path = _folder_file(config, record)
            entry.how = "hash"
            if path is None or not path.is_file():
                entry.status = "gone"
            else:
                entry.status = "unchanged" if sha256_file(path) == record.sha256 else "changed"
        else:
            entry.status, entry.how = _check_url(fetcher, record)
    except IndexFoundryError as exc:
        entry.status, entry.error = "error", exc.code
    except OSError:
        entry.status, entry.error = "error", "PARSE_ERROR"


def check_freshness(
    layout: RunLayout,
    *,
    uris: list[str] | None = None,
    sample: float | None = None,
    max_seconds: float = 30.0,
    global_config: GlobalConfig | None = None,
    local_only: bool = False,
    cache: FreshnessCache | None = None,
    budget: Callable[[int], int] | None = None,
) -> FreshnessReport:
    """Which of the run's sources (or of ``uris``) changed since the run read them.

    ``local_only`` checks files only (no request is made), for per-search flags in docs mode.
    ``cache`` answers recently checked sources again; ``budget(n)`` pays for ``n`` checks and
    returns how many it paid for (see the module doc).
    """
    config = load_run_config(layout)
    manifest = load_manifest(layout)
    connect = manifest.phases.get("connect")
    fetched = fetch_times(connect)
    records = [RawRecord.model_validate(row) for row in iter_jsonl(layout.raw_manifest)]
    if uris is not None:
        wanted = set(uris)
        records = [r for r in records if r.uri in wanted]
    records.sort(key=lambda r: r.uri)
    total = len(records)
    if sample is not None and sample < 1:
        keep = max(1, round(total * sample)) if total else 0
        records = sorted(records, key=lambda r: sha256_text(r.uri))[:keep]
        records.sort(key=lambda r: r.uri)
    records = [r for r in records if _checkable(r, local_only)]
    reused = {r.uri: hit for r in records if cache is not None and (hit := cache.get(layout.root, r.uri)) is not None}
    to_check = [r.uri for r in records if r.uri not in reused]
    limited = False
    if budget is not None and to_check:
        paid = max(0, min(budget(len(to_check)), len(to_check)))
        limited = paid < len(to_check)
        to_check = to_check[:paid]
    paid_for = set(to_check)
    deadline = time.monotonic() + max_seconds
    changed: list[SourceFreshness] = []
    errors: list[SourceFreshness] = []
    unchanged = checked = 0
    timed_out = False
    policy = FetchPolicy.from_config(config.connect, global_config)
    with Fetcher(policy) as fetcher:
        for record in records:
            entry = reused.get(record.uri)
            if entry is None:
                if record.uri not in paid_for:
                    continue
                if time.monotonic() > deadline:
                    timed_out = True
                    break
                entry = SourceFreshness(uri=record.uri, status="unchecked", fetched_at=fetched.get(record.uri))
                _check_one(config, fetcher, record, entry)
                if cache is not None:
                    cache.put(layout.root, entry)
            checked += 1
            if entry.status == "unchanged":
                unchanged += 1
            elif entry.status == "error":
                errors.append(entry)
            else:
                changed.append(entry)
    return FreshnessReport(
        run_id=layout.run_id,
        sources=total,
        checked=checked,
        sample=sample if sample is not None and sample < 1 else None,
        timed_out=timed_out,
        changed=changed,
        errors=errors,
        unchanged=unchanged,
        reused=len(reused),
        limited=limited,
    )
