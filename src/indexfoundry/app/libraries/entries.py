"""What a server serves: library entries from ``--library NAME@VERSION=TARGET`` flags and a
``libraries.yaml`` (relative sources resolved against the file)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from pydantic import Field, ValidationError

from indexfoundry.errors import ConfigInvalid
from indexfoundry.models.base import Strict
from indexfoundry.models.validation import validation_error
from indexfoundry.storage.layout import is_run_id

_NAME = re.compile(r"^@?[A-Za-z0-9][A-Za-z0-9._/@+-]{0,127}$")


class LibraryEntry(Strict):
    """One library version of a ``libraries.yaml``."""

    name: str = Field(min_length=1, max_length=128, description="Library name, e.g. 'react'")
    version: str = Field(min_length=1, max_length=64, description="Version, e.g. '18.3.1'")
    source: str = Field(min_length=1, max_length=4096, description="Run id, pipeline config file or docs folder")
    refresh_interval_s: float | None = Field(
        default=None, ge=0, description="Seconds between refreshes of remote sources (0: never; default: the server's)"
    )


class LibrariesFile(Strict):
    """``libraries.yaml``: the libraries one server serves."""

    libraries: list[LibraryEntry] = Field(default_factory=list, description="Library versions served")


def parse_library_flag(value: str) -> LibraryEntry:
    """``NAME@VERSION=TARGET`` (the name may itself contain '@', as in '@types/node@20=...')."""
    spec, sep, target = value.partition("=")
    name, at, version = spec.rpartition("@")
    if not sep or not at or not name or not version or not target:
        raise ConfigInvalid(
            f"--library '{value}' is not NAME@VERSION=RUN_OR_CONFIG",
            suggestion="e.g. --library react@18.3.1=./react-18.yaml (a run id, a config file or a docs folder)",
        )
    return _entry({"name": name.strip(), "version": version.strip(), "source": target.strip()}, "--library")


def _entry(data: dict[str, Any], what: str) -> LibraryEntry:
    try:
        entry = LibraryEntry.model_validate(data)
    except ValidationError as exc:
        raise validation_error(exc, what) from None
    if not _NAME.match(entry.name) or not _NAME.match(entry.version):
        raise ConfigInvalid(
            f"{what}: '{entry.name}@{entry.version}' has characters a library name or version cannot have",
            suggestion="Use letters, digits and . _ - / @",
        )
    return entry


def read_libraries_file(path: Path) -> list[LibraryEntry]:
    """The entries of a ``libraries.yaml`` (relative sources are relative to the file)."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ConfigInvalid(f"cannot read {path}: {' '.join(str(exc).split())}", suggestion="Check the file") from None
    try:
        parsed = LibrariesFile.model_validate(data)
    except ValidationError as exc:
        raise validation_error(exc, str(path)) from None
    out = []
    for item in parsed.libraries:
        entry = _entry(item.model_dump(), str(path))
        if not is_run_id(entry.source):
            entry.source = str((path.parent / entry.source).expanduser().resolve())
        out.append(entry)
    return out
