"""An MCP client is an untrusted user: its schema holds no destination or secret, and what it does
hold (paths, source URLs, connection names) is resolved against what the operator defined.

Unit level: every field of the operator's pipeline config that names a service, a host, a DSN,
an env var, a header, a key file, a cluster or a resource limit is absent from the agent's
schema, and writing it is ``CONFIG_INVALID`` with its key path; URL-looking and escaping paths
are ``NOT_FOUND``; only source URLs take URLs, and only http(s). End to end, through the real
server over stdio and the official SDK client: a URL-looking folder path reads no host file, and
an agent cannot make the server send a secret to a listener of its own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from indexfoundry import api
from indexfoundry.app.agent import full_config
from indexfoundry.errors import IndexFoundryError
from indexfoundry.models.agent import AgentPipelineRun
from indexfoundry.models.config import PipelineConfig
from tests.conftest import SAMPLE_DOCS, folder_config, write_tree
from tests.hostile.agents import agent_server, call, code, run_folders, structured
from tests.hostile.listeners import TcpRecorder, tcp

__all__ = ["tcp"]  # fixtures

SECRET = "sk-unrelated-secret-5f6e7d8c9b0a"
RUN = "01900000-0000-7000-8000-000000000001"


@pytest.fixture
def scope(tmp_path: Path) -> api.AgentScope:
    (tmp_path / "root" / "docs").mkdir(parents=True)
    return api.AgentScope(api.Roots([tmp_path / "root"]))


def resolved(arguments: dict[str, Any], scope: api.AgentScope) -> dict[str, Any]:
    """The operator's config an agent's ``indexfoundry_pipeline_run`` arguments stand for."""
    return full_config(AgentPipelineRun.model_validate(arguments), scope)


def code_of(arguments: dict[str, Any], scope: api.AgentScope) -> str:
    from pydantic import ValidationError

    from indexfoundry.models.validation import validation_error

    try:
        resolved(arguments, scope)
    except ValidationError as exc:
        return validation_error(exc, "arguments").code
    except IndexFoundryError as error:
        return error.code
    raise AssertionError(f"accepted: {arguments}")


def _with(path: tuple[str, ...], value: Any) -> dict[str, Any]:
    """A minimal agent config with ``value`` written at ``path``."""
    base: dict[str, Any] = {"connect": {"sources": [{"type": "folder", "path": "docs"}]}}
    node = base
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = value
    return base


# ------------------------------------------------------------------ what the agent's schema leaves out
def _operator_keys(schema: dict[str, Any], defs: dict[str, Any], prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every property path of the operator's pipeline config (sources left out: they are a union)."""
    out: list[tuple[str, ...]] = []
    for name, prop in schema.get("properties", {}).items():
        path = (*prefix, name)
        out.append(path)
        target = prop
        for option in prop.get("anyOf", [prop]):
            if "$ref" in option:
                target = defs[option["$ref"].rsplit("/", 1)[-1]]
        if "$ref" in prop:
            target = defs[prop["$ref"].rsplit("/", 1)[-1]]
        if target.get("properties") and name != "sources":
            out.extend(_operator_keys(target, defs, path))
    return out


def _names_a_destination_or_secret(path: tuple[str, ...]) -> bool:
    key = path[-1]
    return (
        key.endswith(("_env", "_file", "_url"))
        or key in {"connection", "host", "headers", "trusted_proxies", "allowed_private_hosts", "address"}
        or key in {"allow_private_networks", "user_agent", "workers", "memory_mb", "timeout_s", "ocr_dpi"}
        or path[0] == "execution"
    )


OPERATOR_SCHEMA = PipelineConfig.model_json_schema()
DANGEROUS = sorted(
    {p for p in _operator_keys(OPERATOR_SCHEMA, OPERATOR_SCHEMA.get("$defs", {})) if _names_a_destination_or_secret(p)}
)


def test_the_operator_schema_has_the_fields_this_test_looks_for():
    found = {".".join(p) for p in DANGEROUS}
    for expected in ("index.api_key_env", "index.base_url", "index.vector_db.connection", "connect.headers_env"):
        assert expected in found
    for expected in ("extract.pdf_password_env", "serve.api_keys_env", "serve.api_key_file", "serve.host"):
        assert expected in found
    assert "execution" in found and "connect.allowed_private_hosts" in found


@pytest.mark.parametrize("path", DANGEROUS, ids=lambda p: ".".join(p))
@pytest.mark.parametrize("value", ["EMBEDDING_API_KEY", "http://127.0.0.1:9/v1", {"host": "127.0.0.1"}, True])
def test_an_agent_cannot_write_a_destination_or_secret_field(path: tuple[str, ...], value: Any, scope: api.AgentScope):
    from pydantic import ValidationError

    arguments = _with(path, value)
    with pytest.raises(ValidationError) as info:
        AgentPipelineRun.model_validate(arguments)
    located = {".".join(str(part) for part in error["loc"]) for error in info.value.errors()}
    assert any(loc.startswith(".".join(path[:1])) for loc in located), located  # the key path is named


@pytest.mark.parametrize(
    "arguments",
    [
        {"index": {"embedding_model": "openai:text-embedding-3-small"}},
        {"index": {"embedding_model": "sentence-transformers:all-MiniLM-L6-v2"}},
        {"index": {"embedding_model": "cohere:embed-english-v3.0"}},
        {"index": {"vector_db": {"provider": "pgvector"}}},
        {"index": {"vector_db": {"provider": "qdrant"}}},
        {"serve": {"retrieval": {"reranker": {"enabled": True, "model": "http:http://127.0.0.1:9/rerank"}}}},
        {"serve": {"retrieval": {"reranker": {"enabled": True, "model": "cross-encoder:/etc"}}}},
        {"serve": {"retrieval": {"reranker": {"enabled": True}}}},
    ],
)
def test_models_stores_and_rerankers_other_than_the_built_ins_need_a_named_connection(
    arguments: dict[str, Any], scope: api.AgentScope
):
    merged = {**_with(("force",), False), **arguments}
    assert code_of(merged, scope) == "CONFIG_INVALID"


# ------------------------------------------------------------------ paths and URLs
URL_LOOKING_PATHS = [
    "x://../../../../../../../../etc",
    "file:///etc",
    "http://../../../../etc",
    "a+b.c-d://../../../../etc",
    "X://..\\..\\..\\etc",
    "file:/etc",
]
ESCAPES = ["/etc", "../../../../etc", "docs/../../..", "~", "\0docs"]


@pytest.mark.parametrize("value", URL_LOOKING_PATHS + ESCAPES)
def test_a_url_looking_or_escaping_host_path_is_refused_not_skipped(value: str, scope: api.AgentScope):
    cases = [
        {"connect": {"sources": [{"type": "folder", "path": value, "glob": "passwd"}]}},
        {"connect": {"sources": [{"type": "repo", "path": value}]}},
    ]
    if "://" not in value or value.lower().startswith(("x:", "a+b", "file")):  # an http(s) 'source' is a URL
        cases.append({"connect": {"sources": [{"type": "pdf", "source": value}]}})
    for arguments in cases:
        assert code_of(arguments, scope) in ("NOT_FOUND", "CONFIG_INVALID"), arguments
        if value in URL_LOOKING_PATHS[:1] + ESCAPES[:2]:
            assert code_of(arguments, scope) == "NOT_FOUND", arguments


def test_paths_inside_the_roots_are_resolved_there(scope: api.AgentScope):
    out = resolved({"connect": {"sources": [{"type": "folder", "path": "docs"}]}}, scope)
    assert out["connect"]["sources"][0]["path"] == str(scope.roots.paths[0] / "docs")


@pytest.mark.parametrize(
    ("source", "key"),
    [
        ({"type": "url", "url": "file:///etc/passwd"}, "url"),
        ({"type": "url", "url": "gopher://127.0.0.1:6379/_FLUSHALL"}, "url"),
        ({"type": "sitemap", "url": "ftp://example.org/sitemap.xml"}, "url"),
        ({"type": "sitemap", "url": "javascript:alert(1)"}, "url"),
        ({"type": "crawl", "url": "https://example.org/", "prefix": "file:///etc/"}, "prefix"),
        ({"type": "repo", "url": "ext::sh -c touch% /tmp/pwned"}, "url"),
        ({"type": "repo", "url": "file:///etc/x.git"}, "url"),
        ({"type": "llms_txt", "url": "http://user:pass@example.org/llms.txt"}, "url"),
    ],
)
def test_only_source_urls_take_urls_and_only_http(source: dict[str, Any], key: str, scope: api.AgentScope):
    assert code_of({"connect": {"sources": [source]}}, scope) == "CONFIG_INVALID"


def test_a_windows_drive_letter_is_a_path_not_a_url():
    from indexfoundry.app.agent import is_url

    assert not is_url("C:\\docs")
    assert is_url("x://..")
    assert is_url("file:/etc")


# ------------------------------------------------------------------ private networks
def test_an_agent_inherits_the_servers_private_network_allowances_and_cannot_widen_them(tmp_path: Path):
    (tmp_path / "docs").mkdir()
    source = {"type": "url", "url": "http://127.0.0.1:8000/"}
    strict = api.AgentScope(api.Roots([tmp_path]))
    assert code_of({"connect": {"sources": [source], "allow_private_networks": True}}, strict) == "CONFIG_INVALID"
    assert (
        code_of({"connect": {"sources": [source], "allowed_private_hosts": ["127.0.0.1"]}}, strict) == "CONFIG_INVALID"
    )
    assert resolved({"connect": {"sources": [source]}}, strict)["connect"]["allow_private_networks"] is False
    one = api.AgentScope(api.Roots([tmp_path]), allowed_private_hosts=("docs.internal:8080",))
    out = resolved({"connect": {"sources": [source]}}, one)["connect"]
    assert out["allowed_private_hosts"] == ["docs.internal:8080"] and out["allow_private_networks"] is False


def test_an_agents_blocked_domains_add_to_the_inherited_ones(tmp_path: Path):
    scope = api.AgentScope(api.Roots([tmp_path]))
    out = resolved(
        {"connect": {"sources": [{"type": "url", "url": "https://a.example/"}], "blocked_domains": []}}, scope
    )
    assert {"localhost", "127.0.0.1"} <= set(out["connect"]["blocked_domains"])  # [] does not clear them


# ------------------------------------------------------------------ the attacks, end to end
def test_an_agent_reads_no_host_file_through_a_url_looking_folder_path(tmp_path: Path):
    from tests.integration.mcp_support import stdio_session

    root = write_tree(tmp_path / "root", SAMPLE_DOCS)
    runs = tmp_path / "runs"

    async def main() -> list[Any]:
        args = ("--runs-dir", str(runs), "--root", str(root))
        async with stdio_session(*args, cwd=tmp_path) as session:
            hostile = "x://../../../../../../../../etc"
            connect = await session.call_tool("indexfoundry_connect_folder", {"run_id": RUN, "path": hostile})
            config = folder_config(root)
            config["connect"]["sources"] = [{"type": "folder", "path": hostile, "glob": "passwd"}]
            run = await session.call_tool("indexfoundry_pipeline_run", config)
            store = folder_config(root, index={"embedding_model": "hash"})
            store["index"]["vector_db"] = {
                "provider": "local",
                "connection": {"path": f"x://../../../{tmp_path.name}-x"},
            }
            written = await session.call_tool("indexfoundry_pipeline_run", store)
            search = await session.call_tool("search_docs", {"query": "root:x:0:0"})
            return [connect, run, written, search]

    connect, run, written, search = anyio.run(main)
    assert code(connect) in ("NOT_FOUND", "RUN_NOT_FOUND")
    assert code(run) == "NOT_FOUND"
    assert code(written) == "CONFIG_INVALID"  # an agent names no store path at all
    assert "root:x:0:0" not in search.model_dump_json()
    assert not (tmp_path.parent / f"{tmp_path.name}-x").exists()
    assert run_folders(runs) == []


def test_an_agent_cannot_make_the_server_send_a_secret_to_its_listener(tmp_path: Path, tcp: TcpRecorder):
    from tests.integration.mcp_support import server_env, stdio_session

    docs = write_tree(tmp_path / "docs", SAMPLE_DOCS)
    runs = tmp_path / "runs"
    url = f"http://127.0.0.1:{tcp.port}"
    openai = {"embedding_model": "openai:text-embedding-3-small", "retry_config": {"max_retries": 0, "backoff_ms": 0}}
    attacks = [
        folder_config(docs, index={**openai, "base_url": f"{url}/v1", "api_key_env": "UNRELATED_SECRET"}),
        folder_config(docs, index={**openai, "api_key_env": "UNRELATED_SECRET"}),
        folder_config(docs, index={**openai, "base_url": f"{url}/v1"}),
        folder_config(
            docs,
            index={
                "embedding_model": "hash",
                "vector_db": {"provider": "chroma", "connection": {"host": "127.0.0.1", "port": tcp.port}},
            },
        ),
        {
            **folder_config(docs),
            "connect": {"sources": [{"type": "url", "url": f"{url}/page"}], "allow_private_networks": True},
        },
        {
            **folder_config(docs),
            "connect": {
                "sources": [{"type": "url", "url": f"{url}/page"}],
                "allowed_private_hosts": [f"127.0.0.1:{tcp.port}"],
            },
        },
    ]
    # The same, naming a connection the operator defined: still only where it points.
    attacks.append({**folder_config(docs), "index": {"embedding_connection": "team", "base_url": f"{url}/v1"}})

    async def main() -> list[Any]:
        env = server_env(UNRELATED_SECRET=SECRET, EMBEDDING_API_KEY=SECRET)
        connections = tmp_path / "connections.yaml"
        connections.write_text("embeddings:\n  team: {model: hash}\n", encoding="utf-8")
        args = ("--runs-dir", str(runs), "--root", str(tmp_path), "--connections", str(connections))
        async with stdio_session(*args, cwd=tmp_path, env=env) as session:
            return [await session.call_tool("indexfoundry_pipeline_run", attack) for attack in attacks]

    results = anyio.run(main)
    assert [code(r) for r in results] == ["CONFIG_INVALID"] * len(attacks), [structured(r) for r in results]
    assert "index.base_url" in structured(results[-1])["error"]["message"]
    assert tcp.received == [], tcp.received
    for result in results:
        assert SECRET not in result.model_dump_json()


def test_a_retired_policy_flag_is_refused_with_the_way_to_name_a_connection(tmp_path: Path):
    import subprocess
    import sys

    for flag in ("--allow-env", "--allow-endpoint", "--allow-bind-host"):
        done = subprocess.run(
            [sys.executable, "-m", "indexfoundry", "mcp", flag, "X", "--runs-dir", str(tmp_path / "runs")],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 2, (flag, done.stderr)
        assert "CONFIG_INVALID" in done.stderr and "--connections" in done.stderr


@pytest.mark.slow
def test_the_operator_can_allow_a_private_host_and_the_agent_inherits_it(tmp_path: Path):
    from tests.hostile.listeners import Recorder

    site = Recorder()
    try:
        runs = tmp_path / "runs"
        server = agent_server(runs, [tmp_path], allowed_private_hosts=[f"127.0.0.1:{site.port}"])
        config = {
            "connect": {"sources": [{"type": "url", "url": f"{site.url}/page"}]},
            "index": {"embedding_model": "hash"},
        }
        (result,) = call(server, ("indexfoundry_pipeline_run", config))
    finally:
        site.close()
    assert code(result) is None, structured(result)
    assert structured(result)["status"] == "completed"
