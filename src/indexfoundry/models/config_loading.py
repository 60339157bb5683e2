"""The one place a config is read: YAML and JSON files, ``$INDEXFOUNDRY_CONFIG``, the global
config's defaults filled into a pipeline config, relative paths resolved against the file.

Every problem is ``CONFIG_INVALID`` with the key path and a suggestion; the models themselves
neither read files nor look at the environment.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from indexfoundry.errors import ConfigInvalid
from indexfoundry.models.config_connect import FolderSource, PdfSource, RepoSource
from indexfoundry.models.config_global import ENV_GLOBAL_CONFIG, GLOBAL_CONFIG_FILE, GlobalConfig
from indexfoundry.models.config_pipeline import PipelineConfig
from indexfoundry.models.ids import pipeline_name_from
from indexfoundry.models.validation import validation_error


def read_config_file(path: Path) -> dict[str, Any]:
    """Parse a YAML or JSON file into a mapping, with CONFIG_INVALID on any problem."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigInvalid(f"config file {path} does not exist", suggestion="Check the path") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigInvalid(f"cannot read config file {path}: {exc}", suggestion="Check the file") from None
    try:
        data = json.loads(text) if path.suffix.lower() == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise ConfigInvalid(
            f"{path} is not valid {'JSON' if path.suffix.lower() == '.json' else 'YAML'}: {' '.join(str(exc).split())}",
            suggestion="Fix the syntax at the position shown",
        ) from None
    if not isinstance(data, dict):
        raise ConfigInvalid(f"{path} must contain a mapping at the top level", suggestion="See README")
    return data


def load_global_config(path: Path | None = None) -> GlobalConfig:
    """Load the global config: explicit path, $INDEXFOUNDRY_CONFIG, ./indexfoundry.config.json, or defaults."""
    if path is None:
        env = os.environ.get(ENV_GLOBAL_CONFIG)
        if env:
            path = Path(env)
        elif Path(GLOBAL_CONFIG_FILE).is_file():
            path = Path(GLOBAL_CONFIG_FILE)
    if path is None:
        return GlobalConfig()
    try:
        return GlobalConfig.model_validate(read_config_file(path))
    except ValidationError as exc:
        raise validation_error(exc, str(path), GlobalConfig) from None


def host_of_entry(entry: str) -> str:
    """The host of a host-list entry ("name", "name:port", "[v6]:port" or a bare IPv6 address), lower case."""
    entry = entry.strip().lower()
    if entry.startswith("["):
        return entry[1:].split("]", 1)[0]
    return entry.rsplit(":", 1)[0] if entry.count(":") == 1 else entry


def names_private_host(entry: str) -> bool:
    """Whether a host-list entry names a loopback or private host (``localhost``, ``127.0.0.1``, ...)."""
    import ipaddress

    name = host_of_entry(entry).rstrip(".")
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return not ipaddress.ip_address(name).is_global
    except ValueError:
        return False


def inherited_blocked_domains(connect: dict[str, Any], inherited: list[str]) -> list[str]:
    """Blocked domains a pipeline config inherits from the global config.

    An explicit opt-in beats a default: with ``allow_private_networks: true`` the inherited
    entries naming loopback/private hosts (the defaults ``localhost``, ``127.0.0.1``) are dropped,
    and so are entries naming one of ``allowed_private_hosts``. ``blocked_domains`` written in the
    pipeline config itself always apply in full.
    """
    allowed_hosts = {host_of_entry(str(h)) for h in connect.get("allowed_private_hosts") or []}
    private_ok = connect.get("allow_private_networks") is True
    return [
        entry
        for entry in inherited
        if not (private_ok and names_private_host(entry)) and host_of_entry(entry) not in allowed_hosts
    ]


def _apply_defaults(raw: dict[str, Any], glob: GlobalConfig) -> dict[str, Any]:
    """Fill keys the pipeline config leaves out from the global config's defaults."""
    data: dict[str, Any] = json.loads(json.dumps(raw))  # deep copy of plain data
    d = glob.defaults

    def fill(section: str, values: dict[str, Any]) -> None:
        target = data.get(section)
        if target is None:
            target = {}
            data[section] = target
        if isinstance(target, dict):
            for key, value in values.items():
                target.setdefault(key, value)

    connect = data.get("connect")
    if isinstance(connect, dict):
        connect.setdefault("timeout_ms", d.connect.timeout_ms)
        connect.setdefault("max_file_size_mb", d.connect.max_file_size_mb)
        connect.setdefault("user_agent", d.connect.user_agent)
        if glob.security.allowed_domains:
            connect.setdefault("allowed_domains", list(glob.security.allowed_domains))
        connect.setdefault("allow_private_networks", glob.security.allow_private_networks)
        if "blocked_domains" not in connect:
            connect["blocked_domains"] = inherited_blocked_domains(connect, glob.security.blocked_domains)
    fill("extract", {"pdf_mode": d.extract.pdf_mode})
    fill(
        "normalize",
        {
            "chunk_strategy": d.normalize.chunk_strategy,
            "max_chars": d.normalize.max_chars,
            "overlap_chars": d.normalize.overlap_chars,
        },
    )
    fill("index", {"embedding_model": d.index.embedding_model, "batch_size": d.index.batch_size})
    return data


def parse_pipeline_config(
    raw: dict[str, Any], base_dir: Path | None = None, glob: GlobalConfig | None = None
) -> PipelineConfig:
    """Validate a pipeline config mapping; folder paths are resolved against ``base_dir``."""
    data = _apply_defaults(raw, glob or GlobalConfig())
    try:
        config = PipelineConfig.model_validate(data)
    except ValidationError as exc:
        raise validation_error(exc, "pipeline config", PipelineConfig) from None
    if base_dir is not None:
        for source in config.connect.sources:
            if isinstance(source, FolderSource):
                if source.name is None:
                    source.name = Path(source.path).name or "folder"
                source.path = str((base_dir / source.path).resolve())
            elif isinstance(source, PdfSource) and "://" not in source.source:
                source.source = str((base_dir / source.source).resolve())
            elif isinstance(source, RepoSource) and source.path is not None:
                source.path = str((base_dir / source.path).resolve())
    for source in config.connect.sources:
        if isinstance(source, FolderSource) and source.name is None:
            source.name = Path(source.path).name or "folder"
    if config.normalize.overlap_chars >= config.normalize.max_chars:
        raise ConfigInvalid(
            "pipeline config: normalize.overlap_chars must be smaller than normalize.max_chars",
            suggestion="Lower overlap_chars or raise max_chars",
        )
    return config


def load_pipeline_config(path: Path, glob: GlobalConfig | None = None) -> PipelineConfig:
    """Load a YAML/JSON pipeline config file; relative paths are relative to the file, and the
    pipeline is named after the file unless the config names it."""
    config = parse_pipeline_config(read_config_file(path), base_dir=path.resolve().parent, glob=glob)
    if config.name is None:
        config.name = pipeline_name_from(path.stem.removesuffix(".config"))
    return config
