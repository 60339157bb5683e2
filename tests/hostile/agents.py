"""An MCP server as an agent meets it, in process, with the official SDK client.

``agent_server`` builds the real server (``create_server``) over a runs folder and roots, with
the operator's connections written to a YAML file and loaded the way ``indexfoundry mcp
--connections`` loads it. ``call`` runs tool calls in one client session and returns the results.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import yaml
from mcp.client import Client

from indexfoundry import api
from indexfoundry.surfaces.mcp import ServerOptions, create_server


def connections_file(folder: Path, connections: dict[str, Any]) -> Path:
    path = folder / "connections.yaml"
    path.write_text(yaml.safe_dump(connections, sort_keys=True), encoding="utf-8")
    return path


def agent_server(runs_dir: Path, roots: list[Path], connections: dict[str, Any] | None = None, **options: Any) -> Any:
    """The MCP server with every pipeline tool, the operator's connections and ``options`` (ServerOptions)."""
    named = None
    if connections is not None:
        named = api.load_connections(connections_file(runs_dir.parent, connections))
    server, _ = create_server(ServerOptions(runs_dir=runs_dir, roots=roots, connections=named, tools="all", **options))
    return server


def call(server: Any, *calls: tuple[str, dict[str, Any]]) -> list[Any]:
    """Each ``(tool, arguments)`` called in order in one client session; the results."""

    async def main() -> list[Any]:
        async with Client(server) as client:
            return [await client.call_tool(name, arguments) for name, arguments in calls]

    return anyio.run(main)


def code(result: Any) -> str | None:
    """The ToolError code of a result (None when the call succeeded)."""
    if not result.is_error:
        return None
    return str(dict(result.structured_content or {}).get("error", {}).get("code"))


def structured(result: Any) -> dict[str, Any]:
    return dict(result.structured_content or {})


def run_folders(runs_dir: Path) -> list[Path]:
    """Run folders that exist (dot-folders are caches and locks)."""
    if not runs_dir.is_dir():
        return []
    return sorted(p for p in runs_dir.iterdir() if p.is_dir() and not p.name.startswith("."))
