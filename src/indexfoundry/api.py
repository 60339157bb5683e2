"""The library's entry points. The CLI, the HTTP API and the MCP server all call these."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from indexfoundry.errors import ConfigInvalid, RunNotFound
from indexfoundry.models.config import (
    GlobalConfig,
    PipelineConfig,
    load_global_config,
    load_pipeline_config,
    parse_pipeline_config,
    pipeline_config_schema,
)
from indexfoundry.models.manifests import PipelineRunOutput
from indexfoundry.models.retrieval import SearchFilter, SearchMode, SearchRequest, SearchResponse
from indexfoundry.pipeline.runner import create_run, execute, load_run_config, new_run_id
from indexfoundry.pipeline.runs import RunListItem, RunStatusOutput, latest_run, list_runs, run_status
from indexfoundry.storage.layout import PHASES, RunLayout, resolve_runs_dir


def runs_dir_for(runs_dir: str | Path | None = None, global_config: GlobalConfig | None = None) -> Path:
    """The runs folder: argument, $INDEXFOUNDRY_RUNS_DIR, global config, or ./runs."""
    glob = global_config or load_global_config()
    return resolve_runs_dir(runs_dir, glob.storage.runs_dir if glob.storage.runs_dir != "./runs" else None)


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


def resolve_run_id(runs_dir: Path, run_id: str) -> str:
    """Accept 'latest' as the newest completed (or partial) run."""
    if run_id == "latest":
        found = latest_run(runs_dir)
        if found is None:
            raise RunNotFound(f"no completed run in {runs_dir}", suggestion="Run 'indexfoundry pipeline run CONFIG'")
        return found
    return run_id


def pipeline_run(
    config: str | Path | dict[str, Any] | PipelineConfig,
    *,
    runs_dir: str | Path | None = None,
    run_id: str | None = None,
    force: bool = False,
    progress: Any = None,
    embedder: Any = None,
) -> PipelineRunOutput:
    """Run the whole pipeline: a new run, or with ``run_id`` a rerun of that run in place."""
    glob = load_global_config()
    cfg = load_config(config, glob)
    root = runs_dir_for(runs_dir, glob)
    rid = run_id or cfg.run_id
    if rid is not None:
        layout = RunLayout.for_run(root, rid)
        if not layout.manifest.is_file():
            create_run(layout, cfg)
    else:
        layout = RunLayout.for_run(root, new_run_id())
        create_run(layout, cfg)
    forced = PHASES if (force or cfg.force) else ()
    return execute(layout, cfg, global_config=glob, force_phases=forced, progress=progress, embedder_override=embedder)


def run_phase(
    phase: str,
    run_id: str,
    *,
    runs_dir: str | Path | None = None,
    force: bool = False,
    progress: Any = None,
    embedder: Any = None,
) -> PipelineRunOutput:
    """Rerun one phase of an existing run (skipped when unchanged unless ``force``)."""
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
        phases=[phase],
        force_phases=[phase] if force else [],
        progress=progress,
        embedder_override=embedder,
    )


def search(
    query: str,
    run_id: str,
    *,
    runs_dir: str | Path | None = None,
    top_k: int = 10,
    mode: SearchMode = "semantic",
    filters: list[SearchFilter] | None = None,
    embedder: Any = None,
) -> SearchResponse:
    """Search one run."""
    from indexfoundry.retrieval.service import open_service

    root = runs_dir_for(runs_dir)
    layout = RunLayout.existing(root, resolve_run_id(root, run_id))
    service = open_service(layout, embedder)
    return service.search(SearchRequest(query=query, top_k=top_k, mode=mode, filters=filters or []))


def status(run_id: str, *, runs_dir: str | Path | None = None) -> RunStatusOutput:
    """The seed's run_status."""
    root = runs_dir_for(runs_dir)
    return run_status(RunLayout.existing(root, resolve_run_id(root, run_id)))


def runs(
    *,
    runs_dir: str | Path | None = None,
    status_filter: Literal["all", "completed", "running", "failed", "partial"] = "all",
    limit: int = 20,
    before: str | None = None,
    after: str | None = None,
) -> list[RunListItem]:
    """The seed's run_list."""
    return list_runs(runs_dir_for(runs_dir), status_filter, limit, before, after)


def config_schema() -> dict[str, Any]:
    """JSON Schema of the pipeline config file."""
    return pipeline_config_schema()
