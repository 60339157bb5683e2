"""Running the pipeline as a use case: what ``api.pipeline_run``, ``api.run_phase`` and the run
verbs (status, list, diff, cleanup, serve) do.

The runner (``pipeline/runner.py``) plus what sits above it: resolving the runs folder and
'latest', validating the config before a run exists, choosing the executor, the base of an
incremental run, the serve phase's OpenAPI writer (generated from the HTTP app) and
``serve.auto_start``. The tools, eval, the docs index and the library server call these
directly; ``api`` re-exports them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from indexfoundry.app.serving import start_background, write_openapi
from indexfoundry.errors import ConfigInvalid, IndexFoundryError
from indexfoundry.models.config import (
    ApiInfo,
    ExecutionConfig,
    GlobalConfig,
    PipelineConfig,
    RateLimitConfig,
    ServeEndpoint,
    load_global_config,
    load_pipeline_config,
    parse_pipeline_config,
)
from indexfoundry.models.ids import is_latest, latest_of, latest_pipeline
from indexfoundry.models.manifests import PipelineRunOutput, RunManifest
from indexfoundry.models.serve import ServeOpenapiOutput, ServeStartOutput
from indexfoundry.phases.executor import Executor
from indexfoundry.pipeline.cleanup import RunCleanupOutput
from indexfoundry.pipeline.diff import RunDiffOutput
from indexfoundry.pipeline.executors import open_executor
from indexfoundry.pipeline.runner import PhaseRunner, create_run, execute, new_run_id, run_phase_body
from indexfoundry.pipeline.runs import (
    RunListItem,
    RunStatusOutput,
    latest_run,
    list_runs,
    run_status,
)
from indexfoundry.pipeline.runs import pinned_latest as pinned_latest
from indexfoundry.pipeline.runs import resolve_run_id as resolve_run_id
from indexfoundry.storage.layout import PHASES, RunLayout
from indexfoundry.storage.layout import runs_dir_for as runs_dir_for
from indexfoundry.storage.manifest import load_manifest, load_run_config


def load_config(
    config: str | Path | dict[str, Any] | PipelineConfig, global_config: GlobalConfig | None = None
) -> PipelineConfig:
    """A validated pipeline config from a file path, a mapping or a model."""
    glob = global_config or load_global_config()
    if isinstance(config, PipelineConfig):
        return config
    if isinstance(config, dict):
        return parse_pipeline_config(config, base_dir=Path.cwd(), glob=glob)
    return load_pipeline_config(Path(config), glob)


def validate_config(
    config: str | Path | dict[str, Any] | PipelineConfig, global_config: GlobalConfig | None = None
) -> PipelineConfig:
    """``load_config`` plus the checks that would otherwise fail only once a phase runs
    (missing folders, unknown embedding model, a store whose extra is missing): CONFIG_INVALID."""
    from indexfoundry.pipeline.preflight import preflight

    cfg = load_config(config, global_config)
    preflight(cfg)
    return cfg


def pipeline_run(
    config: str | Path | dict[str, Any] | PipelineConfig,
    *,
    runs_dir: str | Path | None = None,
    run_id: str | None = None,
    force: bool = False,
    progress: Any = None,
    embedder: Any = None,
    base: str | None = None,
    allow_shrink: bool = False,
    executor: Literal["local", "ray"] | None = None,
    ray_address: str | None = None,
    phase_runner: PhaseRunner | None = None,
    opened_executor: Executor | None = None,
) -> PipelineRunOutput:
    """Run the whole pipeline: a new run, or with ``run_id`` a rerun of that run in place.

    With ``base`` (a run id or 'latest'), the new run reuses everything unchanged from that
    run by content hash; its artifacts equal those of a run from scratch. A rerun of a run
    that was created with a base uses that base again (e.g. resuming a killed run).

    The config is checked before a run is created (``validate_config``). A run that comes
    out empty fails with EMPTY_CONTENT; one that loses more than ``max_shrink`` of its base's
    documents or chunks fails with RUN_SHRANK unless ``allow_shrink``. Neither becomes 'latest'.
    ``phase_runner`` wraps each phase's run (tests use it to pause a phase).

    ``executor`` / ``ray_address`` override the config's ``execution`` (a Ray address alone
    means the Ray executor). The executor is connected before the run exists: a cluster that
    cannot be reached is refused (CONFIG_INVALID with its address) before any phase runs.
    ``opened_executor`` is one the caller opened and keeps (the docs server: one local
    executor, and so one warm worker pool, for its lifetime): used instead, never closed here.
    """
    glob = load_global_config()
    cfg = with_execution(validate_config(config, glob), executor, ray_address)
    root = runs_dir_for(runs_dir, glob)
    base_layout = _base_layout(root, base, cfg.pipeline_name())
    if opened_executor is not None:
        return _pipeline_run(
            cfg, glob, root, base_layout, run_id, force, progress, embedder, allow_shrink, opened_executor, phase_runner
        )
    with _opened_executor(cfg) as work:
        return _pipeline_run(
            cfg, glob, root, base_layout, run_id, force, progress, embedder, allow_shrink, work, phase_runner
        )


def with_execution(cfg: PipelineConfig, engine: Literal["local", "ray"] | None, address: str | None) -> PipelineConfig:
    """``cfg`` with the executor chosen on the command line (validated like the config file)."""
    if engine is None and address is None:
        return cfg
    update: dict[str, Any] = {"engine": engine or "ray"}
    if address is not None:
        update["address"] = address
    try:
        execution = ExecutionConfig.model_validate({**cfg.execution.model_dump(), **update})
    except ValidationError as exc:
        raise ConfigInvalid(
            f"invalid executor settings: {exc.errors()[0]['msg']}",
            suggestion="--ray-address takes auto, HOST:PORT or ray://HOST:PORT",
        ) from None
    return cfg.model_copy(update={"execution": execution})


@contextlib.contextmanager
def _opened_executor(cfg: PipelineConfig) -> Iterator[Executor]:
    work = open_executor(cfg.execution)
    try:
        yield work
    finally:
        work.close()


def _followed_latest(root: Path, cfg: PipelineConfig, run_id: str) -> RunManifest | None:
    """The current 'latest' run of ``cfg``'s pipeline, when it was built from the same sources as
    ``cfg``: the run a plain rerun of a config (a nightly job without ``--base``) would replace as
    'latest'."""
    latest = latest_run(root, pipeline=cfg.pipeline_name())
    if latest is None or latest == run_id:
        return None
    layout = RunLayout.for_run(root, latest)
    try:
        previous = load_run_config(layout)
        manifest = load_manifest(layout)
    except (IndexFoundryError, OSError, ValueError):
        return None
    same = [s.model_dump(mode="json") for s in previous.connect.sources] == [
        s.model_dump(mode="json") for s in cfg.connect.sources
    ]
    return manifest if same else None


def _pipeline_run(
    cfg: PipelineConfig,
    glob: GlobalConfig,
    root: Path,
    base_layout: RunLayout | None,
    run_id: str | None,
    force: bool,
    progress: Any,
    embedder: Any,
    allow_shrink: bool,
    work: Executor,
    phase_runner: PhaseRunner | None = None,
) -> PipelineRunOutput:
    from indexfoundry.pipeline.guards import RunGuards

    rid = run_id or cfg.run_id
    if rid is not None:
        layout = RunLayout.for_run(root, rid)
        if not layout.manifest.is_file():
            create_run(layout, cfg, base_run_id=base_layout.run_id if base_layout else None)
        elif base_layout is None:
            base_layout = _recorded_base(layout)
    else:
        layout = RunLayout.for_run(root, new_run_id())
        create_run(layout, cfg, base_run_id=base_layout.run_id if base_layout else None)
    if base_layout is not None and base_layout.run_id == layout.run_id:
        raise ConfigInvalid("a run cannot be its own base", suggestion="Pass another run id to --base")
    forced = PHASES if (force or cfg.force) else ()
    replaced = None if base_layout is not None or rid is not None else _followed_latest(root, cfg, layout.run_id)
    output = execute(
        layout,
        cfg,
        global_config=glob,
        force_phases=forced,
        progress=progress,
        embedder_override=embedder,
        base_layout=base_layout,
        # A plain rerun takes unchanged extractions and the embedded store from the 'latest' it
        # replaces, as a --base run does from its base (its artifacts are a fresh run's all the same).
        follows=RunLayout.for_run(root, replaced.run_id) if replaced is not None else None,
        guards=RunGuards(allow_shrink=allow_shrink, max_shrink=cfg.max_shrink, follows=replaced),
        executor=work,
        phase_runner=phase_runner or run_phase_body,
        openapi_writer=write_openapi,
    )
    if cfg.serve.auto_start and output.status != "failed":
        # Serves this pipeline's 'latest': a server already started this way switches to the new run by itself.
        started = start_background(
            root, latest_of(cfg.pipeline_name()), host=cfg.serve.host, port=cfg.serve.port or 8080
        )
        output.retrieval_endpoint = started.retrieval_endpoint
    return output


def _base_layout(root: Path, base: str | None, pipeline: str) -> RunLayout | None:
    """The base run of an incremental run. 'latest' is the newest completed run of the config's
    own pipeline ('latest:<pipeline>' another's); with no completed run yet it means a full run
    (so a nightly ``--base latest`` also works the first night); a named run must exist."""
    if base is None:
        return None
    if is_latest(base):
        found = latest_run(root, pipeline=latest_pipeline(base) or pipeline)
        return RunLayout.existing(root, found) if found is not None else None
    return RunLayout.existing(root, base)


def _recorded_base(layout: RunLayout) -> RunLayout | None:
    """The base run recorded in a run's manifest, when it still exists."""
    from indexfoundry.storage.manifest import read_manifest

    base_id = read_manifest(layout).base_run_id
    if base_id is None:
        return None
    base = RunLayout.for_run(layout.runs_dir, base_id)
    return base if base.manifest.is_file() else None


def run_phase(
    phase: str,
    run_id: str,
    *,
    runs_dir: str | Path | None = None,
    force: bool = False,
    progress: Any = None,
    embedder: Any = None,
    allow_shrink: bool = False,
) -> PipelineRunOutput:
    """Rerun one phase of an existing run (skipped when unchanged unless ``force``); the run
    guards of ``pipeline_run`` apply."""
    from indexfoundry.pipeline.guards import RunGuards

    if phase not in PHASES:
        raise ConfigInvalid(f"unknown phase '{phase}'", suggestion=f"One of: {', '.join(PHASES)}")
    glob = load_global_config()
    root = runs_dir_for(runs_dir, glob)
    layout = RunLayout.existing(root, resolve_run_id(root, run_id))
    cfg = load_run_config(layout)
    return execute(
        layout,
        cfg,
        global_config=glob,
        base_layout=_recorded_base(layout),
        phases=[phase],
        force_phases=[phase] if force else [],
        progress=progress,
        embedder_override=embedder,
        guards=RunGuards(allow_shrink=allow_shrink, max_shrink=cfg.max_shrink),
        openapi_writer=write_openapi,
    )


def status(run_id: str, *, runs_dir: str | Path | None = None) -> RunStatusOutput:
    """A run's status (``indexfoundry_run_status``)."""
    root = runs_dir_for(runs_dir)
    return run_status(RunLayout.existing(root, resolve_run_id(root, run_id)))


def runs(
    *,
    runs_dir: str | Path | None = None,
    status_filter: Literal["all", "completed", "running", "failed", "partial"] = "all",
    limit: int = 20,
    before: str | None = None,
    after: str | None = None,
    pipeline: str | None = None,
) -> list[RunListItem]:
    """The runs of a runs folder, filtered (``indexfoundry_run_list``; ``pipeline``: that pipeline's only)."""
    return list_runs(runs_dir_for(runs_dir), status_filter, limit, before, after, pipeline)


def diff(
    run_id_a: str, run_id_b: str, *, runs_dir: str | Path | None = None, include_chunks: bool = False
) -> RunDiffOutput:
    """``indexfoundry_run_diff``: what changed from run A to run B (timing fields ignored)."""
    from indexfoundry.pipeline.diff import run_diff

    root = runs_dir_for(runs_dir)
    a = RunLayout.existing(root, resolve_run_id(root, run_id_a))
    b = RunLayout.existing(root, resolve_run_id(root, run_id_b))
    return run_diff(a, b, include_chunks=include_chunks)


def cleanup(
    *,
    runs_dir: str | Path | None = None,
    older_than_days: int = 30,
    keep_manifests: bool = True,
    dry_run: bool = True,
    max_runs: int | None = None,
) -> RunCleanupOutput:
    """``indexfoundry_run_cleanup``; ``max_runs`` defaults to the global config's ``storage.max_runs``."""
    from indexfoundry.pipeline.cleanup import cleanup_runs

    glob = load_global_config()
    return cleanup_runs(
        runs_dir_for(runs_dir, glob),
        older_than_days=older_than_days,
        keep_manifests=keep_manifests,
        dry_run=dry_run,
        max_runs=max_runs if max_runs is not None else glob.storage.max_runs,
    )


def serve_openapi(
    run_id: str,
    *,
    runs_dir: str | Path | None = None,
    api_info: ApiInfo | None = None,
    endpoints: list[ServeEndpoint] | None = None,
    include_schemas: bool = True,
) -> ServeOpenapiOutput:
    """``indexfoundry_serve_openapi``: write ``served/openapi.json`` from the same app the server runs."""
    root = runs_dir_for(runs_dir)
    layout = RunLayout.existing(root, resolve_run_id(root, run_id))
    return write_openapi(
        layout, load_run_config(layout).serve, api_info=api_info, endpoints=endpoints, include_schemas=include_schemas
    )


def serve_start(
    run_id: str,
    *,
    runs_dir: str | Path | None = None,
    host: str = "127.0.0.1",
    port: int = 8080,
    cors_origins: list[str] | None = None,
    rate_limit: RateLimitConfig | None = None,
    log_requests: bool | None = None,
) -> ServeStartOutput:
    """``indexfoundry_serve_start``: the HTTP API in a background process; returns once it answers.
    ``run_id`` may be 'latest': the server then switches to each newly completed run."""
    return start_background(
        runs_dir_for(runs_dir),
        run_id,
        host=host,
        port=port,
        cors_origins=cors_origins,
        rate_limit=rate_limit,
        log_requests=log_requests,
    )
