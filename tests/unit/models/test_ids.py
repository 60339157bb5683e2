"""One run-id type: every tool names a run with ``models.ids.RunId`` (a run's own id)
or ``RunRef`` (id, prefix or 'latest'), so the schemas agents read agree on what a run id is."""

from __future__ import annotations

import pytest
import uuid6
from pydantic import TypeAdapter, ValidationError

from indexfoundry.app.tools.registry import load_tools
from indexfoundry.models.ids import (
    RUN_ID_OR_LATEST_PATTERN,
    RUN_ID_PATTERN,
    RUN_REF_MAX_LENGTH,
    RunId,
    RunRef,
    is_run_id,
    is_run_prefix,
)
from indexfoundry.storage.layout import is_run_id as layout_is_run_id

NEW_ID = str(uuid6.uuid7())


def test_a_new_run_id_is_a_run_id_and_its_prefixes_are_prefixes():
    assert is_run_id(NEW_ID) and layout_is_run_id is is_run_id
    assert is_run_prefix(NEW_ID[:4]) and is_run_prefix(NEW_ID[:13]) and is_run_prefix(NEW_ID)
    assert not is_run_prefix(NEW_ID[:3]) and not is_run_prefix("latest")
    for bad in (NEW_ID.upper(), NEW_ID + "\n", " " + NEW_ID, NEW_ID[:-1], "latest"):
        assert not is_run_id(bad), bad


def test_run_id_refuses_anything_but_a_lowercase_uuid_and_run_ref_takes_latest_and_prefixes():
    ids, refs = TypeAdapter(RunId), TypeAdapter(RunRef)
    assert ids.validate_python(NEW_ID) == NEW_ID
    for bad in (NEW_ID.upper(), NEW_ID + "\n", "latest", NEW_ID[:8]):
        with pytest.raises(ValidationError):
            ids.validate_python(bad)
    for good in ("latest", "latest:docs", NEW_ID[:6], NEW_ID, "not-a-uuid"):  # resolved later
        assert refs.validate_python(good) == good
    for bad in ("", "x" * 73):  # 'latest:' and a pipeline name of 64 characters fit
        with pytest.raises(ValidationError):
            refs.validate_python(bad)


def test_every_tool_field_naming_a_run_uses_the_one_run_id_type():
    seen: dict[str, set[str]] = {}
    for name, spec in load_tools().items():
        for field, schema in spec.input_model.model_json_schema().get("properties", {}).items():
            if "run_id" not in field:
                continue
            options = schema.get("anyOf", [schema])
            kinds = {
                o.get("pattern") or ("ref" if o.get("maxLength") == RUN_REF_MAX_LENGTH else "?")
                for o in options
                if o.get("type") != "null"
            }
            seen.setdefault(f"{name}.{field}", set()).update(kinds)
    assert seen, "no tool names a run"
    allowed = {RUN_ID_PATTERN, RUN_ID_OR_LATEST_PATTERN, "ref"}
    strays = {key: kinds for key, kinds in seen.items() if not kinds <= allowed}
    assert not strays, f"run ids typed another way: {strays}"
    assert sum(RUN_ID_PATTERN in kinds for kinds in seen.values()) >= 8
