"""Helpers for the MCP tests: start the real server (stdio or Streamable HTTP) and talk to it
with the official SDK client."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx2
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult

from tests.waiting import wait_for

CATALOGUE_TOOLS = (
    "indexfoundry_connect_url",
    "indexfoundry_connect_sitemap",
    "indexfoundry_connect_folder",
    "indexfoundry_connect_pdf",
    "indexfoundry_extract_pdf",
    "indexfoundry_extract_html",
    "indexfoundry_extract_document",
    "indexfoundry_normalize_chunk",
    "indexfoundry_normalize_enrich",
    "indexfoundry_normalize_dedupe",
    "indexfoundry_index_embed",
    "indexfoundry_index_upsert",
    "indexfoundry_index_build_profile",
    "indexfoundry_serve_openapi",
    "indexfoundry_serve_start",
    "indexfoundry_pipeline_run",
    "indexfoundry_run_status",
    "indexfoundry_run_list",
    "indexfoundry_run_diff",
    "indexfoundry_run_cleanup",
)
RETRIEVAL_TOOLS = ("search_docs", "get_page", "get_section", "list_pages", "check_freshness")


def server_command(*args: str) -> list[str]:
    """The real CLI entry point, with the test interpreter."""
    return [sys.executable, "-m", "indexfoundry", "mcp", *args]


def server_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("INDEXFOUNDRY_")}
    env.update(extra)
    return env


@contextlib.asynccontextmanager
async def stdio_session(*args: str, cwd: Path, env: dict[str, str] | None = None) -> AsyncIterator[ClientSession]:
    """An initialized SDK client session with ``indexfoundry mcp ARGS`` over stdio."""
    command = server_command(*args)
    params = StdioServerParameters(command=command[0], args=command[1:], cwd=str(cwd), env=env or server_env())
    with (cwd / "server-stderr.log").open("a", encoding="utf-8") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session


@contextlib.asynccontextmanager
async def http_session(url: str, token: str | None = None) -> AsyncIterator[ClientSession]:
    """An initialized SDK client session over Streamable HTTP."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60, read=300)) as client,
        streamable_http_client(url, http_client=client) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextlib.contextmanager
def http_server(*args: str, cwd: Path, port: int, env: dict[str, str] | None = None) -> Iterator[str]:
    """Run ``indexfoundry mcp --http`` on 127.0.0.1:port; yields the MCP endpoint URL."""
    log = (cwd / "http-server.log").open("w", encoding="utf-8")
    proc = subprocess.Popen(
        server_command("--http", "--host", "127.0.0.1", "--port", str(port), *args),
        cwd=cwd,
        env=env or server_env(),
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:

        def listening() -> bool:
            if proc.poll() is not None:
                raise RuntimeError(f"server exited: {(cwd / 'http-server.log').read_text()}")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
            return False

        if not wait_for(listening, timeout=60, interval=0.1):  # the port opens: a real server started
            raise TimeoutError("server did not start")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def structured(result: CallToolResult) -> dict[str, Any]:
    assert result.structured_content is not None, result.content
    return dict(result.structured_content)


def error_code(result: CallToolResult) -> str:
    """The ``error.code`` of a failed tool call."""
    assert result.is_error, result.content
    data = structured(result)
    assert data["isError"] is True
    assert set(data["error"]) >= {"code", "message", "recoverable"}
    return str(data["error"]["code"])


def texts(result: CallToolResult) -> list[str]:
    return [block.text for block in result.content if getattr(block, "type", None) == "text"]  # type: ignore[union-attr]


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


async def first_build_done(source: Any, timeout: float = 120) -> None:
    """Wait until a docs server (``create_server``'s source) serves its finished first build: until
    then search_docs answers from what the build has indexed so far."""
    from tests.waiting import wait_for_async

    async def served() -> bool:
        return source.run_id is not None

    assert await wait_for_async(served, timeout=timeout), "the first build did not finish"


async def search_until_built(session: ClientSession, arguments: dict[str, Any], timeout: float = 120) -> Any:
    """``search_docs`` until it answers from a docs server's finished first build (not from what
    the build has indexed so far); the answer."""
    from tests.waiting import wait_for_async

    async def answered() -> Any:
        result = await session.call_tool("search_docs", arguments)
        building = any("still building" in text for text in texts(result))
        return None if result.is_error or building else result

    found = await wait_for_async(answered, timeout=timeout, interval=0.2)
    assert found is not None, "no answer from the finished build"
    return found
