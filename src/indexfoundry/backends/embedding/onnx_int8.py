"""``local-int8``: all-MiniLM-L6-v2 as a dynamically quantized (per-channel int8) ONNX model.

The ONNX file is never downloaded: at first use the fp32 export of the packaged, hash-checked
weights (``onnx_fp32``: ``torch.onnx.export``, checked against torch) is quantized with ONNX
Runtime's ``quantize_dynamic``, then
kept in the user cache (``$INDEXFOUNDRY_CACHE_DIR``, else ``$XDG_CACHE_HOME/indexfoundry``, else
``~/.cache/indexfoundry``) under a name keyed by the weights hash and the export recipe.

Each text runs on its own (batch of one, no padding): dynamic quantization scales activations
per tensor, so a padded or multi-text batch would change a text's vector depending on the other
texts in it. The model id carries the int8 file's hash, so vectors of two different exports
never mix in a cache or a collection.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any

import numpy as np

from indexfoundry.backends.embedding.base import Vectors
from indexfoundry.backends.embedding.local import (
    LOCAL_MODEL_DIMENSIONS,
    LOCAL_MODEL_NAME,
    LOCAL_MODEL_SHA256,
    local_model_path,
)
from indexfoundry.backends.embedding.onnx_files import make_once, user_cache_dir
from indexfoundry.backends.embedding.onnx_fp32 import RECIPE as FP32_RECIPE
from indexfoundry.backends.embedding.onnx_fp32 import (
    ensure_fp32_model,
    pad_batch,
    quiet,
    require_export_tools,
    session,
)
from indexfoundry.backends.embedding.onnx_fp32 import tokenizer as _tokenizer
from indexfoundry.errors import EmbedError, missing_extra
from indexfoundry.storage.hashing import sha256_file

# Bump when the export or quantization settings change: it names a new cache file.
RECIPE = f"{FP32_RECIPE}+qint8-per-channel-v2"
MAX_SEQ_LENGTH = 256

_lock = threading.Lock()
_sessions: dict[str, Any] = {}


def int8_model_file() -> Path:
    """Where the int8 export of the packaged weights is cached."""
    return user_cache_dir() / "onnx" / f"all-MiniLM-L6-v2-{LOCAL_MODEL_SHA256[:16]}-{RECIPE}.onnx"


def export_int8(model_dir: Path, target: Path) -> None:
    """Quantize the fp32 export of the packaged model (``onnx_fp32``, made first if missing) to
    int8 at ``target``. The fp32 export was checked against torch when it was made."""
    require_export_tools("int8", "the local-int8 embedding model")
    from onnxruntime.quantization import QuantType, quantize_dynamic

    fp32 = ensure_fp32_model() if model_dir == local_model_path() else None
    if fp32 is None:  # pragma: no cover - only the packaged model is exported
        raise EmbedError(f"cannot export {model_dir}: only the packaged model is supported", suggestion="Use local")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".export-") as tmp:
        int8 = Path(tmp) / "model-int8.onnx"
        with quiet():
            quantize_dynamic(str(fp32), str(int8), weight_type=QuantType.QInt8, per_channel=True)
        os.replace(int8, target)


def _feed(encoding: Any) -> dict[str, Any]:
    return pad_batch([encoding], len(encoding.ids))


def ensure_int8_model() -> Path:
    """The cached int8 file, exported now if missing, once per machine (``onnx_files.make_once``)."""

    def make(out: Path) -> None:
        export_int8(local_model_path(), out)

    return make_once(int8_model_file(), make)


class Int8Embedder:
    """all-MiniLM-L6-v2 int8 under ONNX Runtime: mean pooling over tokens, one text per run."""

    def __init__(self) -> None:
        try:
            import onnxruntime  # noqa: F401
            import tokenizers  # noqa: F401
        except ImportError as exc:
            raise missing_extra(exc.name or "onnxruntime", "int8", "the local-int8 embedding model") from None
        self.model_dir = local_model_path()
        self.path = ensure_int8_model()
        self.file_sha256 = sha256_file(self.path)
        self.dimensions = LOCAL_MODEL_DIMENSIONS
        self.model_id = f"local-int8:{LOCAL_MODEL_NAME}@{LOCAL_MODEL_SHA256[:12]}+int8@{self.file_sha256[:12]}"
        key = str(self.path)
        with _lock:
            if key not in _sessions:
                _sessions[key] = (session(self.path), _tokenizer(self.model_dir))
        self._session, self._tokenizer = _sessions[key]

    def embed(self, texts: list[str]) -> Vectors:
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for row, text in enumerate(texts):
            encoding = self._tokenizer.encode(text)
            hidden = self._session.run(None, _feed(encoding))[0][0]
            out[row] = hidden.mean(axis=0)  # no padding: every token counts
        return out


def clear_cached_export() -> None:
    """Remove the cached int8 file (tests; a user can also just delete the cache folder)."""
    shutil.rmtree(int8_model_file().parent, ignore_errors=True)
