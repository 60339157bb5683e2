"""Finding a sentence-transformers model on this machine without loading it or the network
(``backends/embedding/on_disk.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from indexfoundry.backends.embedding.on_disk import hub_names, looks_like_path, missing_model


def _cached(cache: Path, repo: str) -> None:
    folder = cache / f"models--{repo.replace('/', '--')}"
    snapshot = folder / "snapshots" / ("a" * 40)
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text("{}", encoding="utf-8")
    (folder / "refs").mkdir()
    (folder / "refs" / "main").write_text(snapshot.name, encoding="utf-8")


def test_a_bare_name_is_looked_for_as_sentence_transformers_does():
    assert hub_names("all-mpnet-base-v2") == ["sentence-transformers/all-mpnet-base-v2", "all-mpnet-base-v2"]
    assert hub_names("BAAI/bge-small-en-v1.5") == ["BAAI/bge-small-en-v1.5"]
    assert looks_like_path("./model") and looks_like_path("/models/x") and looks_like_path("a/b/c")
    assert not looks_like_path("BAAI/bge-small-en-v1.5")


def test_a_cached_hub_model_and_a_folder_are_found_and_anything_else_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    cache = tmp_path / "hub"
    _cached(cache, "sentence-transformers/all-mpnet-base-v2")
    _cached(cache, "BAAI/bge-small-en-v1.5")
    monkeypatch.setenv("SENTENCE_TRANSFORMERS_HOME", str(cache))
    assert missing_model("all-mpnet-base-v2") is None
    assert missing_model("BAAI/bge-small-en-v1.5") is None
    (tmp_path / "folder").mkdir()
    assert missing_model(str(tmp_path / "folder")) is None
    absent = missing_model("no-such-model")
    assert absent is not None and "'sentence-transformers/no-such-model' is not on this machine" in absent
    assert str(cache) in absent
    assert missing_model(str(tmp_path / "nowhere")) == f"the model folder {tmp_path / 'nowhere'} does not exist"
    (tmp_path / "file").write_text("x", encoding="utf-8")
    assert missing_model(str(tmp_path / "file")) == f"the model folder {tmp_path / 'file'} is not a folder"
