"""Adapters only: CLI, HTTP API, MCP server. No business logic lives here."""
