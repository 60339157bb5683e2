"""The tool catalogue an agent (an MCP client) gets: every registered tool, with the agent's inputs.

- Tools whose inputs name nothing beyond the run folder (``AS_IS``: run status, list, diff and
  cleanup; extract and normalize on a run's files, whose paths the tools keep inside the run;
  the OpenAPI spec) are exposed with their own inputs.
- The others (``AGENT_INPUTS``) take the agent's input model (``inputs.py``,
  ``models/agent.py``). A call is validated against it (``extra="forbid"``), then turned into
  the operator's input: connection names resolved from the connections file, paths resolved
  inside the roots; connect tools fetch with :meth:`AgentScope.grant` as their network bounds.
  The operator's tool function then runs as it does for the CLI.
- A registered tool in neither set is not exposed to agents.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ValidationError

from indexfoundry.app.agent.inputs import (
    AgentBuildProfile,
    AgentConnectCrawl,
    AgentConnectLlmsTxt,
    AgentConnectPdf,
    AgentConnectRepo,
    AgentConnectSitemap,
    AgentConnectUrl,
    AgentIndexEmbed,
    AgentIndexUpsert,
    AgentServeStart,
)
from indexfoundry.app.agent.pipeline import full_config, is_local
from indexfoundry.app.agent.scope import AgentScope
from indexfoundry.app.tools.connect_models import (
    ConnectCrawlInput,
    ConnectFolderInput,
    ConnectLlmsTxtInput,
    ConnectPdfInput,
    ConnectRepoInput,
    ConnectSitemapInput,
    ConnectUrlInput,
)
from indexfoundry.app.tools.index import embed_run, upsert_run
from indexfoundry.app.tools.profile import BuildProfileInput
from indexfoundry.app.tools.registry import ToolSpec, load_tools
from indexfoundry.app.tools.runs import PipelineRunInput
from indexfoundry.errors import ConfigInvalid
from indexfoundry.models.agent import AgentPipelineRun
from indexfoundry.models.config import IndexConfig, VectorDbConfig
from indexfoundry.models.embedders import EMBEDDERS
from indexfoundry.models.embedding import DEFAULT_HASH_DIMENSIONS
from indexfoundry.models.serve import ServeStartInput
from indexfoundry.models.validation import validation_error
from indexfoundry.storage.hashing import sha256_json

AS_IS: frozenset[str] = frozenset(
    {
        "indexfoundry_run_status",
        "indexfoundry_run_list",
        "indexfoundry_run_diff",
        "indexfoundry_run_cleanup",
        "indexfoundry_extract_pdf",
        "indexfoundry_extract_html",
        "indexfoundry_extract_document",
        "indexfoundry_normalize_chunk",
        "indexfoundry_normalize_enrich",
        "indexfoundry_normalize_dedupe",
        "indexfoundry_serve_openapi",
    }
)
Operator = Callable[..., BaseModel]


def _operator(model: type[BaseModel], data: dict[str, Any], tool: str) -> Any:
    """The operator's input ``data`` stands for (a connection that does not fit is CONFIG_INVALID)."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise validation_error(exc, f"{tool} (with the named connections)") from None


def pipeline_run(payload: AgentPipelineRun, *, scope: AgentScope, operator: Operator, **context: Any) -> BaseModel:
    data = full_config(payload, scope)
    if payload.base_run_id is not None:
        data["base_run_id"] = payload.base_run_id
    return operator(_operator(PipelineRunInput, data, "indexfoundry_pipeline_run"), **context)


def _fetching(model: type[BaseModel], kind: str) -> Callable[..., BaseModel]:
    """A connect tool that fetches: the operator's input, fetched within the agent's grant."""

    def call(payload: Any, *, scope: AgentScope, operator: Operator, **context: Any) -> BaseModel:
        data = payload.model_dump(mode="json", exclude_unset=True, exclude={"fetch"})
        tool = f"indexfoundry_connect_{kind}"
        return operator(_operator(model, data, tool), **{**context, "network": scope.grant(payload.fetch)})

    return call


def connect_folder(payload: ConnectFolderInput, *, scope: AgentScope, operator: Operator, **context: Any) -> BaseModel:
    resolved = payload.model_copy(update={"path": str(scope.roots.resolve(payload.path, "path"))})
    return operator(resolved, **{**context, "network": scope.grant(None)})


def connect_pdf(payload: AgentConnectPdf, *, scope: AgentScope, operator: Operator, **context: Any) -> BaseModel:
    data = payload.model_dump(mode="json", exclude_unset=True)
    if is_local(payload.source):
        data["source"] = str(scope.roots.resolve(payload.source, "source"))
    return operator(ConnectPdfInput.model_validate(data), **{**context, "network": scope.grant(None)})


def connect_repo(payload: AgentConnectRepo, *, scope: AgentScope, operator: Operator, **context: Any) -> BaseModel:
    data = payload.model_dump(mode="json", exclude_unset=True)
    if payload.path is not None:
        data["path"] = str(scope.roots.resolve(payload.path, "path"))
    return operator(ConnectRepoInput.model_validate(data), **{**context, "network": scope.grant(None)})


def index_embed(payload: AgentIndexEmbed, *, scope: AgentScope, operator: Operator, **context: Any) -> BaseModel:
    model = payload.model
    common = {"batch_size": payload.batch_size, "normalize_vectors": payload.normalize_vectors}
    if model.connection is not None:
        keys = scope.connections.get("embeddings", model.connection, "model.connection").index_keys()
        config = _operator(IndexConfig, {**keys, **common}, "indexfoundry_index_embed")
    elif EMBEDDERS[str(model.builtin)].naming == "dims":
        dims = model.dimensions or DEFAULT_HASH_DIMENSIONS
        config = IndexConfig(embedding_model=f"{model.builtin}:{dims}", **common)
    else:
        config = IndexConfig(embedding_model=str(model.builtin), **common)
    key = sha256_json(payload.model_dump(mode="json"))
    runs_dir, progress = context.get("runs_dir"), context.get("progress")
    return embed_run(payload.run_id, payload.chunks_path, config, payload.force, key, runs_dir, progress)


def index_upsert(payload: AgentIndexUpsert, *, scope: AgentScope, operator: Operator, **context: Any) -> BaseModel:
    data = payload.model_dump(mode="json", include={"collection", "namespace", "metadata_fields", "store_text"})
    data.update(upsert_mode=payload.upsert_mode, batch_size=payload.batch_size, provider=payload.provider or "chroma")
    if payload.connection is not None:
        store = scope.connections.get("stores", payload.connection, "connection")
        if store.collection is not None:
            if "collection" in payload.model_fields_set and payload.collection != store.collection:
                raise ConfigInvalid(
                    f"collection '{payload.collection}': store connection '{payload.connection}' "
                    f"holds the collection '{store.collection}' only",
                    suggestion=f"Leave the collection out, or use '{store.collection}'",
                )
            data["collection"] = store.collection
        data.update(store.vector_db_keys())
    vdb = _operator(VectorDbConfig, data, "indexfoundry_index_upsert")
    key = sha256_json(payload.model_dump(mode="json"))
    runs_dir, progress = context.get("runs_dir"), context.get("progress")
    return upsert_run(payload.run_id, payload.embeddings_path, payload.chunks_path, vdb, key, runs_dir, progress)


def build_profile(payload: AgentBuildProfile, *, scope: AgentScope, operator: Operator, **context: Any) -> BaseModel:
    data = payload.model_dump(mode="json", exclude_unset=True)
    reranker = data["retrieval_config"].get("reranker")
    if isinstance(reranker, dict) and reranker.get("connection") is not None:
        name = reranker.pop("connection")
        where = "retrieval_config.reranker.connection"
        reranker.update(scope.connections.get("rerankers", name, where).reranker_keys())
    elif isinstance(reranker, dict):
        reranker.pop("connection", None)
    return operator(_operator(BuildProfileInput, data, "indexfoundry_index_build_profile"), **context)


def serve_start(payload: AgentServeStart, *, scope: AgentScope, operator: Operator, **context: Any) -> BaseModel:
    data = payload.model_dump(mode="json", exclude_unset=True)
    return operator(_operator(ServeStartInput, data, "indexfoundry_serve_start"), **context)


AGENT_INPUTS: dict[str, tuple[type[BaseModel], Callable[..., BaseModel]]] = {
    "indexfoundry_pipeline_run": (AgentPipelineRun, pipeline_run),
    "indexfoundry_connect_url": (AgentConnectUrl, _fetching(ConnectUrlInput, "url")),
    "indexfoundry_connect_sitemap": (AgentConnectSitemap, _fetching(ConnectSitemapInput, "sitemap")),
    "indexfoundry_connect_crawl": (AgentConnectCrawl, _fetching(ConnectCrawlInput, "crawl")),
    "indexfoundry_connect_llms_txt": (AgentConnectLlmsTxt, _fetching(ConnectLlmsTxtInput, "llms_txt")),
    "indexfoundry_connect_folder": (ConnectFolderInput, connect_folder),
    "indexfoundry_connect_pdf": (AgentConnectPdf, connect_pdf),
    "indexfoundry_connect_repo": (AgentConnectRepo, connect_repo),
    "indexfoundry_index_embed": (AgentIndexEmbed, index_embed),
    "indexfoundry_index_upsert": (AgentIndexUpsert, index_upsert),
    "indexfoundry_index_build_profile": (AgentBuildProfile, build_profile),
    "indexfoundry_serve_start": (AgentServeStart, serve_start),
}


def agent_tool_specs(scope: AgentScope) -> dict[str, ToolSpec]:
    """Every tool an agent may call, by name, with the input model it is listed and validated with."""
    specs: dict[str, ToolSpec] = {}
    for name, spec in load_tools().items():
        if name in AS_IS:
            specs[name] = spec
        elif name in AGENT_INPUTS:
            model, call = AGENT_INPUTS[name]
            bound = functools.partial(call, scope=scope, operator=spec.func)
            specs[name] = dataclasses.replace(spec, input_model=model, func=bound)
    return specs
