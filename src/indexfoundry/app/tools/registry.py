"""Registry of the tool catalogue (``indexfoundry_connect_url`` … ``indexfoundry_run_cleanup``).

Each tool is a plain function taking one strict pydantic input model and returning a pydantic
output model. Phase packages register their tools here with ``@tool``; the MCP server exposes
every registered tool with the input model's JSON Schema, and the CLI's ``indexfoundry tool``
command can call any of them. One definition, so the surfaces can never disagree.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel

from indexfoundry.errors import ConfigInvalid


@dataclass(frozen=True)
class ToolAnnotations:
    """MCP tool annotations; they must tell the truth about what the tool does."""

    read_only: bool
    destructive: bool
    idempotent: bool
    open_world: bool


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    input_model: type[BaseModel]
    func: Callable[..., BaseModel]
    annotations: ToolAnnotations
    long_running: bool = False


_REGISTRY: dict[str, ToolSpec] = {}

# Modules that register tools when imported (kept explicit: no import-time scanning).
TOOL_MODULES: tuple[str, ...] = (
    "indexfoundry.app.tools.connect",
    "indexfoundry.app.tools.extract",
    "indexfoundry.app.tools.normalize",
    "indexfoundry.app.tools.index",
    "indexfoundry.app.tools.profile",
    "indexfoundry.app.tools.serve",
    "indexfoundry.app.tools.runs",
)

F = TypeVar("F", bound=Callable[..., BaseModel])


def tool(
    name: str,
    input_model: type[BaseModel],
    *,
    read_only: bool,
    destructive: bool,
    idempotent: bool,
    open_world: bool,
    long_running: bool = False,
) -> Callable[[F], F]:
    """Register ``func`` as the tool ``name`` (its docstring is the description)."""

    def decorate(func: F) -> F:
        _REGISTRY[name] = ToolSpec(
            name=name,
            description=(func.__doc__ or name).strip(),
            input_model=input_model,
            func=func,
            annotations=ToolAnnotations(read_only, destructive, idempotent, open_world),
            long_running=long_running,
        )
        return func

    return decorate


def load_tools() -> dict[str, ToolSpec]:
    """Import every tool module and return the registry (modules not present are skipped)."""
    for module in TOOL_MODULES:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise
    return dict(sorted(_REGISTRY.items()))


def call_tool(name: str, arguments: dict[str, Any], **context: Any) -> BaseModel:
    """Validate ``arguments`` against the tool's strict input model and call it."""
    tools = load_tools()
    spec = tools.get(name)
    if spec is None:
        raise ConfigInvalid(f"unknown tool '{name}'", suggestion=f"Known tools: {', '.join(tools)}")
    from pydantic import ValidationError

    from indexfoundry.models.validation import validation_error

    try:
        payload = spec.input_model.model_validate(arguments)
    except ValidationError as exc:
        raise validation_error(exc, f"{name} arguments") from None
    return spec.func(payload, **context)
