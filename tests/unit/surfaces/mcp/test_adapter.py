"""The adapter that exposes registry tools over MCP: strict schemas, progress, ToolError shape.

Driven in-process through the official SDK client (``mcp.client.Client`` with the server object).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client import Client
from pydantic import Field

from indexfoundry import api
from indexfoundry.app.agent import tools as agent_tools
from indexfoundry.app.tools import registry
from indexfoundry.app.tools.registry import ToolAnnotations, ToolSpec
from indexfoundry.errors import IndexFoundryError, ParseError
from indexfoundry.models.base import Strict
from indexfoundry.storage.layout import RunLayout
from indexfoundry.surfaces.mcp import ServerOptions, create_server
from indexfoundry.surfaces.mcp.adapter import Exposed, Runner

RUN = "01900000-0000-7000-8000-000000000002"


class FakeInput(Strict):
    run_id: str = Field(description="Run")
    chunks_path: str = Field(default="normalized/chunks.jsonl", description="Chunks")
    path: str | None = Field(default=None, description="A folder on the host")
    fail: str | None = Field(default=None, description="'parse' or 'crash'")


class FakeOutput(Strict):
    run_id: str = Field(description="Run")
    path: str | None = Field(default=None, description="Resolved folder")
    steps: int = Field(description="Steps done")


def fake_tool(payload: FakeInput, *, progress: Any = None, runs_dir: Path | None = None, **_: Any) -> FakeOutput:
    """A long fake tool for the adapter tests."""
    if payload.fail == "parse":
        raise ParseError("cannot parse the thing", suggestion="Fix the thing")
    if payload.fail == "crash":
        raise RuntimeError("secret internal detail")
    steps = 0
    assert progress is not None and runs_dir is not None
    with progress.task("work", total=3) as task:
        for _ in range(3):
            task.advance(1)
            steps += 1
    return FakeOutput(run_id=payload.run_id, path=payload.path, steps=steps)


def _fake_spec() -> ToolSpec:
    return ToolSpec(
        name="indexfoundry_test_fake",
        description="A long fake tool for the adapter tests.",
        input_model=FakeInput,
        func=fake_tool,
        annotations=ToolAnnotations(read_only=False, destructive=True, idempotent=False, open_world=False),
        long_running=True,
    )


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch, runs_dir: Path, tmp_path: Path):
    spec = _fake_spec()
    monkeypatch.setitem(registry._REGISTRY, spec.name, spec)
    # Reviewed as taking nothing an agent must not write: exposed with its own input model.
    monkeypatch.setattr(agent_tools, "AS_IS", agent_tools.AS_IS | {spec.name})
    layout = RunLayout.for_run(runs_dir, RUN)
    layout.create()
    (layout.normalized_dir / "chunks.jsonl").write_text("{}\n", encoding="utf-8")
    (tmp_path / "root" / "docs").mkdir(parents=True)
    built, _ = create_server(ServerOptions(runs_dir=runs_dir, roots=[tmp_path / "root"]))
    return built


def _call(server, arguments: dict[str, Any], progress: list | None = None):
    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        if progress is not None:
            progress.append((value, message))

    async def main():
        async with Client(server) as client:
            tool = next(t for t in (await client.list_tools()).tools if t.name == "indexfoundry_test_fake")
            result = await client.session.call_tool("indexfoundry_test_fake", arguments, progress_callback=on_progress)
            return tool, result

    return anyio.run(main)


def test_a_catalogued_tool_is_exposed_with_its_input_schema_and_truthful_annotations(server):
    tool, result = _call(server, {"run_id": RUN})
    assert tool.input_schema["additionalProperties"] is False
    assert set(tool.input_schema["properties"]) == {"run_id", "chunks_path", "path", "fail"}
    assert tool.output_schema is None  # no agent needs it in its context
    assert (tool.annotations.read_only_hint, tool.annotations.destructive_hint) == (False, True)
    assert (tool.annotations.idempotent_hint, tool.annotations.open_world_hint) == (False, False)
    assert not result.is_error
    assert result.structured_content == {"run_id": RUN, "steps": 3}


def test_a_long_tool_reports_increasing_progress_notifications(server):
    progress: list = []
    _call(server, {"run_id": RUN}, progress)
    values = [value for value, _ in progress]
    assert len(values) >= 3
    assert values == sorted(values) and len(set(values)) == len(values)
    assert any(message == "work: 3/3" for _, message in progress)


def test_a_registered_tool_outside_the_agent_catalogue_is_not_exposed(
    monkeypatch: pytest.MonkeyPatch, runs_dir: Path, tmp_path: Path
):
    spec = _fake_spec()
    monkeypatch.setitem(registry._REGISTRY, spec.name, spec)
    built, _ = create_server(ServerOptions(runs_dir=runs_dir, roots=[tmp_path]))

    async def main() -> set[str]:
        async with Client(built) as client:
            return {t.name for t in (await client.list_tools()).tools}

    names = anyio.run(main)
    assert spec.name not in names and "indexfoundry_pipeline_run" in names


@pytest.mark.parametrize(
    ("arguments", "code"),
    [
        ({"run_id": "not-a-uuid"}, "RUN_NOT_FOUND"),
        ({"run_id": RUN, "unknown": 1}, "CONFIG_INVALID"),
        ({}, "CONFIG_INVALID"),
        ({"run_id": RUN, "fail": "parse"}, "PARSE_ERROR"),
        ({"run_id": RUN, "fail": "crash"}, "INTERNAL_ERROR"),
    ],
)
def test_failures_come_back_in_the_tool_error_shape(server, arguments: dict[str, Any], code: str):
    _, result = _call(server, arguments)
    assert result.is_error
    body = result.structured_content
    assert body["isError"] is True
    assert body["error"]["code"] == code
    assert isinstance(body["error"]["recoverable"], bool)
    assert body["error"]["suggestion"]
    assert body["content"][0]["text"].startswith(code)
    assert "secret internal detail" not in str(body) and "Traceback" not in str(body)


def code_of(call) -> str:
    with pytest.raises(IndexFoundryError) as info:
        call()
    return info.value.code


def test_a_malformed_run_id_is_run_not_found_before_the_schema_is_asked(tmp_path: Path):
    specs = api.agent_tool_specs(api.AgentScope(api.Roots([tmp_path])))
    spec = specs["indexfoundry_normalize_chunk"]
    tool = Exposed(spec.name, spec.description, spec.input_model, spec.func, False, False, True, False)
    runner = Runner()
    for arguments in ({"run_id": "nope"}, {"run_id": "../" + RUN, "input_paths": []}):
        assert code_of(lambda a=arguments: runner.prepare(tool, a)) == "RUN_NOT_FOUND"
    assert code_of(lambda: runner.prepare(tool, {"run_id": RUN, "input_paths": [], "bogus": 1})) == "CONFIG_INVALID"
