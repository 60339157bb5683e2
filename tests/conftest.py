"""Shared fixtures: temporary runs folders, small docs trees, the shared corpora."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from indexfoundry.storage.memo import disable_memos
from tests.fakes import RecordingEmbedder
from tests.integration.store_servers import pg_dsn, pg_server, weaviate_emulator  # noqa: F401 - shared server fixtures

REPO = Path(__file__).resolve().parents[1]
CORPORA = REPO.parent / "shared" / "corpora"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden", action="store_true", default=False, help="Rewrite tests/golden/expected from this run."
    )
    parser.addoption(
        "--update-figures",
        action="store_true",
        default=False,
        help="Rewrite the figures the docs print from what the tests measure (tests/figures.py).",
    )


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden"))


@pytest.fixture
def update_figures(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-figures"))


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """No test reads the developer's runs folder or global config."""
    monkeypatch.delenv("INDEXFOUNDRY_RUNS_DIR", raising=False)
    monkeypatch.delenv("INDEXFOUNDRY_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    yield


@pytest.fixture(autouse=True)
def _memos_off_after_each_test() -> Iterator[None]:
    """Docs mode turns the per-process memos on (``storage/memo.py``) and never off: switch them
    off after each test, so no later test in the same process (or xdist worker) sees them."""
    yield
    disable_memos()


@pytest.fixture
def corpora() -> Path:
    """The shared third-party corpora; tests using them skip where ../shared is absent."""
    if not CORPORA.is_dir():
        pytest.skip(f"shared corpora not found at {CORPORA} (a fresh clone has no ../shared)")
    return CORPORA


@pytest.fixture
def runs_dir(tmp_path: Path) -> Path:
    path = tmp_path / "runs"
    path.mkdir()
    return path


@pytest.fixture
def embedder() -> RecordingEmbedder:
    return RecordingEmbedder()


def write_tree(root: Path, files: dict[str, str | bytes]) -> Path:
    """Create files under ``root`` from a {relative path: content} mapping."""
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root


@pytest.fixture
def tree(tmp_path: Path) -> Callable[[dict[str, str | bytes]], Path]:
    def make(files: dict[str, str | bytes], name: str = "docs") -> Path:
        return write_tree(tmp_path / name, files)

    return make  # type: ignore[return-value]


def write_config(path: Path, config: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def folder_config(folder: Path, **sections: Any) -> dict[str, Any]:
    """A pipeline config over one folder with the hash embedder (fast, deterministic)."""
    config: dict[str, Any] = {
        "connect": {"sources": [{"type": "folder", "path": str(folder), "glob": "**/*.md"}]},
        "normalize": {"chunk_strategy": "by_heading"},
        "index": {"embedding_model": "hash"},
    }
    for key, value in sections.items():
        if isinstance(value, dict) and isinstance(config.get(key), dict):
            config[key] = {**config[key], **value}
        else:
            config[key] = value
    return config


SAMPLE_DOCS: dict[str, str | bytes] = {
    "index.md": "# Home\n\nWelcome to the sample project. It explains installation and themes.\n",
    "guide/install.md": (
        "# Installation\n\n## Requirements\n\nPython 3.11 or newer is required to install the package.\n\n"
        "## Using pip\n\nRun pip install sample inside a virtual environment to install it.\n"
    ),
    "guide/theme.md": (
        "---\ntitle: Theming\ntags: [ui]\n---\n# Theme\n\n## Changing the theme\n\n"
        "Set theme.name in the config file to change the theme colours and fonts.\n\n"
        "```yaml\n# not a heading\ntheme:\n  name: dark\n```\n"
    ),
}

os.environ.setdefault("PYTHONHASHSEED", "0")
