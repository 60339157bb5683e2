"""The MCP surface: IndexFoundry's tools for agents over stdio or Streamable HTTP."""

from indexfoundry.surfaces.mcp.server import ServerOptions, create_server

__all__ = ["ServerOptions", "create_server"]
