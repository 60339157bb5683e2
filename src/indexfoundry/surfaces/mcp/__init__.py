"""The MCP surface: IndexFoundry's tools for agents over stdio or Streamable HTTP.

``server`` (and with it the MCP SDK, several seconds of imports on a busy machine) is loaded
only when used, so the CLI's other commands (``search``) do not pay for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from indexfoundry.surfaces.mcp.server import ServerOptions, create_server

__all__ = ["ServerOptions", "create_server"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from indexfoundry.surfaces.mcp import server

        return getattr(server, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
