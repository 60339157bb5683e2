"""``local-int8``: the int8 ONNX export of the packaged model (slow: exports the model)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from indexfoundry.backends.embedding.base import l2_normalize
from indexfoundry.backends.embedding.onnx_fp32 import OnnxEmbedder, ensure_fp32_model
from indexfoundry.storage.hashing import sha256_file

pytestmark = pytest.mark.model

TEXTS = [
    "Install the package with pip inside a virtual environment.",
    "Change the theme colours in the configuration file.",
    " ".join(f"token{i} word{i}" for i in range(150)),  # longer than tokenizer.json's 128-token default
]


@pytest.fixture
def int8(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("INDEXFOUNDRY_CACHE_DIR", str(tmp_path / "cache"))
    from indexfoundry.backends.embedding.onnx_int8 import Int8Embedder

    return Int8Embedder()


def test_int8_vectors_do_not_depend_on_what_else_is_in_the_batch(int8):
    alone = [int8.embed([t])[0] for t in TEXTS]
    together = int8.embed([TEXTS[2], TEXTS[0], TEXTS[1]])
    assert together[1].tobytes() == alone[0].tobytes()
    assert together[2].tobytes() == alone[1].tobytes()
    assert together[0].tobytes() == alone[2].tobytes()


def test_int8_stays_close_to_the_fp32_model_and_reads_256_tokens(int8):
    assert int8._tokenizer.truncation["max_length"] == 256
    ours = l2_normalize(int8.embed(TEXTS))
    reference = OnnxEmbedder(ensure_fp32_model()).embed(TEXTS)
    cosines = (ours * l2_normalize(reference)).sum(axis=1)
    assert float(cosines.min()) > 0.98
    assert int8.model_id.startswith("local-int8:") and int8.file_sha256[:12] in int8.model_id


def test_the_export_is_byte_identical_when_made_again(int8, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from indexfoundry.backends.embedding.onnx_int8 import export_int8, local_model_path

    again = tmp_path / "again.onnx"
    export_int8(local_model_path(), again)
    assert sha256_file(again) == int8.file_sha256
    assert np.array_equal(
        np.frombuffer(again.read_bytes()[:64], dtype=np.uint8),
        np.frombuffer(Path(int8.path).read_bytes()[:64], dtype=np.uint8),
    )
