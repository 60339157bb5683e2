"""Turn IndexFoundry tools into MCP tools on the official SDK's ``MCPServer``.

One adapter for every tool the server exposes (the pipeline tools with the agent's input
models, ``api.agent_tool_specs``, and the retrieval tools): the input schema is the tool's
strict pydantic model (``additionalProperties: false``) made compact (``schemas.py``); no
output schema is listed (it would cost every agent's context and no agent needs it);
annotations come from the registry. A call goes through, in order:

1. a run id (``run_id``, ``run_id_a`` ...) must be a UUID or ``latest`` (``RUN_NOT_FOUND``);
   then validation against the strict input model: an unknown key (a URL, host, DSN, env var or
   header an agent's model does not have) is ``CONFIG_INVALID`` with its key path;
2. the tool function in a worker thread (with an MCP progress reporter for long tools), which
   resolves connection names and paths (``app/agent``) before the operator's tool runs;
3. the result as structured content plus text; an ``IndexFoundryError`` as a
   ``ToolError`` (``isError``, ``error.code``, ``message``, ``recoverable``, ``suggestion``).

This is the MCP surface's catch-all boundary: anything else becomes ``INTERNAL_ERROR`` with
the traceback on stderr, never on the wire.
"""

from __future__ import annotations

import functools
import inspect
import json
import logging
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio.to_thread
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.tools.base import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, ValidationError

from indexfoundry import api
from indexfoundry.errors import IndexFoundryError
from indexfoundry.models.manifests import ToolError
from indexfoundry.models.validation import validation_error
from indexfoundry.surfaces.mcp.progress import McpProgress
from indexfoundry.surfaces.mcp.schemas import listed_schema
from indexfoundry.surfaces.mcp.security import RUN_ID_KEYS, check_run_id

if TYPE_CHECKING:
    from indexfoundry.surfaces.mcp.metrics import ToolMetrics

log = logging.getLogger("indexfoundry.mcp")


@dataclass(frozen=True)
class TextAnswer:
    """A tool answer whose text part is written for the model and whose structured part is data.

    Used where repeating content in both parts would waste the agent's context (search_docs,
    get_page, get_section): the text carries the content, the structured part the metadata.
    """

    structured: BaseModel
    texts: list[str]


@dataclass(frozen=True)
class Exposed:
    """One tool as the MCP server exposes it."""

    name: str
    description: str
    input_model: type[BaseModel]
    call: Callable[..., BaseModel | TextAnswer]
    read_only: bool
    destructive: bool
    idempotent: bool
    open_world: bool
    long_running: bool = False
    output_model: type[BaseModel] | None = None
    title: str | None = None
    context: dict[str, Any] = field(default_factory=dict)


def output_model_of(func: Callable[..., Any]) -> type[BaseModel] | None:
    """The pydantic model a tool function is annotated to return, if it can be resolved."""
    try:
        hints = typing.get_type_hints(func)
    except (NameError, TypeError, AttributeError):
        return None
    ret = hints.get("return")
    return ret if isinstance(ret, type) and issubclass(ret, BaseModel) else None


def from_spec(spec: api.ToolSpec, context: dict[str, Any]) -> Exposed:
    """The registry's ``ToolSpec`` as an exposed tool."""
    ann = spec.annotations
    return Exposed(
        name=spec.name,
        description=spec.description,
        input_model=spec.input_model,
        call=spec.func,
        read_only=ann.read_only,
        destructive=ann.destructive,
        idempotent=ann.idempotent,
        open_world=ann.open_world,
        long_running=spec.long_running,
        output_model=output_model_of(spec.func),
        context=context,
    )


def error_result(error: IndexFoundryError) -> CallToolResult:
    """A ToolError as an MCP tool result (``structuredContent`` holds the whole shape)."""
    body = ToolError.from_error(error)
    return CallToolResult(
        content=[TextContent(type="text", text=error.one_line())],
        structured_content=body.model_dump(mode="json", exclude_none=True),
        is_error=True,
    )


def success_result(answer: BaseModel | TextAnswer) -> CallToolResult:
    if isinstance(answer, TextAnswer):
        return CallToolResult(
            content=[TextContent(type="text", text=t) for t in answer.texts],
            structured_content=answer.structured.model_dump(mode="json", exclude_none=True),
        )
    data = answer.model_dump(mode="json", exclude_none=True)
    # The spec asks tools with structured output to also serialise it as text for older clients.
    return CallToolResult(
        content=[TextContent(type="text", text=json.dumps(data, ensure_ascii=False))],
        structured_content=data,
    )


def _accepted_kwargs(func: Callable[..., Any], offered: dict[str, Any]) -> dict[str, Any]:
    """The context kwargs ``func`` accepts (all of them if it takes ``**context``)."""
    try:
        params = inspect.signature(func).parameters
    except (TypeError, ValueError):
        return {}
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return dict(offered)
    return {k: v for k, v in offered.items() if k in params}


def _schema(model: type[BaseModel], name: str) -> dict[str, Any]:
    return listed_schema(model.model_json_schema(), name)


class _RawArguments(FuncMetadata):
    """Hands the raw arguments to the handler, which validates them against the strict model.

    (The SDK's own validation would report a bad argument as free text; ours reports a
    ToolError with ``CONFIG_INVALID`` and the offending key path.)
    """

    def validate_arguments(self, arguments_to_validate: dict[str, Any]) -> dict[str, Any]:
        return {"arguments": dict(arguments_to_validate)}


class Runner:
    """Runs exposed tools: validates, calls in a thread, maps errors; counts and times each call
    when given ``metrics``."""

    def __init__(self, metrics: ToolMetrics | None = None) -> None:
        self.metrics = metrics

    def prepare(self, tool: Exposed, arguments: dict[str, Any]) -> BaseModel:
        """Validate raw arguments against the tool's strict input model (raises IndexFoundryError).

        A run id that is not a UUID (or ``latest``) is ``RUN_NOT_FOUND`` first, as everywhere."""
        for key in RUN_ID_KEYS & set(arguments):
            if arguments[key] is not None:
                check_run_id(arguments[key], key, allow_latest=True)
        try:
            return tool.input_model.model_validate(arguments)
        except ValidationError as exc:
            error = validation_error(exc, f"{tool.name} arguments")
            error.suggestion = (
                f"Fix the arguments to match {tool.name}'s inputSchema (tools/list); unknown keys are refused"
            )
            raise error from None

    async def run(self, tool: Exposed, arguments: dict[str, Any], ctx: Context[Any, Any]) -> CallToolResult:
        if self.metrics is None:
            return await self._run(tool, arguments, ctx)
        done = self.metrics.timer()
        result = await self._run(tool, arguments, ctx)
        error = (result.structured_content or {}).get("error") if result.is_error else None
        done(tool.name, str(error.get("code", "INTERNAL_ERROR")) if isinstance(error, dict) else "ok")
        return result

    async def _run(self, tool: Exposed, arguments: dict[str, Any], ctx: Context[Any, Any]) -> CallToolResult:
        try:
            payload = self.prepare(tool, arguments)
            offered = dict(tool.context)
            if tool.long_running:
                offered["progress"] = McpProgress.for_current_loop(ctx.report_progress)
            kwargs = _accepted_kwargs(tool.call, offered)
            answer = await anyio.to_thread.run_sync(functools.partial(tool.call, payload, **kwargs))
            return success_result(answer)
        except IndexFoundryError as error:
            return error_result(error)
        except Exception:  # the MCP surface's boundary: never a traceback on the wire
            log.exception("tool %s failed unexpectedly", tool.name)
            return error_result(
                IndexFoundryError(
                    f"{tool.name} failed unexpectedly (details in the server log on stderr)",
                    code="INTERNAL_ERROR",
                    suggestion="Retry; if it fails again, report it with the server log",
                )
            )

    def sdk_tool(self, tool: Exposed) -> Tool:
        """The SDK ``Tool`` for an exposed tool."""

        async def handler(arguments: dict[str, Any], ctx: Context[Any, Any]) -> CallToolResult:
            return await self.run(tool, arguments, ctx)

        # No outputSchema: an agent reads the answer, it does not need its schema in context
        # (the structured part still follows the tool's output model).
        return Tool(
            fn=handler,
            name=tool.name,
            title=tool.title,
            description=tool.description,
            parameters=_schema(tool.input_model, tool.name),
            fn_metadata=_RawArguments(arg_model=ArgModelBase, output_schema=None),
            is_async=True,
            context_kwarg="ctx",
            annotations=ToolAnnotations(
                title=tool.title,
                read_only_hint=tool.read_only,
                destructive_hint=tool.destructive,
                idempotent_hint=tool.idempotent,
                open_world_hint=tool.open_world,
            ),
        )
