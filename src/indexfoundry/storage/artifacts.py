"""The one way a versioned artifact is written and read (``models/artifacts.py``).

``write_artifact`` stamps the model's ``schema_version`` and writes the stable pretty JSON
atomically; ``read_artifact`` refuses a file written by a newer IndexFoundry (CONFIG_INVALID,
"upgrade") before validating it. A file from before versioning (no ``schema_version``) is
version 1.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from indexfoundry.errors import ConfigInvalid
from indexfoundry.models.artifacts import VersionedArtifact
from indexfoundry.storage.atomic import atomic_write_json, read_json

A = TypeVar("A", bound=VersionedArtifact)


def check_schema_version(data: Any, newest: int, what: str) -> None:
    """CONFIG_INVALID when ``data`` (a JSON object) says it was written in a format newer than ``newest``."""
    version = data.get("schema_version", 1) if isinstance(data, dict) else None
    if not isinstance(version, int) or isinstance(version, bool) or version > newest:
        raise ConfigInvalid(
            f"{what} was written by a newer IndexFoundry (schema version {version}; this one reads up to {newest})",
            suggestion="Upgrade IndexFoundry to read this run (pip install -U indexfoundry)",
        )


def artifact_data(artifact: VersionedArtifact) -> dict[str, Any]:
    """The JSON object written for ``artifact`` (``None`` fields kept, as before versioning)."""
    data: dict[str, Any] = artifact.model_dump(mode="json", exclude_none=False)
    data["schema_version"] = type(artifact).SCHEMA_VERSION
    return _drop_unset_none(artifact, data)


def _drop_unset_none(artifact: Any, data: dict[str, Any]) -> dict[str, Any]:
    # Optional fields that were never given stay out of the file (a nested model's counters
    # that only one writer fills); fields given as None are written as null.
    for name, value in list(data.items()):
        field = getattr(artifact, name, None)
        if value is None and name not in artifact.model_fields_set:
            del data[name]
        elif isinstance(value, dict) and hasattr(field, "model_fields_set"):
            data[name] = _drop_unset_none(field, value)
    return data


def write_artifact(path: Path, artifact: VersionedArtifact) -> None:
    """Write ``artifact`` to ``path`` atomically, with its schema version."""
    atomic_write_json(path, artifact_data(artifact))


def read_artifact_data(path: Path, model: type[A]) -> dict[str, Any]:
    """``read_artifact`` as the JSON object that was written (fields never written stay out)."""
    data: dict[str, Any] = read_artifact(path, model).model_dump(mode="json", exclude_unset=True)
    return data


def read_artifact(path: Path, model: type[A], what: str | None = None) -> A:
    """Read ``path`` as ``model``: a newer schema version or an invalid file is CONFIG_INVALID."""
    data = read_json(path)
    name = what or f"{model.ARTIFACT} ({path})"
    check_schema_version(data, model.SCHEMA_VERSION, name)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(p) for p in error.get("loc", ()))
        raise ConfigInvalid(
            f"{name} is invalid: {where}: {error.get('msg')}",
            suggestion="The run folder was edited or damaged; rerun the phase that writes it with --force",
        ) from None
