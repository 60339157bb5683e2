"""Pydantic models: config, content records and manifests (the single source of truth)."""
