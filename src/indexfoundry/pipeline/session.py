"""Recording what a single-purpose tool wrote in the run manifest."""

from __future__ import annotations

from pathlib import Path

from indexfoundry.models.manifests import HashList, PhaseManifest, PhaseName
from indexfoundry.phases.base import Phase
from indexfoundry.storage.layout import RunLayout
from indexfoundry.storage.manifest import artifact_record, load_manifest, save_manifest, totals_of


def record_tool_artifacts(
    layout: RunLayout,
    phase: Phase,
    upstream: PhaseName,
    tool_name: str,
    key: str,
    written: list[Path],
    count: int,
    counted: Path,
) -> None:
    """Record what a single-purpose tool wrote in the manifest entry of ``phase``.

    The entry's fingerprint then names the tool call, so the next pipeline run sees the phase as
    changed and reruns the phases after it. The caller holds the run lock.
    """
    from indexfoundry import __version__
    from indexfoundry.storage.clock import utc_now
    from indexfoundry.storage.hashing import sha256_json

    manifest = load_manifest(layout)
    previous = manifest.phases.get(phase.name)
    records = {a.path: a for a in (previous.artifacts if previous is not None else [])}
    for path in written:
        record = artifact_record(layout, path, count if path == counted else None)
        records[record.path] = record
    records = {p: a for p, a in records.items() if (layout.root / p).is_file()}
    artifacts = sorted(records.values(), key=lambda a: a.path)
    fingerprint = sha256_json({"tool": tool_name, "key": key, "artifacts": [a.sha256 for a in artifacts]})
    now = utc_now()
    outputs = HashList(count=count, hashes=sorted(a.sha256 for a in artifacts))
    if previous is None or previous.status != "completed":
        source = manifest.phases.get(upstream)
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
            inputs=HashList(count=len(inputs), hashes=inputs),
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
    manifest.totals = totals_of(manifest)
    save_manifest(layout, manifest)
