"""Two runs of one config give byte-identical content artifacts (also under another
PYTHONHASHSEED and with the sources reordered); manifests differ only in timing fields."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from indexfoundry import api
from indexfoundry.backends.stores.chroma import ChromaStore
from indexfoundry.models.config import VectorDbConfig
from indexfoundry.models.manifests import TIMING_FIELDS
from indexfoundry.storage.layout import RunLayout
from tests.conftest import SAMPLE_DOCS, folder_config, write_config, write_tree
from tests.fakes import RecordingEmbedder

SKIP_PARTS = {"chroma", "logs"}  # the store's own binary files; logs are not content


def content_files(run: Path) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    for path in sorted(run.rglob("*")):
        rel = path.relative_to(run)
        if not path.is_file() or SKIP_PARTS & set(rel.parts) or rel.name in {"manifest.json", ".lock"}:
            continue
        out[rel.as_posix()] = path.read_bytes()
    return out


def strip_timing(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: strip_timing(v) for k, v in value.items() if k not in TIMING_FIELDS and k != "run_id"}
    if isinstance(value, list):
        return [strip_timing(v) for v in value]
    return value


def manifest_without_timing(run: Path) -> Any:
    return strip_timing(json.loads((run / "manifest.json").read_text()))


def store_contents(run: Path) -> dict[str, Any]:
    config = json.loads((run / "config.json").read_text())
    store = ChromaStore(VectorDbConfig.model_validate(config["index"]["vector_db"]), run / "indexed" / "chroma", run)
    got = store.collection.get(include=["embeddings", "metadatas", "documents"])
    order = np.argsort(got["ids"])
    return {
        "ids": [got["ids"][i] for i in order],
        "embeddings": [np.asarray(got["embeddings"][i], dtype=np.float32).tobytes() for i in order],
        "metadatas": [got["metadatas"][i] for i in order],
        "documents": [got["documents"][i] for i in order],
    }


def assert_same_runs(a: Path, b: Path) -> None:
    files_a, files_b = content_files(a), content_files(b)
    assert sorted(files_a) == sorted(files_b)
    for name in files_a:
        assert files_a[name] == files_b[name], f"{name} differs"
    assert manifest_without_timing(a) == manifest_without_timing(b)
    assert store_contents(a) == store_contents(b)


def test_two_runs_into_fresh_runs_folders_are_byte_identical(tree, tmp_path: Path):
    docs = tree(SAMPLE_DOCS)
    first = api.pipeline_run(folder_config(docs), runs_dir=tmp_path / "r1", embedder=RecordingEmbedder())
    second = api.pipeline_run(folder_config(docs), runs_dir=tmp_path / "r2", embedder=RecordingEmbedder())
    assert first.run_id != second.run_id
    assert_same_runs(tmp_path / "r1" / first.run_id, tmp_path / "r2" / second.run_id)


@pytest.mark.slow
def test_runs_are_identical_under_another_hash_seed_and_with_sources_reordered(tmp_path: Path):
    a = write_tree(
        tmp_path / "alpha", {"one.md": "# One\n\nAlpha text about caching.\n", "sub/two.md": "# Two\n\nMore.\n"}
    )
    b = write_tree(tmp_path / "beta", {"three.md": "# Three\n\n## Part\n\nBeta text about search.\n"})
    sources = [
        {"type": "folder", "path": str(a), "glob": "**/*.md"},
        {"type": "folder", "path": str(b), "glob": "**/*.md"},
    ]
    base = {"normalize": {"chunk_strategy": "by_heading"}, "index": {"embedding_model": "hash"}}
    forward = write_config(tmp_path / "forward.yaml", {"connect": {"sources": sources}, **base})
    backward = write_config(tmp_path / "backward.yaml", {"connect": {"sources": sources[::-1]}, **base})
    runs = {}
    for name, config, seed in (("forward", forward, "1"), ("backward", backward, "4242")):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "indexfoundry",
                "pipeline",
                "run",
                str(config),
                "--runs-dir",
                str(tmp_path / name),
                "--json",
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        runs[name] = tmp_path / name / json.loads(done.stdout)["run_id"]
    files_f, files_b = content_files(runs["forward"]), content_files(runs["backward"])
    assert {k for k in files_f if k != "config.json"} == {k for k in files_b if k != "config.json"}
    for name in files_f:
        if name != "config.json":  # the frozen config records the sources in the order given
            assert files_f[name] == files_b[name], f"{name} differs"
    assert store_contents(runs["forward"]) == store_contents(runs["backward"])


def test_content_artifacts_hold_no_run_id_and_no_timestamps(tree, runs_dir: Path):
    docs = tree(SAMPLE_DOCS)
    out = api.pipeline_run(folder_config(docs), runs_dir=runs_dir, embedder=RecordingEmbedder())
    layout = RunLayout(runs_dir / out.run_id)
    year = json.loads(layout.manifest.read_text())["created_at"][:4]
    for name, data in content_files(layout.root).items():
        text = data.decode("utf-8", errors="replace")
        assert out.run_id not in text, name
        assert f'"{year}-' not in text and "T00:" not in text, name
