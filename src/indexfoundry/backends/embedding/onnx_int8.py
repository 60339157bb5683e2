"""``local-int8``: all-MiniLM-L6-v2 as a dynamically quantized (per-channel int8) ONNX model.

The ONNX file is never downloaded: at first use it is exported from the packaged, hash-checked
weights with ``torch.onnx.export`` and quantized with ONNX Runtime's ``quantize_dynamic``, then
kept in the user cache (``$INDEXFOUNDRY_CACHE_DIR``, else ``$XDG_CACHE_HOME/indexfoundry``, else
``~/.cache/indexfoundry``) under a name keyed by the weights hash and the export recipe. The
export is checked against the torch model before it is quantized.

Each text runs on its own (batch of one, no padding): dynamic quantization scales activations
per tensor, so a padded or multi-text batch would change a text's vector depending on the other
texts in it. The model id carries the int8 file's hash, so vectors of two different exports
never mix in a cache or a collection.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import sys
import tempfile
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from indexfoundry.backends.embedding.providers import (
    LOCAL_MODEL_DIMENSIONS,
    LOCAL_MODEL_NAME,
    LOCAL_MODEL_SHA256,
    Vectors,
    _offline_env,
    local_model_path,
)
from indexfoundry.errors import EmbedError, missing_extra
from indexfoundry.storage.hashing import sha256_file

# Bump when the export or quantization settings change: it names a new cache file.
RECIPE = "onnx-opset18-dynamo+qint8-per-channel-v1"
MAX_SEQ_LENGTH = 256
_PROBE = "IndexFoundry checks the exported ONNX graph against the torch model."

_lock = threading.Lock()
_sessions: dict[str, Any] = {}


def user_cache_dir() -> Path:
    """Per-user cache folder for derived model files (not tied to a runs folder)."""
    explicit = os.environ.get("INDEXFOUNDRY_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "indexfoundry"


def int8_model_file() -> Path:
    """Where the int8 export of the packaged weights is cached."""
    return user_cache_dir() / "onnx" / f"all-MiniLM-L6-v2-{LOCAL_MODEL_SHA256[:16]}-{RECIPE}.onnx"


def _require_export_tools() -> None:
    for module in ("onnx", "onnxscript", "onnxruntime"):
        try:
            __import__(module)
        except ImportError:
            raise missing_extra(module, "int8", "the local-int8 embedding model") from None


def export_int8(model_dir: Path, target: Path) -> None:
    """Export the packaged model to ONNX, check it against torch, quantize it to int8 at ``target``."""
    _require_export_tools()
    _offline_env()
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from transformers import AutoModel

    base = AutoModel.from_pretrained(str(model_dir), local_files_only=True, attn_implementation="eager").eval()

    class Encoder(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            out = self.inner(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
            return out.last_hidden_state

    encoder = Encoder(base).eval()
    tokenizer = _tokenizer(model_dir)
    encoding = tokenizer.encode(_PROBE)
    # Three distinct tensors: torch.export would alias one tensor passed twice into one input.
    sample = (
        torch.tensor([encoding.ids], dtype=torch.long),
        torch.tensor([encoding.attention_mask], dtype=torch.long),
        torch.tensor([encoding.type_ids], dtype=torch.long),
    )
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".export-") as tmp:
        fp32 = Path(tmp) / "model-fp32.onnx"
        int8 = Path(tmp) / "model-int8.onnx"
        seq = torch.export.Dim("sequence", min=1, max=512)
        with _quiet():
            torch.onnx.export(
                encoder,
                sample,
                str(fp32),
                input_names=["input_ids", "attention_mask", "token_type_ids"],
                output_names=["last_hidden_state"],
                dynamic_shapes=({1: seq}, {1: seq}, {1: seq}),
                opset_version=18,
                dynamo=True,
                external_data=False,
                verbose=False,
            )
        with torch.no_grad():
            expected = encoder(*sample).numpy()
        got = _session(fp32).run(None, _feed(encoding))[0]
        if got.shape != expected.shape or float(np.abs(got - expected).max()) > 1e-3:
            raise EmbedError(
                "the ONNX export of the local model does not reproduce the torch model",
                suggestion="Use embedding_model: local; report the torch/onnxscript versions",
            )
        with _quiet():
            quantize_dynamic(str(fp32), str(int8), weight_type=QuantType.QInt8, per_channel=True)
        os.replace(int8, target)


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Keep the exporter's chatter (progress prints on stdout, log lines, deprecation warnings)
    off stdout, where it would corrupt ``--json`` output; the result is verified instead."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    with warnings.catch_warnings(), contextlib.redirect_stdout(sys.stderr):
        warnings.simplefilter("ignore")
        logging.disable(logging.WARNING)
        try:
            yield
        finally:
            logging.disable(logging.NOTSET)
            # The exporter and the quantizer configure the root logger (basicConfig, DEBUG level);
            # put it back so that every later log line of the process is not printed.
            root.handlers[:] = handlers
            root.setLevel(level)


def _tokenizer(model_dir: Path) -> Any:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    # tokenizer.json ships with 128-token truncation and padding; the model reads 256 tokens
    # (sentence_bert_config.json), as sentence-transformers does.
    max_len = MAX_SEQ_LENGTH
    config = model_dir / "sentence_bert_config.json"
    if config.is_file():
        max_len = int(json.loads(config.read_text(encoding="utf-8")).get("max_seq_length", max_len))
    tokenizer.enable_truncation(max_len)
    tokenizer.no_padding()
    return tokenizer


def _feed(encoding: Any) -> dict[str, Any]:
    return {
        "input_ids": np.asarray([encoding.ids], dtype=np.int64),
        "attention_mask": np.asarray([encoding.attention_mask], dtype=np.int64),
        "token_type_ids": np.asarray([encoding.type_ids], dtype=np.int64),
    }


def _session(path: Path) -> Any:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def ensure_int8_model() -> Path:
    """The cached int8 file, exported now if missing."""
    target = int8_model_file()
    with _lock:
        if not target.is_file():
            export_int8(local_model_path(), target)
    return target


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
                _sessions[key] = (_session(self.path), _tokenizer(self.model_dir))
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
