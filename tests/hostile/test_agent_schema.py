"""The classes behind the agent attacks, and a property over every config the agent schema allows.

- Every string field of the agent's pipeline schema, padded with whitespace: refused, or read as
  the same value (never a different file or host).
- Every URL field, with dot segments and percent-escapes: refused, or read as one canonical URL
  on the same host and port.
- Every keyword libpq accepts, in every place an agent could put it: refused by the schema.
- Configs generated from the agent schema itself (hypothesis), hostile strings included: none
  resolves to a config naming a path outside the roots, an endpoint, store, key variable, header
  or private host the connections file and the server's flags do not name; and (slow tier) none
  run through the real MCP server opens a connection to a port, or a file, nobody named.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, event, example, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from indexfoundry import api
from indexfoundry.app.agent import full_config
from indexfoundry.app.tools.runs import PipelineRunInput
from indexfoundry.errors import IndexFoundryError
from indexfoundry.models.agent import AgentPipelineRun
from indexfoundry.models.config import ExecutionConfig, ExtractConfig, IndexConfig, PipelineConfig, ServeConfig
from indexfoundry.models.connections import Connections, load_connections
from indexfoundry.models.retrieval import RerankerConfig
from tests.hostile.agents import connections_file

A_PORT, B_PORT, PG_PORT = 18081, 18082, 15432  # named (A, PG) and not named (B) ports; resolution only


def _connections(base: Path, a_port: int = A_PORT, pg_port: int = PG_PORT) -> Connections:
    a = f"http://127.0.0.1:{a_port}"
    data = {
        "embeddings": {
            "team-embed": {"model": "openai:test-embed", "base_url": f"{a}/v1", "api_key_env": "EMBEDDING_API_KEY"},
            "small": {"model": "hash:16"},
        },
        "stores": {
            "team-pg": {
                "provider": "pgvector",
                "dsn": f"postgresql://app@127.0.0.1:{pg_port}/db",
                "connect_timeout": 1,
            },
            "team-local": {"provider": "local", "path": "store"},
            "team-chroma": {"provider": "chroma", "host": "127.0.0.1", "port": a_port, "collection": "shared"},
        },
        "rerankers": {"team-rerank": {"model": f"http:{a}/rerank", "api_key_env": "RERANK_API_KEY"}},
        "fetch": {
            "intranet": {
                "allowed_private_hosts": [f"127.0.0.1:{a_port}"],
                "headers_env": {"Authorization": "DOCS_AUTH"},
            }
        },
    }
    return load_connections(connections_file(base, data))


@pytest.fixture
def scope(tmp_path: Path) -> api.AgentScope:
    (tmp_path / "root" / "docs").mkdir(parents=True)
    (tmp_path / "root" / "docs" / "a.md").write_text("# A\n\ntext\n", encoding="utf-8")
    return api.AgentScope(api.Roots([tmp_path / "root"]), _connections(tmp_path))


def resolve(arguments: Any, scope: api.AgentScope) -> PipelineConfig | None:
    """The full config an agent's arguments stand for; None when they are refused (as the server does)."""
    try:
        data = full_config(AgentPipelineRun.model_validate(arguments), scope)
        payload = PipelineRunInput.model_validate(data)
        from indexfoundry.models.config import parse_pipeline_config

        return parse_pipeline_config(payload.model_dump(mode="json", exclude={"base_run_id"}, exclude_unset=True))
    except (ValidationError, IndexFoundryError):
        return None


def _inside(path: str, roots: tuple[Path, ...]) -> bool:
    p = Path(path).resolve()
    return any(p == r or r in p.parents for r in roots)


def problems(config: PipelineConfig, scope: api.AgentScope) -> list[str]:
    """What ``config`` names that the operator did not: every destination, secret name and path."""
    out: list[str] = []
    conns = scope.connections
    for i, source in enumerate(config.connect.sources):
        local = getattr(source, "path", None) or (getattr(source, "source", "") if source.type == "pdf" else None)
        if local and not str(local).startswith(("http://", "https://")) and not _inside(str(local), scope.roots.paths):
            out.append(f"sources[{i}] reads {local} outside the roots")
        for key in ("url", "prefix"):
            value = getattr(source, key, None)
            if value and not value.startswith(("http://", "https://")):
                out.append(f"sources[{i}].{key} {value} is not http(s)")
    c = config.connect
    private = set(scope.allowed_private_hosts) | {h for f in conns.fetch.values() for h in f.allowed_private_hosts}
    if c.allow_private_networks != scope.allow_private_networks or not set(c.allowed_private_hosts) <= private:
        out.append(f"private networks widened: {c.allow_private_networks} {c.allowed_private_hosts}")
    grants = [(f.headers_env, f.header_hosts) for f in conns.fetch.values()]
    if (c.headers_env or c.headers_env_hosts) and (c.headers_env, c.headers_env_hosts) not in grants:
        out.append(f"headers_env {c.headers_env} to {c.headers_env_hosts} is no fetch connection's")
    if c.headers or c.user_agent != "IndexFoundry/1.0":
        out.append("headers written")
    out += _index_problems(config.index, conns)
    reranker = config.serve.retrieval.reranker
    named = [
        RerankerConfig(enabled=reranker.enabled, top_k_to_rerank=reranker.top_k_to_rerank, **r.reranker_keys())
        for r in conns.rerankers.values()
    ]
    if reranker.model is not None and reranker not in named:
        out.append(f"reranker {reranker.model} is no reranker connection")
    if reranker.model is None and reranker != RerankerConfig(enabled=False, top_k_to_rerank=reranker.top_k_to_rerank):
        out.append("reranker settings written")
    s, d = config.serve, ServeConfig()
    if (s.host, s.api_key_file, s.api_keys_env, s.trusted_proxies) != (
        d.host,
        d.api_key_file,
        d.api_keys_env,
        d.trusted_proxies,
    ):
        out.append("serve host, key file, key variable or proxies written")
    e, x = config.extract, ExtractConfig()
    if (e.pdf_password_env, e.workers, e.memory_mb, e.timeout_s) != (
        x.pdf_password_env,
        x.workers,
        x.memory_mb,
        x.timeout_s,
    ):
        out.append("extract password variable or limits written")
    if config.execution != ExecutionConfig():
        out.append("execution written")
    return out


def _index_problems(index: IndexConfig, conns: Connections) -> list[str]:
    out: list[str] = []
    keys = ("base_url", "api_key_env", "timeout_ms", "retry_config")
    mine = {k: getattr(index, k) for k in keys}
    builtin = index.embedding_model in ("local", "local-int8", "hash") and mine == {
        k: getattr(IndexConfig(), k) for k in keys
    }
    matches = [
        all(
            getattr(IndexConfig.model_validate(e.index_keys()), k) == getattr(index, k)
            for k in (*keys, "embedding_model")
        )
        for e in conns.embeddings.values()
    ]
    if not builtin and not any(matches):
        out.append(f"embedding {index.embedding_model} {mine} is no embedding connection")
    vdb = index.vector_db
    stores = [s.vector_db_keys() for s in conns.stores.values()]
    if (
        not (vdb.connection == {} and vdb.provider in ("chroma", "local"))
        and {
            "provider": vdb.provider,
            "connection": vdb.connection,
        }
        not in stores
    ):
        out.append(f"store {vdb.provider} {vdb.connection} is no store connection")
    return out


# ------------------------------------------------------------------ leaves of the schema
def _leaves(node: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _leaves(value, (*path, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _leaves(value, (*path, i))
    else:
        yield path, node


def _set(node: Any, path: tuple[Any, ...], value: Any) -> Any:
    import copy

    out = copy.deepcopy(node)
    target = out
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return out


def _full_agent_config() -> dict[str, Any]:
    """An agent config with a value in (nearly) every string field of the schema."""
    return {
        "base_run_id": "latest",
        "connect": {
            "sources": [
                {"type": "folder", "path": "docs", "glob": "**/*.md", "name": "docs", "exclude_patterns": ["x/**"]},
                {"type": "url", "url": "https://example.org/a", "name": "a", "wait_for_selector": "main"},
                {"type": "sitemap", "url": "https://example.org/sitemap.xml", "include_patterns": ["/docs/"]},
                {"type": "pdf", "source": "docs/a.md"},
                {"type": "pdf", "source": "https://example.org/a.pdf"},
                {"type": "crawl", "url": "https://example.org/", "scope": "prefix", "prefix": "https://example.org/d/"},
                {"type": "repo", "url": "https://example.org/r.git", "ref": "main", "glob": "docs/**"},
                {"type": "repo", "path": "docs", "ref": "HEAD"},
                {"type": "llms_txt", "url": "https://example.org/llms.txt"},
            ],
            "fetch": "intranet",
            "allowed_domains": ["example.org", "127.0.0.1"],
            "blocked_domains": ["evil.example"],
        },
        "extract": {"ocr_language": "eng", "remove_selectors": ["nav"]},
        "normalize": {"split_hierarchy": ["\n\n", " "]},
        "index": {
            "embedding_connection": "team-embed",
            "connection": "team-local",
            "vector_db": {"collection": "docs", "namespace": "ns", "metadata_fields": ["source.uri"]},
        },
        "serve": {
            "cors_origins": ["http://localhost:3000"],
            "allowed_namespaces": ["ns"],
            "retrieval": {"reranker": {"enabled": True, "connection": "team-rerank"}},
            "api_info": {"title": "T", "version": "1", "base_path": "/api"},
        },
    }


def _destinations(config: PipelineConfig) -> dict[str, Any]:
    """Where a run would read from, connect to and send what (for comparing two resolutions)."""
    sources = [
        (
            s.type,
            getattr(s, "path", None),
            getattr(s, "source", None),
            getattr(s, "url", None),
            getattr(s, "prefix", None),
        )
        for s in config.connect.sources
    ]
    c, i = config.connect, config.index
    return {
        "sources": sources,
        "private": (c.allow_private_networks, c.allowed_private_hosts),
        "headers": (c.headers_env, c.headers_env_hosts),
        "embedding": (i.embedding_model, i.base_url, i.api_key_env),
        "store": (i.vector_db.provider, i.vector_db.connection),
        "reranker": config.serve.retrieval.reranker.model_dump(),
    }


PADS = [" ", "\t", "\n", "\u00a0", "\u200b", " \r\n"]


def test_the_full_agent_config_is_accepted_and_names_only_what_the_operator_did(scope: api.AgentScope):
    config = resolve(_full_agent_config(), scope)
    assert config is not None
    assert problems(config, scope) == []


@pytest.mark.parametrize("pad", PADS, ids=repr)
def test_every_string_field_with_surrounding_whitespace_is_refused_or_the_same_value(scope: api.AgentScope, pad: str):
    base = _full_agent_config()
    clean = resolve(base, scope)
    assert clean is not None
    strings = [(path, value) for path, value in _leaves(base) if isinstance(value, str)]
    assert len(strings) > 30
    for path, value in strings:
        for padded in (pad + value, value + pad, pad + value + pad):
            config = resolve(_set(base, path, padded), scope)
            if config is None:
                continue  # refused
            assert problems(config, scope) == [], (path, padded)
            before, after = _destinations(clean), _destinations(config)
            if path[:2] != ("normalize", "split_hierarchy"):  # whitespace is a separator there
                for key in ("private", "headers", "embedding", "store", "reranker"):
                    assert before[key] == after[key], (path, padded, key)


URL_FIELDS = [
    (("connect", "sources", 1, "url"), "https://example.org/a"),
    (("connect", "sources", 2, "url"), "https://example.org/sitemap.xml"),
    (("connect", "sources", 4, "source"), "https://example.org/a.pdf"),
    (("connect", "sources", 5, "url"), "https://example.org/"),
    (("connect", "sources", 5, "prefix"), "https://example.org/d/"),
    (("connect", "sources", 6, "url"), "https://example.org/r.git"),
    (("connect", "sources", 8, "url"), "https://example.org/llms.txt"),
]
TWISTS = ["/a/../../{rest}", "/%2e%2e/%2E%2E/{rest}", "/./{rest}", "/x/%2e%2e/{rest}", "/%7e/../{rest}"]


@pytest.mark.parametrize(("path", "url"), URL_FIELDS, ids=lambda v: str(v[-1]) if isinstance(v, tuple) else v)
@pytest.mark.parametrize("twist", TWISTS)
def test_every_url_field_with_dot_segments_or_escapes_is_one_canonical_url_on_the_same_host(
    scope: api.AgentScope, path: tuple[Any, ...], url: str, twist: str
):
    rest = url.split("://", 1)[1].split("/", 1)[1]
    twisted = "https://EXAMPLE.org:443" + twist.format(rest=rest)
    config = resolve(_set(_full_agent_config(), path, twisted), scope)
    assert config is not None
    stored = config.model_dump(mode="json")
    for key in path:
        stored = stored[key]
    assert stored == url, (twisted, stored)  # the canonical form is what the run keeps and fetches


def _libpq_keywords() -> list[str]:
    from psycopg import pq

    return sorted({d.keyword.decode() for d in pq.Conninfo.get_defaults()})


def test_libpq_keywords_are_the_ones_libpq_lists():
    keywords = _libpq_keywords()
    assert {"host", "hostaddr", "port", "passfile", "sslkey", "service", "options"} <= set(keywords)


@pytest.mark.parametrize("keyword", _libpq_keywords())
def test_every_libpq_keyword_is_refused_wherever_an_agent_could_put_it(scope: api.AgentScope, keyword: str):
    value = "/etc/shadow" if keyword.endswith(("file", "key", "cert", "dir")) else f"127.0.0.1 port={B_PORT}"
    base = {"connect": {"sources": [{"type": "folder", "path": "docs"}]}}
    places = [
        {**base, "index": {"connection": "team-pg", keyword: value}},
        {**base, "index": {"connection": "team-pg", "vector_db": {keyword: value}}},
        {**base, "index": {"connection": "team-pg", "vector_db": {"connection": {keyword: value}}}},
        {**base, "index": {"connection": f"team-pg?{keyword}={value}"}},
        {**base, "index": {"connection": f"team-pg {keyword}={value}"}},
        {**base, "index": {"connection": f"{keyword}={value}"}},
        {**base, keyword: value},
    ]
    for arguments in places:
        assert resolve(arguments, scope) is None, arguments


def test_a_dsn_in_the_connections_file_keeps_every_parameter_libpq_reads(tmp_path: Path):
    from indexfoundry.models.values import parse_dsn

    dsn = f"postgresql://app@127.0.0.1:1/db?port={B_PORT}&sslmode=disable&application_name=x"
    conns = load_connections(connections_file(tmp_path, {"stores": {"pg": {"provider": "pgvector", "dsn": dsn}}}))
    params = parse_dsn(conns.stores["pg"].dsn or "")
    assert params["port"] == str(B_PORT) and params["sslmode"] == "disable"
    with pytest.raises(IndexFoundryError) as info:
        load_connections(
            connections_file(tmp_path, {"stores": {"pg": {"provider": "pgvector", "dsn": dsn + "&password=x"}}})
        )
    assert (
        info.value.code == "CONFIG_INVALID"
        and "password" in info.value.message
        and "x" not in info.value.message.split()
    )


def test_an_unknown_connection_name_lists_the_names_there_are(scope: api.AgentScope):
    for section, key, kind in (
        ("index", "connection", "store"),
        ("index", "embedding_connection", "embedding"),
        ("connect", "fetch", "fetch"),
    ):
        arguments = {"connect": {"sources": [{"type": "folder", "path": "docs"}]}}
        arguments.setdefault(section, {})[key] = "nope"
        agent = AgentPipelineRun.model_validate(arguments)
        with pytest.raises(IndexFoundryError) as info:
            full_config(agent, scope)
        assert info.value.code == "CONFIG_INVALID"
        assert f"not a {kind} connection" in info.value.message
        assert info.value.details["names"] == scope.connections.names(
            {"store": "stores", "embedding": "embeddings", "fetch": "fetch"}[kind]
        )  # type: ignore[arg-type]


# ------------------------------------------------------------------ generated from the schema
HOSTILE_STRINGS = [
    "docs",
    "docs/a.md",
    "../outside",
    "/etc/shadow",
    "x://../../etc",
    " sentence-transformers:/outside/model",
    "sentence-transformers:/outside/model",
    "EMBEDDING_API_KEY",
    "INDEXFOUNDRY_API_KEYS",
    f"http://127.0.0.1:{A_PORT}/page",
    f"http://127.0.0.1:{B_PORT}/v1/../../x",
    f"http://127.0.0.1:{B_PORT}/%2e%2e/x",
    "http://169.254.169.254/latest/meta-data",
    "http://attacker.invalid/",
    f"postgresql://app@127.0.0.1:{PG_PORT}/db?port={B_PORT}",
    "host=/tmp port=1",
    "team-pg",
    "team-embed",
    "team-local",
    "team-chroma",
    "team-rerank",
    "intranet",
    "small",
    "nope",
    " team-pg",
    "TEAM-PG",
    "local",
    "hash",
    " local",
    "**/*.md",
    "",
]
EXTRA_KEYS = [
    "api_key_env",
    "base_url",
    "headers_env",
    "headers",
    "dsn",
    "host",
    "port",
    "url",
    "path",
    "connection",
    "model",
]


Fields = dict[str, st.SearchStrategy[Any]]


def strategy(schema: dict[str, Any], defs: dict[str, Any], fields: Fields | None = None) -> st.SearchStrategy[Any]:
    """Values for ``schema`` (pydantic's JSON Schema of the agent model), with hostile strings and keys;
    ``fields`` gives the values of properties by name (to steer a slow test towards runs that go far)."""
    fields = fields or {}
    if "$ref" in schema:
        return st.deferred(lambda: strategy(defs[schema["$ref"].rsplit("/", 1)[-1]], defs, fields))
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    for union in ("anyOf", "oneOf"):
        if union in schema:
            return st.one_of([strategy(option, defs, fields) for option in schema[union]])
    kind = schema.get("type")
    if kind == "object" or "properties" in schema:
        return _objects(schema, defs, fields)
    if kind == "array":
        items = strategy(schema.get("items", {"type": "string"}), defs, fields)
        return st.lists(items, min_size=schema.get("minItems", 0), max_size=max(schema.get("minItems", 0), 3))
    if kind == "string":
        pattern = schema.get("pattern")
        ours = st.sampled_from(HOSTILE_STRINGS)
        return st.one_of(ours, st.from_regex(pattern, fullmatch=True)) if pattern else ours
    if kind == "integer":
        low = schema.get("minimum", schema.get("exclusiveMinimum", -5))
        return st.integers(min_value=int(low), max_value=int(min(schema.get("maximum", low + 100), low + 100)))
    if kind == "number":
        low = float(schema.get("minimum", schema.get("exclusiveMinimum", 0)))
        high = float(schema.get("maximum", low + 100))
        return st.floats(min_value=low, max_value=min(high, low + 100), allow_nan=False)
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    return st.sampled_from(HOSTILE_STRINGS)


def _objects(schema: dict[str, Any], defs: dict[str, Any], fields: Fields) -> st.SearchStrategy[dict[str, Any]]:
    props: dict[str, Any] = schema.get("properties", {})
    required = set(schema.get("required", []))

    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, sub in props.items():
            if name in required or draw(st.integers(0, 3)) == 0:
                out[name] = draw(fields[name] if name in fields else strategy(sub, defs, fields))
        if draw(st.integers(0, 11)) == 0:
            out[draw(st.sampled_from(EXTRA_KEYS))] = draw(st.sampled_from(HOSTILE_STRINGS))
        return out

    return build()


AGENT_SCHEMA = AgentPipelineRun.model_json_schema()
agent_configs = strategy(AGENT_SCHEMA, AGENT_SCHEMA.get("$defs", {}))


@given(arguments=agent_configs)
@settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)
def test_no_generated_agent_config_names_anything_the_operator_did_not(
    arguments: dict[str, Any], scope: api.AgentScope
):
    config = resolve(arguments, scope)
    event("accepted" if config is not None else "refused")
    if config is not None:
        assert problems(config, scope) == [], arguments


class _Audit:
    """Records socket connections and file opens of this process while ``on``."""

    def __init__(self) -> None:
        self.on = False
        self.connects: list[Any] = []
        self.opens: list[str] = []
        sys.addaudithook(self)

    def __call__(self, event: str, args: tuple[Any, ...]) -> None:
        if not self.on:
            return
        if event == "socket.connect":
            self.connects.append(args[1])
        elif event == "open" and isinstance(args[0], str | bytes):
            self.opens.append(args[0].decode(errors="replace") if isinstance(args[0], bytes) else args[0])


_AUDIT: _Audit | None = None


def _audit() -> _Audit:
    global _AUDIT
    if _AUDIT is None:
        _AUDIT = _Audit()
    return _AUDIT


@pytest.mark.slow
def test_generated_agent_runs_open_no_connection_or_file_that_nobody_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """The same generator, each accepted config run through the real MCP server, with every socket
    connect and file open of the process recorded, and listeners on the ports nobody named."""
    from tests.hostile.agents import call
    from tests.hostile.listeners import CANARIES, Recorder, TcpRecorder, leaks

    for name, value in CANARIES.items():
        monkeypatch.setenv(name, value)
    named, unnamed, pg = Recorder(), Recorder(), TcpRecorder()
    outside = tmp_path / "outside" / "model"
    outside.mkdir(parents=True)
    (outside / "config.json").write_text("{}", encoding="utf-8")
    (tmp_path / "root" / "docs").mkdir(parents=True)
    (tmp_path / "root" / "docs" / "a.md").write_text("# A\n\n" + "words " * 40 + "\n", encoding="utf-8")
    audit = _audit()
    hostile = [
        s.replace(str(A_PORT), str(named.port))
        .replace(str(B_PORT), str(unnamed.port))
        .replace(str(PG_PORT), str(pg.port))
        for s in HOSTILE_STRINGS
    ]
    hostile = [s.replace("/outside", str(tmp_path / "outside")) for s in hostile]
    monkeypatch.setattr(sys.modules[__name__], "HOSTILE_STRINGS", hostile)
    a, b = named.url, unnamed.url
    anything = st.sampled_from(hostile)
    fields: Fields = {
        "path": st.sampled_from(["docs", "docs", str(tmp_path / "outside"), "x://../../etc"]) | anything,
        "url": st.sampled_from([f"{a}/page", f"{a}/other", f"{b}/page", f"{b}/v1/../../x"]) | anything,
        "glob": st.just("**/*.md"),
        "connection": st.sampled_from(["team-local", "team-pg", "team-chroma", "team-rerank", "nope"]) | anything,
        "embedding_connection": st.sampled_from(["team-embed", "small", "nope"]) | anything,
        "fetch": st.sampled_from(["intranet", "intranet", "intranet", "nope"]),
        "sources": st.lists(strategy(_source_schema(), AGENT_SCHEMA["$defs"], {}), min_size=0, max_size=2).map(
            lambda more: [
                {"type": "folder", "path": "docs", "glob": "**/*.md"},
                {"type": "url", "url": f"{a}/page"},
                *more,
            ]
        ),
        "embedding_model": st.just("hash"),
    }
    generated = strategy(AGENT_SCHEMA, AGENT_SCHEMA.get("$defs", {}), fields)
    try:
        scope_conns = _connections(tmp_path, named.port, pg.port)
        server = _with_connections(tmp_path, scope_conns)
        ran: list[int] = []

        started_own_server = {
            "connect": {"sources": [{"type": "folder", "path": "docs", "glob": "**/*.md"}]},
            "index": {"embedding_model": "hash"},
            "serve": {"auto_start": True},
        }

        @given(arguments=generated)
        @example(arguments=started_own_server)
        @settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
        def run(arguments: dict[str, Any]) -> None:
            probe = api.AgentScope(api.Roots([tmp_path / "root"]), scope_conns)
            assume(resolve(arguments, probe) is not None)  # refused configs are the fast test's
            ran.append(1)
            audit.connects.clear()
            audit.opens.clear()
            audit.on = True
            try:
                call(server, ("indexfoundry_pipeline_run", arguments))
            finally:
                audit.on = False
            ports = {addr[1] for addr in audit.connects if isinstance(addr, tuple) and len(addr) >= 2}
            # serve.auto_start: the run starts its own HTTP server (on a port it first binds, so
            # never on one another service holds) and asks it for /health
            own = {info.port for info in api.ServerRecords(tmp_path / "runs").recorded()}
            assert ports <= {named.port, pg.port, *own}, (ports, arguments)
            assert not [
                p for p in audit.opens if str(tmp_path / "outside") in p or re.match(r"^/etc/(shadow|passwd)", p)
            ]

        run()
        assert ran, "no generated config was accepted: the generator explores nothing"
        assert unnamed.requests == []
        allowed = {
            "EMBEDDING_API_KEY": ("authorization", f"Bearer {CANARIES['EMBEDDING_API_KEY']}"),
            "DOCS_AUTH": ("authorization", CANARIES["DOCS_AUTH"]),
        }
        assert leaks(named.requests, allowed) == []
    finally:
        # A generated config may set serve.auto_start: stop the HTTP servers its runs started.
        from indexfoundry.surfaces.http.processes import serve_stop

        serve_stop(runs_dir=tmp_path / "runs")
        named.close()
        unnamed.close()
        pg.close()


def _source_schema() -> dict[str, Any]:
    return dict(AGENT_SCHEMA["$defs"]["AgentConnect"]["properties"]["sources"]["items"])


def _with_connections(tmp_path: Path, connections: Connections) -> Any:
    from indexfoundry.surfaces.mcp import ServerOptions, create_server

    options = ServerOptions(runs_dir=tmp_path / "runs", roots=[tmp_path / "root"], connections=connections, tools="all")
    return create_server(options)[0]
