"""A connect tool's hold on an existing run: the run lock, the raw records it adds to, and the
commit that writes the merged ``raw/raw_manifest.jsonl`` and updates a completed connect
phase's manifest entry to list the new artifacts.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from indexfoundry.models.config import GlobalConfig, NetworkBounds, PipelineConfig
from indexfoundry.models.records import RawRecord
from indexfoundry.phases.connect.net import FetchPolicy
from indexfoundry.phases.connect.remote import load_raw_manifest
from indexfoundry.pipeline.session import RunSession
from indexfoundry.storage.atomic import atomic_write_jsonl
from indexfoundry.storage.layout import RunLayout


@dataclass
class RawSession:
    """A connect tool's view of a run while it holds the run lock: the records it adds or removes."""

    layout: RunLayout
    config: PipelineConfig
    global_config: GlobalConfig
    records: dict[str, RawRecord]
    fetched_at: dict[str, str]
    removed: list[str]
    network: NetworkBounds | None = None

    def policy(self) -> FetchPolicy:
        return FetchPolicy.from_config(self.config.connect, self.global_config).bounded(self.network)

    def present(self, uri: str) -> RawRecord | None:
        """The run's record for ``uri`` when its artifact is still there."""
        record = self.records.get(uri)
        if record is not None and (self.layout.root / record.path).is_file():
            return record
        return None

    def add(self, record: RawRecord, fetched_at: str) -> None:
        self.records[record.uri] = record
        self.fetched_at[record.uri] = fetched_at

    def artifact_path(self, record: RawRecord) -> str:
        return str(self.layout.root / record.path)

    def previous_fetch(self, uri: str) -> str:
        from indexfoundry.storage.manifest import load_manifest

        phase = load_manifest(self.layout).phases.get("connect")
        times = phase.details.get("fetched_at", {}) if phase is not None else {}
        value = times.get(uri) if isinstance(times, dict) else None
        return str(value) if value else ""


@contextmanager
def raw_session(run_id: str, runs_dir: str | Path | None, network: NetworkBounds | None = None) -> Iterator[RawSession]:
    """Lock the run, hand out its records, then write the merged raw manifest and phase manifest."""
    from indexfoundry.app.runs import runs_dir_for
    from indexfoundry.models.config import load_global_config
    from indexfoundry.storage.manifest import load_run_config

    glob = load_global_config()
    layout = RunLayout.existing(runs_dir_for(runs_dir, glob), run_id)
    with RunSession.open(layout) as run:
        session = RawSession(
            layout=layout,
            config=load_run_config(layout),
            global_config=glob,
            records={r.uri: r for r in load_raw_manifest(layout)},
            fetched_at={},
            removed=[],
            network=network,
        )
        yield session
        _commit(session, run)


def _commit(session: RawSession, run: RunSession) -> None:
    from indexfoundry.storage.manifest import artifact_record, file_list_record, hash_list

    layout = session.layout
    for uri in session.removed:
        session.records.pop(uri, None)
    records = [session.records[uri] for uri in sorted(session.records)]
    atomic_write_jsonl(layout.raw_manifest, records)
    manifest = run.reload()
    phase = manifest.phases.get("connect")
    if phase is None or phase.status != "completed":
        return
    files: dict[str, str | None] = {r.path: None for r in records if (layout.root / r.path).is_file()}
    artifacts = [artifact_record(layout, layout.raw_manifest, len(records))]
    if files:
        artifacts.append(file_list_record(layout, layout.file_list("connect"), files))
    details = dict(phase.details)
    fetched = dict(details.get("fetched_at") or {})
    fetched.update(session.fetched_at)
    details["fetched_at"] = {uri: fetched[uri] for uri in sorted(fetched) if uri in session.records}
    if session.removed:
        details["removed"] = sorted({*details.get("removed", []), *session.removed})
    phase.artifacts = sorted(artifacts, key=lambda a: a.path)
    phase.outputs = hash_list([a.sha256 for a in artifacts], len(records))
    phase.details = details
    phase.stats = {**phase.stats, "files": len(records), "bytes": sum(r.size_bytes for r in records)}
    manifest.totals.sources_fetched = len(records)
    run.commit(totals=False)
