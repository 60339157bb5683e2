"""``RunSession``: the one writer of a run's ``manifest.json``.

Every change to a run's state goes through a session: the runner's phase commits, and every tool
that writes artifacts (connect, extract, normalize, index ...). A session holds the run's exclusive
lock while it is open, so two processes never interleave their writes (the second one gets
RUN_LOCKED), and it writes the manifest atomically: the manifest is the commit point, a phase
folder without a complete manifest entry is not done. One policy for everyone:

- ``commit()`` writes the in-memory manifest, with its totals recomputed from the phases.
- ``record_tool(...)`` records what a single-purpose tool wrote in its phase's entry, hashed and
  fingerprinted with the tool call, so the next pipeline run sees that phase as changed and reruns
  the phases after it.

    with RunSession.open(layout) as session:
        session.manifest.phases["connect"] = ...
        session.commit()
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from indexfoundry import __version__
from indexfoundry.models.config import PipelineConfig
from indexfoundry.models.manifests import PhaseManifest, PhaseName, RunManifest
from indexfoundry.phases.base import Phase
from indexfoundry.storage.atomic import atomic_write_commit_json
from indexfoundry.storage.clock import utc_now
from indexfoundry.storage.hashing import sha256_json
from indexfoundry.storage.layout import RunLayout
from indexfoundry.storage.manifest import (
    artifact_record,
    frozen_config,
    hash_list,
    load_manifest,
    run_lock,
    totals_of,
    write_frozen_config,
)


def _write(layout: RunLayout, manifest: RunManifest) -> None:
    # The only place manifest.json is written: the commit point, so the artifact writes deferred
    # before it (storage.atomic.deferred_sync, a pipeline run) are made durable first.
    atomic_write_commit_json(layout.manifest, manifest)


class RunSession:
    """An open run: its lock held, its manifest loaded; ``commit()`` writes it back."""

    def __init__(self, layout: RunLayout, manifest: RunManifest) -> None:
        self.layout = layout
        self.manifest = manifest

    @classmethod
    @contextmanager
    def open(cls, layout: RunLayout) -> Iterator[RunSession]:
        """Lock the run (RUN_LOCKED if another process holds it) and load its manifest."""
        with run_lock(layout):
            yield cls(layout, load_manifest(layout))

    @staticmethod
    def create(layout: RunLayout, config: PipelineConfig, base_run_id: str | None = None) -> RunManifest:
        """Create the run folder, freeze the config and write the first manifest (under the lock)."""
        layout.create()
        frozen = frozen_config(config)
        with run_lock(layout):
            write_frozen_config(layout, frozen)
            manifest = RunManifest(
                run_id=layout.run_id,
                created_at=utc_now(),
                status="running",
                config_hash=sha256_json(frozen),
                indexfoundry_version=__version__,
                base_run_id=base_run_id,
                pipeline=config.pipeline_name(),
            )
            _write(layout, manifest)
        return manifest

    def reload(self) -> RunManifest:
        """Read the manifest again (a tool that called other code holding this session)."""
        self.manifest = load_manifest(self.layout)
        return self.manifest

    def commit(self, *, totals: bool = True) -> None:
        """Write the manifest atomically (the commit point); totals recomputed unless told not to."""
        if totals:
            self.manifest.totals = totals_of(self.manifest)
        _write(self.layout, self.manifest)

    def record_tool(
        self,
        phase: Phase,
        upstream: PhaseName | None,
        tool_name: str,
        key: str,
        written: list[Path],
        count: int,
        counted: Path | None,
    ) -> PhaseManifest:
        """Record what a single-purpose tool wrote in the manifest entry of ``phase`` and commit.

        Artifacts the entry already lists stay (unless their file is gone); ``written`` are hashed
        and added. The entry's fingerprint then names the tool call (``tool_name``, ``key``: the
        hash of the tool's inputs), so the next pipeline run sees the phase as changed and reruns
        the phases after it. ``count`` is the phase's output count (the records of ``counted``).
        """
        layout = self.layout
        manifest = self.reload()
        previous = manifest.phases.get(phase.name)
        records = {a.path: a for a in (previous.artifacts if previous is not None else [])}
        for path in written:
            record = artifact_record(layout, path, count if path == counted else None)
            records[record.path] = record
        records = {p: a for p, a in records.items() if (layout.root / p).is_file()}
        artifacts = sorted(records.values(), key=lambda a: a.path)
        fingerprint = sha256_json({"tool": tool_name, "key": key, "artifacts": [a.sha256 for a in artifacts]})
        now = utc_now()
        outputs = hash_list([a.sha256 for a in artifacts], count)
        if previous is None or previous.status != "completed":
            source = manifest.phases.get(upstream) if upstream is not None else None
            inputs = sorted(a.sha256 for a in source.artifacts) if source is not None else []
            entry = PhaseManifest(
                started_at=now,
                completed_at=now,
                duration_ms=0,
                status="completed",
                phase_version=phase.version,
                tool_version=__version__,
                tool_versions=phase.tool_versions(),
                config_hash=key,
                fingerprint=fingerprint,
                inputs=hash_list(inputs),
                outputs=outputs,
                artifacts=artifacts,
                details={"written_by": tool_name},
            )
        else:
            entry = previous.model_copy(
                update={
                    "fingerprint": fingerprint,
                    "completed_at": now,
                    "outputs": outputs,
                    "artifacts": artifacts,
                    "details": {**previous.details, "written_by": tool_name},
                }
            )
        manifest.phases[phase.name] = entry
        self.commit()
        return entry
