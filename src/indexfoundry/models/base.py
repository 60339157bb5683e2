"""Shared pydantic base: strict models (unknown keys rejected) are the single source of truth."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

SCHEMA_VERSION = 1


class Strict(BaseModel):
    """Base for every persisted or user-facing model: unknown keys are an error."""

    model_config = ConfigDict(extra="forbid", validate_assignment=False, populate_by_name=True)
