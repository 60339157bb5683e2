"""An agent's pipeline config turned into the operator's: names resolved, paths resolved in the roots.

:func:`full_config` returns the mapping an operator would have written for the same run: the
agent's own keys as given, plus

- every folder, local PDF and local repo path resolved inside the roots (``NOT_FOUND`` outside);
- ``connect``: the server's private-network allowances, and a named fetch connection's
  private hosts and ``headers_env`` with the only hosts those headers go to
  (``headers_env_hosts``); the agent's ``blocked_domains`` are added to the inherited ones,
  never put in their place;
- ``index``: an embedding connection's ``embedding_model``, ``base_url``, ``api_key_env`` ...;
  a store connection's ``vector_db.provider`` and ``connection`` (and its collection, when it
  names one);
- ``serve.retrieval.reranker``: a reranker connection's model, key variable and settings.

A name the connections file does not define is ``CONFIG_INVALID`` listing the names it does.
Nothing is resolved anywhere else, so the config a run freezes is exactly this one.
"""

from __future__ import annotations

from typing import Any

from indexfoundry.app.agent.scope import AgentScope
from indexfoundry.errors import ConfigInvalid
from indexfoundry.models.agent import (
    AgentConnect,
    AgentFolderSource,
    AgentIndex,
    AgentPdfSource,
    AgentPipelineRun,
    AgentRepoSource,
)
from indexfoundry.models.config import GlobalConfig, inherited_blocked_domains, load_global_config
from indexfoundry.models.values import HTTP_SCHEMES


def full_config(agent: AgentPipelineRun, scope: AgentScope, glob: GlobalConfig | None = None) -> dict[str, Any]:
    """The operator's pipeline config (a mapping) that ``agent`` stands for; see the module doc."""
    data = agent.model_dump(mode="json", exclude_unset=True, exclude={"base_run_id"})
    data["connect"] = _connect(agent.connect, data["connect"], scope, glob)
    if "index" in data:
        data["index"] = _index(agent.index, data["index"], scope)
    reranker = data.get("serve", {}).get("retrieval", {}).get("reranker")
    if isinstance(reranker, dict) and "connection" in reranker:
        name = reranker.pop("connection")
        if name is not None:
            where = "serve.retrieval.reranker.connection"
            reranker.update(scope.connections.get("rerankers", name, where).reranker_keys())
    return data


def is_local(source: str) -> bool:
    """A PDF source that is a path (an http(s) URL is fetched instead)."""
    return not source.lower().startswith(tuple(f"{s}://" for s in HTTP_SCHEMES))


def _connect(agent: AgentConnect, data: dict[str, Any], scope: AgentScope, glob: GlobalConfig | None) -> dict[str, Any]:
    for i, source in enumerate(agent.sources):
        out, where = data["sources"][i], f"connect.sources[{i}]"
        if isinstance(source, AgentFolderSource):
            out["path"] = str(scope.roots.resolve(source.path, f"{where}.path"))
        elif isinstance(source, AgentPdfSource) and is_local(source.source):
            out["source"] = str(scope.roots.resolve(source.source, f"{where}.source"))
        elif isinstance(source, AgentRepoSource) and source.path is not None:
            out["path"] = str(scope.roots.resolve(source.path, f"{where}.path"))
    grant = scope.grant(data.pop("fetch", None), "connect.fetch")
    data["allow_private_networks"] = grant.allow_private_networks
    if grant.allowed_private_hosts:
        data["allowed_private_hosts"] = list(grant.allowed_private_hosts)
    if grant.headers_env:
        data["headers_env"] = dict(grant.headers_env)
        data["headers_env_hosts"] = list(grant.headers_env_hosts)
    if "blocked_domains" in data:
        inherited = inherited_blocked_domains(data, (glob or load_global_config()).security.blocked_domains)
        data["blocked_domains"] = list(dict.fromkeys([*inherited, *data["blocked_domains"]]))
    return data


def _index(agent: AgentIndex, data: dict[str, Any], scope: AgentScope) -> dict[str, Any]:
    out = {k: v for k, v in data.items() if k not in ("embedding_connection", "connection", "vector_db")}
    if agent.embedding_connection is not None:
        where = "index.embedding_connection"
        keys = scope.connections.get("embeddings", agent.embedding_connection, where).index_keys()
        if "dimensions" in out and keys.get("dimensions", out["dimensions"]) != out["dimensions"]:
            raise ConfigInvalid(
                f"index.dimensions {out['dimensions']}: embedding connection '{agent.embedding_connection}' "
                f"makes {keys['dimensions']}-dimension vectors",
                suggestion="Leave index.dimensions out: the connection sets it",
            )
        out.update(keys)
    vdb = dict(data.get("vector_db", {}))
    if agent.connection is not None:
        store = scope.connections.get("stores", agent.connection, "index.connection")
        if store.collection is not None:
            if vdb.get("collection", store.collection) != store.collection:
                raise ConfigInvalid(
                    f"index.vector_db.collection '{vdb['collection']}': store connection '{agent.connection}' "
                    f"holds the collection '{store.collection}' only",
                    suggestion=f"Leave the collection out, or use '{store.collection}'",
                )
            vdb["collection"] = store.collection
        vdb.update(store.vector_db_keys())
    if vdb:
        out["vector_db"] = vdb
    return out
