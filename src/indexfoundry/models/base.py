"""Shared pydantic base: strict models (unknown keys rejected) are the single source of truth."""

from __future__ import annotations

import copy
from typing import Any

from pydantic import BaseModel, ConfigDict

SCHEMA_VERSION = 1


class Strict(BaseModel):
    """Base for every persisted or user-facing model: unknown keys are an error."""

    model_config = ConfigDict(extra="forbid", validate_assignment=False, populate_by_name=True)


def config_field(model: type[BaseModel], name: str, **overrides: Any) -> Any:
    """A tool input's field taken from the config model's field ``name``: its type constraints
    (ranges, lengths, patterns) and default, so a tool's schema and the config it fills cannot
    drift apart. ``overrides`` replace attributes, e.g. the tool's own ``description``.
    Use it as the field's default: ``max_chars: int = config_field(NormalizeConfig, "max_chars")``."""
    info = copy.deepcopy(model.model_fields[name])
    for key, value in overrides.items():
        if not hasattr(info, key):
            raise AttributeError(f"a field has no attribute {key!r}")
        setattr(info, key, value)
    return info
