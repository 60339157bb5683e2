"""The library's entry points. The CLI, the HTTP API and the MCP server all call these.

``import indexfoundry.api`` is light: the names it re-exports (``Run``, ``open_run``,
``pipeline_run`` …) are imported on first use (``__getattr__`` below), and every function here
imports what it calls when it is called, so a CLI command pays only for what it uses.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from pydantic import BaseModel

    # Types a surface names in annotations only; it gets the objects from the functions below
    # (``docs_index``, ``library_registry``, ``library_reader``, ``parse_library_flag``).
    from indexfoundry.app.agent import AgentScope as AgentScope
    from indexfoundry.app.agent import Roots as Roots
    from indexfoundry.app.answers import AnswersResult as AnswersResult
    from indexfoundry.app.docs_index import DocsIndex as DocsIndex
    from indexfoundry.app.eval import EvalResult as EvalResult
    from indexfoundry.app.export import LlmsTxtOutput
    from indexfoundry.app.freshness import FreshnessCache as FreshnessCache
    from indexfoundry.app.handles import Page as Page
    from indexfoundry.app.handles import PageSection as PageSection
    from indexfoundry.app.handles import Run as Run
    from indexfoundry.app.handles import RunPool as RunPool
    from indexfoundry.app.handles import open_run as open_run
    from indexfoundry.app.libraries import Library as Library
    from indexfoundry.app.libraries import LibraryEntry as LibraryEntry
    from indexfoundry.app.libraries import LibraryReader as LibraryReader
    from indexfoundry.app.libraries import LibraryRegistry as LibraryRegistry
    from indexfoundry.app.runs import cleanup as cleanup
    from indexfoundry.app.runs import diff as diff
    from indexfoundry.app.runs import load_config as load_config
    from indexfoundry.app.runs import pinned_latest as pinned_latest
    from indexfoundry.app.runs import pipeline_run as pipeline_run
    from indexfoundry.app.runs import resolve_run_id as resolve_run_id
    from indexfoundry.app.runs import run_phase as run_phase
    from indexfoundry.app.runs import runs as runs
    from indexfoundry.app.runs import serve_openapi as serve_openapi
    from indexfoundry.app.runs import serve_start as serve_start
    from indexfoundry.app.runs import status as status
    from indexfoundry.app.runs import validate_config as validate_config
    from indexfoundry.app.runs import with_execution as with_execution
    from indexfoundry.app.serving import ServerRecords as ServerRecords
    from indexfoundry.app.tools.index import VerifyOutput
    from indexfoundry.app.tools.registry import ToolSpec as ToolSpec
    from indexfoundry.models.config import ServeConfig
    from indexfoundry.models.connections import Connections as Connections
    from indexfoundry.models.freshness import FreshnessReport as FreshnessReport
    from indexfoundry.models.history import EvalRecord, RunDetail, RunHistory
    from indexfoundry.models.retrieval import SearchFilter, SearchMode, SearchResponse
    from indexfoundry.pipeline.diff import RunDiffOutput
    from indexfoundry.pipeline.runs import RunListItem as RunListItem
    from indexfoundry.retrieval.service import SearchService
    from indexfoundry.storage.layout import RunLayout
    from indexfoundry.storage.layout import is_run_id as is_run_id
    from indexfoundry.storage.layout import runs_dir_for as runs_dir_for

    # The metrics ``evaluate`` reports, in the order the CLI prints them.
    EVAL_METRICS: tuple[str, ...]
    # The metrics ``evaluate_answers`` reports, in the order the CLI prints them.
    ANSWER_METRICS: tuple[str, ...]

# What api re-exports, imported on first use: name -> (module, attribute).
_EXPORTS: dict[str, tuple[str, str]] = {
    "EVAL_METRICS": ("indexfoundry.app.eval", "METRICS"),
    "ANSWER_METRICS": ("indexfoundry.app.answers", "ANSWER_METRICS"),
    "AnswersResult": ("indexfoundry.app.answers", "AnswersResult"),
    **{name: ("indexfoundry.app.eval", name) for name in ("EvalResult",)},
    **{name: ("indexfoundry.app.handles", name) for name in ("Page", "PageSection", "Run", "RunPool", "open_run")},
    **{
        name: ("indexfoundry.app.runs", name)
        for name in (
            "cleanup",
            "diff",
            "load_config",
            "pinned_latest",
            "pipeline_run",
            "resolve_run_id",
            "run_phase",
            "runs",
            "serve_openapi",
            "serve_start",
            "status",
            "validate_config",
            "with_execution",
        )
    },
    "ToolSpec": ("indexfoundry.app.tools.registry", "ToolSpec"),
    **{name: ("indexfoundry.app.agent", name) for name in ("AgentScope", "Roots")},
    "Connections": ("indexfoundry.models.connections", "Connections"),
    "FreshnessReport": ("indexfoundry.models.freshness", "FreshnessReport"),
    "FreshnessCache": ("indexfoundry.app.freshness", "FreshnessCache"),
    "ServerRecords": ("indexfoundry.app.serving", "ServerRecords"),
    "RunListItem": ("indexfoundry.pipeline.runs", "RunListItem"),
    **{name: ("indexfoundry.storage.layout", name) for name in ("is_run_id", "runs_dir_for")},
    "DocsIndex": ("indexfoundry.app.docs_index", "DocsIndex"),
    **{
        name: ("indexfoundry.app.libraries", name)
        for name in ("Library", "LibraryEntry", "LibraryReader", "LibraryRegistry")
    },
}

if not TYPE_CHECKING:  # (hidden from mypy, which checks the names through the imports above)

    def __getattr__(name: str) -> Any:
        found = _EXPORTS.get(name)
        if found is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(found[0]), found[1])
        globals()[name] = value
        return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


def _root(runs_dir: str | Path | None) -> Path:
    from indexfoundry.storage.layout import runs_dir_for

    return runs_dir_for(runs_dir)


def _resolved(root: Path, run_id: str) -> str:
    from indexfoundry.app.runs import resolve_run_id

    return resolve_run_id(root, run_id)


def _layout(run_id: str, runs_dir: str | Path | None) -> RunLayout:
    from indexfoundry.storage.layout import RunLayout

    root = _root(runs_dir)
    return RunLayout.existing(root, _resolved(root, run_id))


def search(
    query: str,
    run_id: str,
    *,
    runs_dir: str | Path | None = None,
    top_k: int = 10,
    mode: SearchMode = "hybrid",
    filters: list[SearchFilter] | None = None,
    offset: int = 0,
    embedder: Any = None,
) -> SearchResponse:
    """Search one run (opens and closes a ``Run``; hold one from ``open_run`` for many queries)."""
    from indexfoundry.app.handles import open_run

    with open_run(run_id, runs_dir, embedder=embedder) as run:
        return run.search(query, top_k=top_k, mode=mode, filters=filters, offset=offset)


def search_service(run_id: str, *, runs_dir: str | Path | None = None, embedder: Any = None) -> SearchService:
    """The run's ``SearchService`` itself (evaluation and tests; surfaces hold a ``Run``)."""
    from indexfoundry.retrieval.service import open_service

    return open_service(_layout(run_id, runs_dir), embedder)


def evaluate(
    *,
    beir_dir: str | Path | None = None,
    split: str = "test",
    run_id: str | None = None,
    queries: str | Path | None = None,
    qrels: str | Path | None = None,
    mode: Literal["semantic", "keyword", "hybrid", "all"] = "all",
    runs_dir: str | Path | None = None,
    embedding_model: str = "local",
    progress: Any = None,
    embedder: Any = None,
    reranker: str | None = None,
    top_k_to_rerank: int = 50,
) -> EvalResult:
    """nDCG@10 / recall@100 / MRR@10 per mode: index a BEIR folder through the pipeline, or use a run.

    ``reranker`` (``cross-encoder:<folder>``, ``cohere:<model>``, ``http:<url>``) reranks the top
    ``top_k_to_rerank`` candidates of every mode.
    """
    from indexfoundry.app.eval import evaluate as run_evaluation

    return run_evaluation(
        beir_dir=Path(beir_dir) if beir_dir is not None else None,
        split=split,
        run_id=run_id,
        queries=Path(queries) if queries is not None else None,
        qrels=Path(qrels) if qrels is not None else None,
        mode=mode,
        runs_dir=_root(runs_dir),
        embedding_model=embedding_model,
        progress=progress,
        embedder=embedder,
        reranker=reranker,
        top_k_to_rerank=top_k_to_rerank,
    )


def evaluate_answers(
    answers: str | Path,
    *,
    folder: str | Path | None = None,
    run_id: str | None = None,
    mode: Literal["semantic", "keyword", "hybrid", "all"] = "all",
    split: Literal["dev", "test"] | None = None,
    min_overlap: float = 1.0,
    runs_dir: str | Path | None = None,
    embedding_model: str = "local",
    progress: Any = None,
    embedder: Any = None,
    reranker: str | None = None,
    top_k_to_rerank: int = 50,
) -> AnswersResult:
    """hit@1/3/5/10 and MRR@10 of passage-keyed questions per mode, on an existing run or on a docs
    folder indexed as docs mode indexes it (``indexfoundry eval --answers FILE``).

    A question counts as found at the rank of the first returned chunk, from its ``file``, that
    holds its ``passage`` (whitespace runs as one space; with ``min_overlap`` < 1 a passage cut by
    a chunk boundary counts when a chunk holds at least that share of it).
    """
    from indexfoundry.app.answers import evaluate_answers_file
    from indexfoundry.app.eval import modes_for

    return evaluate_answers_file(
        answers=Path(answers),
        folder=Path(folder) if folder is not None else None,
        run_id=run_id,
        runs_dir=_root(runs_dir),
        modes=modes_for(mode),
        split=split,
        min_overlap=min_overlap,
        embedding_model=embedding_model,
        progress=progress,
        embedder=embedder,
        reranker=reranker,
        top_k_to_rerank=top_k_to_rerank,
    )


def check_freshness(
    run_id: str,
    *,
    runs_dir: str | Path | None = None,
    uris: list[str] | None = None,
    sample: float | None = None,
    max_seconds: float = 30.0,
    local_only: bool = False,
    cache: FreshnessCache | None = None,
    budget: Callable[[int], int] | None = None,
) -> FreshnessReport:
    """Which sources of a run changed since it read them: files by hash, URLs by conditional GET.

    With ``cache`` a source checked within its reuse interval is answered from that check;
    ``budget(n)`` pays for the ``n`` checks left and returns how many it paid for."""
    from indexfoundry.app.freshness import check_freshness as check

    return check(
        _layout(run_id, runs_dir),
        uris=uris,
        sample=sample,
        max_seconds=max_seconds,
        local_only=local_only,
        cache=cache,
        budget=budget,
    )


def config_schema() -> dict[str, Any]:
    """JSON Schema of the pipeline config file."""
    from indexfoundry.models.config import pipeline_config_schema

    return pipeline_config_schema()


def export_llms_txt(
    run_id: str, *, runs_dir: str | Path | None = None, out_dir: str | Path | None = None, title: str | None = None
) -> LlmsTxtOutput:
    """Write llms.txt, llms-full.txt and their pages for a run (default folder: its served/)."""
    from indexfoundry.app.export import export_llms_txt as export

    return export(_layout(run_id, runs_dir), Path(out_dir) if out_dir is not None else None, title)


# ---------------------------------------------------------------- serve (HTTP API)
def served_settings(runs_dir: Path, run_spec: str) -> tuple[ServeConfig, dict[str, Any]]:
    """What a server of ``run_spec`` serves with: its run's ``serve`` section (defaults for 'latest'
    before any run completed), and what its retrieval profile adds (accepted filters, keys required).
    The server processes themselves are the HTTP surface's (``surfaces/http/processes.py``)."""
    from indexfoundry.app.serving import served_settings as settings

    return settings(runs_dir, run_spec)


# ---------------------------------------------------------------- the tool catalogue
def tool_specs() -> dict[str, ToolSpec]:
    """Every registered tool (``indexfoundry_connect_url`` …), by name, as the MCP server lists them."""
    from indexfoundry.app.tools.registry import load_tools

    return load_tools()


def agent_tool_specs(scope: AgentScope) -> dict[str, ToolSpec]:
    """The tools an agent (an MCP client) may call, with the agent's input models: names of the
    operator's connections instead of destinations and secrets, paths inside ``scope``'s roots."""
    from indexfoundry.app.agent import agent_tool_specs as specs

    return specs(scope)


def load_connections(path: str | Path) -> Connections:
    """The operator's connections file (YAML or JSON), checked; CONFIG_INVALID naming what is wrong."""
    from indexfoundry.models.connections import load_connections as load

    return load(Path(path))


def call_tool(name: str, arguments: dict[str, Any], *, runs_dir: str | Path | None = None, **context: Any) -> BaseModel:
    """Call the tool ``name`` with ``arguments`` (validated against its strict input
    model); a ``run_id`` of 'latest' names the newest completed run of ``runs_dir``."""
    from indexfoundry.app.tools.registry import call_tool as call

    root = _root(runs_dir)
    run_id = arguments.get("run_id")
    if isinstance(run_id, str):
        arguments = {**arguments, "run_id": _resolved(root, run_id)}
    return call(name, arguments, runs_dir=root, **context)


def verify_index(run_id: str, *, runs_dir: str | Path | None = None) -> VerifyOutput:
    """Compare the run's vector store with its ``indexed/embeddings.jsonl``: missing and extra ids."""
    from indexfoundry.app.tools.index import verify_run

    root = _root(runs_dir)
    return verify_run(_resolved(root, run_id), root)


def prepare_model(embedding_model: str = "local") -> str:
    """Make what ``embedding_model`` needs once per machine — the ``local`` model's ONNX file in
    the user cache — and return its model id (``scripts/setup.sh`` runs this for ``local``).
    Concurrent callers make the file once and all get that one."""
    from indexfoundry.backends.embedding.providers import resolve_embedder

    return resolve_embedder(embedding_model).model_id


# ---------------------------------------------------------------- run diff and evaluation reports
def render_diff(diff: RunDiffOutput, *, markdown: bool = False, with_text_diffs: bool = False) -> str:
    """A ``diff`` as terminal text, or as markdown for a pull request comment."""
    from indexfoundry.pipeline.diff import render_markdown, render_text

    return render_markdown(diff, with_text_diffs=with_text_diffs) if markdown else render_text(diff)


def eval_thresholds(values: list[str], *, answers: bool = False) -> dict[tuple[str | None, str], float]:
    """``METRIC=VALUE`` / ``MODE:METRIC=VALUE`` minimums (``indexfoundry eval --min``); CONFIG_INVALID if malformed.

    ``answers``: the metrics of an answers file (hit@k, mrr@10) instead of the BEIR ones."""
    from indexfoundry.app.answers import ANSWER_METRICS
    from indexfoundry.app.eval import METRICS, parse_thresholds

    return parse_thresholds(values, ANSWER_METRICS if answers else METRICS)


def eval_missed(metrics: dict[str, dict[str, float]], thresholds: dict[tuple[str | None, str], float]) -> list[str]:
    """The minimums an evaluation's metrics fall below, one line each."""
    from indexfoundry.app.eval import missed_thresholds

    return missed_thresholds(metrics, thresholds)


def eval_record(result: EvalResult, *, runs_dir: str | Path | None = None, source: str | None = None) -> EvalRecord:
    """Record an evaluation's metrics into the run it measured (``logs/evals.ndjson``), where the
    runs dashboard charts retrieval quality over time; ``source`` names the queries file."""
    from indexfoundry.app.history import record_eval

    return record_eval(
        _root(runs_dir), result.run_id, result.queries, result.metrics, reranker=result.reranker, queries_file=source
    )


def run_history(*, runs_dir: str | Path | None = None) -> RunHistory:
    """Every pipeline of the runs folder with its runs (the newest 200), oldest first: status,
    times, phase durations, counts as ``run list``, refusals, ``latest``, recorded evaluations."""
    from indexfoundry.app.history import run_history as history

    return history(_root(runs_dir))


def run_detail(run_id: str, *, runs_dir: str | Path | None = None) -> RunDetail:
    """One run and ``run diff --format markdown --include-chunks`` against its pipeline's run before it."""
    from indexfoundry.app.history import run_detail as detail

    return detail(_root(runs_dir), run_id)


def eval_write_rankings(result: EvalResult, path: str | Path) -> None:
    """Write every mode's ranked document ids (TREC run format, tag = mode)."""
    from indexfoundry.app.eval import write_trec_run

    write_trec_run(result, Path(path))


# ---------------------------------------------------------------- docs mode and libraries (MCP, HTTP)
def docs_runs_dir(runs_dir: str | Path | None = None) -> Path:
    """The runs folder of docs mode: ``runs_dir``, else $INDEXFOUNDRY_RUNS_DIR, else the user's
    docs-mode runs folder (not ./runs: a docs server may start from any working directory)."""
    import os

    from indexfoundry.app.docs_index import default_docs_runs_dir
    from indexfoundry.storage.layout import ENV_RUNS_DIR

    if runs_dir is None and not os.environ.get(ENV_RUNS_DIR):
        return default_docs_runs_dir()
    return _root(runs_dir)


def docs_index(
    folder: Path, runs_dir: Path, *, embedding_model: str = "local", embedder: Any = None, progress: Any = None
) -> DocsIndex:
    """Docs mode's index of ``folder``: built on first use, rebuilt when the folder changes."""
    from indexfoundry.app.docs_index import DocsIndex

    return DocsIndex(folder, runs_dir, embedding_model=embedding_model, embedder=embedder, progress=progress)


def parse_library_flag(value: str) -> LibraryEntry:
    """``NAME@VERSION=RUN_ID|CONFIG|FOLDER`` (``--library``) as a library entry; CONFIG_INVALID if malformed."""
    from indexfoundry.app.libraries import parse_library_flag as parse

    return parse(value)


def library_registry(
    runs_dir: Path,
    entries: list[LibraryEntry] | None = None,
    file: Path | None = None,
    *,
    embedding_model: str = "local",
    embedder: Any = None,
    refresh_interval_s: float = 3600.0,
) -> LibraryRegistry:
    """The libraries a server serves (``--library`` entries and/or a ``libraries.yaml``)."""
    from indexfoundry.app.libraries import LibraryRegistry

    return LibraryRegistry(
        runs_dir,
        entries,
        file,
        embedding_model=embedding_model,
        embedder=embedder,
        refresh_interval_s=refresh_interval_s,
    )


def library_reader(registry: LibraryRegistry, runs: Any) -> LibraryReader:
    """Lists, searches and reads a registry's libraries through ``runs`` (a ``RunPool``, or
    anything with its ``using(run_id)``)."""
    from indexfoundry.app.libraries import LibraryReader

    return LibraryReader(registry, runs)


# ---------------------------------------------------------------- paths an agent names (MCP)
def resolve_in_run(runs_dir: str | Path, run_id: str, relative: str) -> Path:
    """The file ``relative`` names inside run ``run_id`` of ``runs_dir`` (symlinks followed);
    NOT_FOUND when it resolves outside the run folder, RUN_NOT_FOUND when ``run_id`` is not a run id."""
    from indexfoundry.storage.layout import RunLayout

    return RunLayout.for_run(Path(runs_dir), run_id).resolve_inside(relative)
