"""The pipeline runner: plan the phases, skip what did not change, run the rest.

A phase's fingerprint is ``sha256(phase name, phase version, config slice, input hashes,
tool versions)``. A phase is skipped when its manifest is complete, its fingerprint is
unchanged and every artifact it recorded still has its recorded hash.

``--force`` on one phase reruns that phase only. It does not force the phases after it:
they are re-planned from their own fingerprints, so they rerun exactly when the forced
phase's outputs changed (and skip when a forced rerun produced identical artifacts).
``pipeline run --force`` forces every phase.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal, cast

import uuid6

from indexfoundry import __version__
from indexfoundry.errors import IndexFoundryError, storage_full
from indexfoundry.models.config import GlobalConfig, PipelineConfig
from indexfoundry.models.manifests import (
    ErrorRecord,
    PhaseManifest,
    PhaseName,
    PhaseResult,
    PipelineRunOutput,
    PipelineSummary,
    RunManifest,
    Timing,
)
from indexfoundry.phases.base import (
    NullProgress,
    Phase,
    PhaseContext,
    PhaseOutcome,
    followed_phase,
    link_followed_artifacts,
)
from indexfoundry.phases.executor import LOCAL, Executor
from indexfoundry.pipeline.gc_policy import fewer_collections
from indexfoundry.pipeline.guards import RunGuards, check_phase_output
from indexfoundry.pipeline.inuse import in_use
from indexfoundry.pipeline.locks import shared_store_lock
from indexfoundry.pipeline.preload import Preload
from indexfoundry.pipeline.runs import becomes_latest
from indexfoundry.pipeline.session import RunSession
from indexfoundry.storage.atomic import deferred_sync, remove_stale_temp_files
from indexfoundry.storage.clock import monotonic_ms, utc_now
from indexfoundry.storage.filehashes import known_file_hashes
from indexfoundry.storage.hashing import sha256_json
from indexfoundry.storage.layout import PHASES, RunLayout
from indexfoundry.storage.manifest import (
    artifact_records,
    artifacts_verify,
    file_list_record,
    frozen_config,
    hash_list,
    read_manifest,
    totals_of,
    write_frozen_config,
)


def _connect() -> Phase:
    from indexfoundry.phases.connect import ConnectPhase

    return ConnectPhase()


def _extract() -> Phase:
    from indexfoundry.phases.extract import ExtractPhase

    return ExtractPhase()


def _normalize() -> Phase:
    from indexfoundry.phases.normalize import NormalizePhase

    return NormalizePhase()


def _index() -> Phase:
    from indexfoundry.phases.index import IndexPhase

    return IndexPhase()


def _serve() -> Phase:
    from indexfoundry.phases.serve import ServePhase

    return ServePhase()


# The phase registry, in pipeline order: name -> factory (each imports its phase on first use, so
# heavy libraries load only when the phase runs). A new phase adds one entry here and one name to
# ``storage.layout.PHASES``; the runner has no other per-phase code.
PHASE_REGISTRY: dict[str, Callable[[], Phase]] = {
    "connect": _connect,
    "extract": _extract,
    "normalize": _normalize,
    "index": _index,
    "serve": _serve,
}


def get_phase(name: str) -> Phase:
    """The phase implementation registered for ``name``."""
    factory = PHASE_REGISTRY.get(name)
    if factory is None:
        raise IndexFoundryError(f"unknown phase '{name}'", code="CONFIG_INVALID", suggestion=f"One of {PHASES}")
    return factory()


def new_run_id() -> str:
    """A new time-ordered run id (UUID v7)."""
    return str(uuid6.uuid7())


def create_run(layout: RunLayout, config: PipelineConfig, base_run_id: str | None = None) -> RunManifest:
    """Create the run folder, freeze the config and write the first manifest (``RunSession.create``)."""
    return RunSession.create(layout, config, base_run_id)


# Runs one phase in its context; ``run_phase_body`` (``phase.run(ctx)``) unless a caller wraps it
# (the kill tests pause a phase this way: tests/integration/paused_pipeline.py).
PhaseRunner = Callable[[PhaseContext, Phase], PhaseOutcome]


def run_phase_body(ctx: PhaseContext, phase: Phase) -> PhaseOutcome:
    """The default ``PhaseRunner``: the phase's own ``run``."""
    return phase.run(ctx)


@dataclass
class _PhaseRun:
    result: PhaseResult
    manifest: PhaseManifest | None


def _fingerprint(phase: Phase, config: PipelineConfig, inputs: list[str]) -> tuple[str, str]:
    config_slice = phase.config_slice(config)
    config_hash = sha256_json(config_slice)
    fingerprint = sha256_json(
        {
            "phase": phase.name,
            "version": phase.version,
            "config": config_hash,
            "inputs": inputs,
            "tools": phase.tool_versions(),
        }
    )
    return config_hash, fingerprint


def _run_phase(
    ctx: PhaseContext,
    session: RunSession,
    phase: Phase,
    force: bool,
    phase_runner: PhaseRunner = run_phase_body,
    guards: RunGuards | None = None,
    base_manifest: RunManifest | None = None,
) -> _PhaseRun:
    """Skip ``phase`` when unchanged, else run it between a committed 'running' entry and its
    completed (or failed) one."""
    started = monotonic_ms()
    started_at = utc_now()
    ctx.errors = []
    # A forced phase redoes its work: nothing is taken from a base run (phases/extract/reuse.py).
    ctx.force = force
    try:
        inputs = phase.input_hashes(ctx)
        config_hash, fingerprint = _fingerprint(phase, ctx.config, inputs)
        skipped = _skipped(ctx, session.manifest, phase, force, fingerprint, started)
        if skipped is not None:
            return skipped
        running = PhaseManifest(
            started_at=started_at,
            status="running",
            phase_version=phase.version,
            tool_version=__version__,
            tool_versions=phase.tool_versions(),
            config_hash=config_hash,
            fingerprint=fingerprint,
            inputs=hash_list(inputs),
        )
        taken = _taken(ctx, session.manifest, phase, force, running, started)
        if taken is not None:
            return taken
        _start(ctx, session, phase, running, force)
        outcome = _outcome(ctx, phase, phase_runner)
        # An empty or shrunken output fails the run here, before later phases spend anything on it.
        guarded = check_phase_output(
            phase.name, outcome.output_count, base_manifest, guards or RunGuards(), ctx.layout.run_id
        )
        if guarded is not None:
            raise guarded
    except IndexFoundryError as error:
        return _failed(ctx, session.manifest, phase, error, started)
    return _completed(ctx, phase, running, outcome, started)


def _skipped(
    ctx: PhaseContext, manifest: RunManifest, phase: Phase, force: bool, fingerprint: str, started: int
) -> _PhaseRun | None:
    """The skipped result of a phase whose completed entry has this fingerprint and whose
    artifacts still verify (never when forced); None when it has to run."""
    previous = manifest.phases.get(phase.name)
    if (
        force
        or previous is None
        or previous.status != "completed"
        or previous.fingerprint != fingerprint
        or not artifacts_verify(ctx.layout, previous.artifacts)
    ):
        return None
    ctx.event("phase_skipped", phase=phase.name, reason="unchanged")
    return _PhaseRun(
        PhaseResult(
            status="skipped",
            duration_ms=monotonic_ms() - started,
            artifacts_created=0,
            errors=[e.message for e in previous.errors],
            reused=previous.outputs.count,
        ),
        None,
    )


def _taken(
    ctx: PhaseContext, manifest: RunManifest, phase: Phase, force: bool, running: PhaseManifest, started: int
) -> _PhaseRun | None:
    """The completed result of a phase that takes the followed run's artifacts: a phase whose
    output follows from its fingerprint under the run's config (``Phase.same_output_for``), not
    yet started in this new run, whose fingerprint is that of the followed run's completed phase
    (no errors) with artifacts that still verify there. Its artifacts and the files they list
    are linked into this run (copied where links cannot be made); nothing is recomputed. None
    (never when forced) when the phase has to run.

    A nightly run over unchanged sources thus does not extract and chunk every document again
    to write the bytes the run it replaces already holds."""
    if force or not phase.same_output_for(ctx.config) or phase.name in manifest.phases:
        return None
    theirs = followed_phase(ctx, phase.name, running.fingerprint)
    if theirs is None or ctx.follows is None:
        return None
    source = ctx.follows
    link_followed_artifacts(ctx, theirs)
    duration = monotonic_ms() - started
    count = theirs.outputs.count
    done = running.model_copy(
        update={
            "status": "completed",
            "completed_at": utc_now(),
            "duration_ms": duration,
            "outputs": theirs.outputs,
            "artifacts": theirs.artifacts,
            "stats": theirs.stats,
            "details": {**theirs.details, "reused": count, "new": 0, "taken_from": source.run_id},
            "errors": [],
        }
    )
    ctx.event("phase_completed", phase=phase.name, duration_ms=duration, errors=0, taken_from=source.run_id)
    return _PhaseRun(
        PhaseResult(
            status="completed",
            duration_ms=duration,
            artifacts_created=len(theirs.artifacts),
            errors=[],
            reused=count,
            new=0,
        ),
        done,
    )


def _start(ctx: PhaseContext, session: RunSession, phase: Phase, running: PhaseManifest, force: bool) -> None:
    """Commit the phase's 'running' entry (the last completed one stays in ``ctx.previous_phase``)."""
    manifest = session.manifest
    committed = manifest.phases.get(phase.name)
    ctx.previous_phase = committed if committed is not None and committed.status == "completed" else None
    manifest.phases[phase.name] = running
    manifest.current_phase = phase.name
    manifest.status = "running"
    session.commit(totals=False)
    ctx.event("phase_started", phase=phase.name, forced=force)


def _outcome(ctx: PhaseContext, phase: Phase, phase_runner: PhaseRunner) -> PhaseOutcome:
    try:
        return phase_runner(ctx, phase)
    except (OSError, sqlite3.Error) as exc:  # a full disk fails the phase with a clear, recoverable error
        full = storage_full(exc)
        if full is None:
            raise
        raise full from exc


def _failed(
    ctx: PhaseContext, manifest: RunManifest, phase: Phase, error: IndexFoundryError, started: int
) -> _PhaseRun:
    """The failed result: the error recorded once (errors.ndjson), a running entry marked failed."""
    if not ctx.errors or ctx.errors[-1].message != error.message:
        ctx.errors.append(ErrorRecord.from_error(error, phase=phase.name))
        from indexfoundry.storage.atomic import append_ndjson

        append_ndjson(
            ctx.layout.errors_log,
            {"ts": utc_now(), **ctx.errors[-1].model_dump(mode="json", exclude_none=True)},
        )
    duration = monotonic_ms() - started
    failed = manifest.phases.get(phase.name)
    if failed is not None and failed.status == "running":
        failed.status = "failed"
        failed.completed_at = utc_now()
        failed.duration_ms = duration
        failed.errors = list(ctx.errors)
    ctx.event("phase_failed", phase=phase.name, code=error.code)
    return _PhaseRun(
        PhaseResult(
            status="failed",
            duration_ms=duration,
            artifacts_created=0,
            errors=[e.message for e in ctx.errors],
        ),
        failed,
    )


def _completed(
    ctx: PhaseContext, phase: Phase, running: PhaseManifest, outcome: PhaseOutcome, started: int
) -> _PhaseRun:
    """The completed result and entry: the phase's artifacts recorded with their hashes."""
    duration = monotonic_ms() - started
    reused, new = outcome.reused, outcome.new
    if ctx.base_layout is not None:
        reused, new = phase.reuse_counts(ctx, reused, new, outcome.output_count)
    artifacts = artifact_records(ctx.layout, outcome.artifacts, outcome.record_counts)
    if outcome.files:
        listed = file_list_record(ctx.layout, ctx.layout.file_list(phase.name), outcome.files)
        artifacts = sorted([*artifacts, listed], key=lambda a: a.path)
    done = running.model_copy(
        update={
            "status": "completed",
            "completed_at": utc_now(),
            "duration_ms": duration,
            "outputs": hash_list([a.sha256 for a in artifacts], outcome.output_count),
            "artifacts": artifacts,
            "stats": outcome.stats,
            "details": {**outcome.details, "reused": reused, "new": new, **_executor_details(ctx)},
            "errors": list(ctx.errors),
        }
    )
    ctx.event("phase_completed", phase=phase.name, duration_ms=duration, errors=len(ctx.errors))
    return _PhaseRun(
        PhaseResult(
            status="completed",
            duration_ms=duration,
            artifacts_created=len(artifacts),
            errors=[e.message for e in ctx.errors],
            reused=reused,
            new=new,
        ),
        done,
    )


def _publish(ctx: PhaseContext, manifest: RunManifest) -> bool:
    """Each completed phase's ``publish`` hook, in pipeline order. On an error the phase is marked
    failed with it (a rerun of the run redoes that phase, then publishes) and False is returned."""
    for name in PHASES:
        done = manifest.phases.get(cast(PhaseName, name))
        if done is None or done.status != "completed":
            continue
        try:
            get_phase(name).publish(ctx)
        except IndexFoundryError as error:
            record = ErrorRecord.from_error(error, phase=cast(PhaseName, name))
            from indexfoundry.storage.atomic import append_ndjson

            append_ndjson(ctx.layout.errors_log, {"ts": utc_now(), **record.model_dump(mode="json", exclude_none=True)})
            done.status = "failed"
            done.errors = [*done.errors, record]
            ctx.event("phase_failed", phase=name, code=error.code)
            return False
    return True


def _executor_details(ctx: PhaseContext) -> dict[str, Any]:
    """``details.executor`` of a phase run on a remote executor (per-worker counts); nothing locally."""
    return {"executor": ctx.executor.report()} if ctx.executor.remote else {}


def execute(
    layout: RunLayout,
    config: PipelineConfig,
    *,
    global_config: GlobalConfig | None = None,
    phases: Iterable[str] = PHASES,
    force_phases: Iterable[str] = (),
    progress: Any = None,
    embedder_override: Any = None,
    base_layout: RunLayout | None = None,
    follows: RunLayout | None = None,
    guards: RunGuards | None = None,
    executor: Executor = LOCAL,
    phase_runner: PhaseRunner = run_phase_body,
    openapi_writer: Callable[[RunLayout, Any], Any] | None = None,
) -> PipelineRunOutput:
    """Run ``phases`` of an existing run in order, skipping the unchanged ones.

    Stops at the first failed phase. Holds the run lock for the whole time. ``guards``
    (pipeline/guards.py) fail a run that comes out empty or shrinks too much against its base.
    ``executor`` (``phases/executor.py``) runs the phases' per-document and per-batch work; the
    caller opens and closes it (``LOCAL``: here, limited work in workers started per call).
    ``follows`` is the completed run a plain rerun replaces as 'latest' (default: the base):
    unchanged extractions and the embedded store are taken from it (``PhaseContext.follows``).
    ``phase_runner`` runs one phase (default: ``phase.run(ctx)``; tests wrap it).
    ``openapi_writer`` writes served/openapi.json for the serve phase (``app.serving.write_openapi``:
    a phase does not import the HTTP app).
    """
    forced = set(force_phases)
    started = monotonic_ms()
    # Artifacts are made durable at the manifest commits, one sync each (storage/atomic.py).
    # File hashes known by stat (storage/filehashes.py): a rerun does not read unchanged files again.
    # The cyclic collector runs rarely meanwhile (pipeline/gc_policy.py).
    with (
        fewer_collections(),
        deferred_sync(),
        RunSession.open(layout) as session,
        known_file_hashes(layout.runs_dir),
    ):
        remove_stale_temp_files(layout.root)  # writes a SIGKILLed process never finished
        manifest = session.manifest
        frozen = frozen_config(config)
        if sha256_json(frozen) != manifest.config_hash:
            write_frozen_config(layout, frozen)
            manifest.config_hash = sha256_json(frozen)
        ctx = PhaseContext(
            layout=layout,
            config=config,
            global_config=global_config or GlobalConfig(),
            progress=progress or NullProgress(),
            embedder_override=embedder_override,
            base_layout=base_layout,
            follows=follows or base_layout,
            executor=executor,
            openapi_writer=openapi_writer,
            manifest=manifest,  # phases read their upstream's entry here, not from manifest.json again
        )
        run_guards = guards or RunGuards(max_shrink=config.max_shrink)
        base_manifest = read_manifest(base_layout) if base_layout is not None else None
        if base_layout is not None:
            manifest.base_run_id = manifest.base_run_id or base_layout.run_id
        # The run this one follows (its base, or the 'latest' it replaces) is in use: 'run cleanup' keeps it.
        used = ctx.follows
        base_mark = in_use(layout.runs_dir, used.run_id, "base") if used else contextlib.nullcontext()
        with base_mark:
            results, failed = _run_phases(ctx, session, phases, forced, phase_runner, run_guards, base_manifest)
        _finish(ctx, manifest, failed)
        duration = monotonic_ms() - started
        manifest.timing = Timing(
            total_duration_ms=sum(manifest.timing.phase_durations.values()),
            phase_durations=manifest.timing.phase_durations,
        )
        session.commit(totals=False)
    status: Literal["completed", "partial", "failed"] = (
        "failed" if manifest.status == "failed" else "completed" if manifest.status == "completed" else "partial"
    )
    return PipelineRunOutput(
        run_id=layout.run_id,
        status=status,
        manifest_path=str(layout.manifest),
        phases=results,
        summary=PipelineSummary(
            sources_fetched=manifest.totals.sources_fetched,
            chunks_indexed=manifest.totals.vectors_indexed,
            duration_ms=duration,
            errors=manifest.totals.errors_encountered,
        ),
    )


def _run_phases(
    ctx: PhaseContext,
    session: RunSession,
    phases: Iterable[str],
    forced: set[str],
    phase_runner: PhaseRunner,
    guards: RunGuards,
    base_manifest: RunManifest | None,
) -> tuple[dict[PhaseName, PhaseResult], bool]:
    """Each phase in order, its end committed; stops at the first that fails. (results, failed)

    When a phase hands work to its workers and waits (``ctx.waiting_on_workers``), the later
    phases' slow imports start on a background thread (``pipeline/preload.py``), joined before
    this returns."""
    manifest = session.manifest
    results: dict[PhaseName, PhaseResult] = {}
    names = list(phases)
    preload = Preload()
    # Work a later phase can begin now, beside the earlier ones (Phase.start_early).
    endings = [end for name in names if name not in forced and (end := get_phase(name).start_early(ctx)) is not None]

    def preload_after(position: int) -> Callable[[], None]:
        later = [get_phase(name) for name in names[position + 1 :]]
        return lambda: preload.start(item for phase in later for item in phase.prepare_ahead(ctx))

    try:
        for position, name in enumerate(names):
            phase = get_phase(name)
            ctx.waiting_on_workers = preload_after(position)
            lock = (
                shared_store_lock(ctx.layout.runs_dir, ctx.config.index.vector_db)
                if name == "index"
                else contextlib.nullcontext()
            )
            with lock:
                outcome = _run_phase(
                    ctx,
                    session,
                    phase,
                    force=name in forced,
                    phase_runner=phase_runner,
                    guards=guards,
                    base_manifest=base_manifest,
                )
            results[phase.name] = outcome.result
            if outcome.manifest is not None:
                manifest.phases[phase.name] = outcome.manifest
                manifest.timing.phase_durations[phase.name] = outcome.result.duration_ms
            manifest.current_phase = None
            if outcome.result.status == "failed":
                return results, True
            if outcome.result.status != "skipped":  # a skipped phase changed nothing to commit
                session.commit()
        return results, False
    finally:
        ctx.waiting_on_workers = _nothing
        preload.join()
        for end in endings:
            end()


def _nothing() -> None:
    return None


def _finish(ctx: PhaseContext, manifest: RunManifest, failed: bool) -> None:
    """The run's totals and status; a run that passed everything and becomes 'latest' publishes."""
    layout = ctx.layout
    manifest.totals = totals_of(manifest)
    complete = all(
        (done := manifest.phases.get(cast(PhaseName, p))) is not None and done.status == "completed" for p in PHASES
    )
    if not failed and becomes_latest(layout.runs_dir, layout.run_id):
        # The commit point: every phase and guard has passed, 'latest' moves with this commit.
        failed = not _publish(ctx, manifest)
        manifest.totals = totals_of(manifest)
    if failed:
        manifest.status = "failed"
    elif manifest.totals.errors_encountered or not complete:
        manifest.status = "partial"
    else:
        manifest.status = "completed"
    manifest.completed_at = utc_now()
