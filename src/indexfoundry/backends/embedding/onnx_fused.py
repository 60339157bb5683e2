"""The default ``local`` model file: all-MiniLM-L6-v2 with fused kernels and row-wise int8 MatMuls.

Made once per machine from the packaged, hash-checked weights and kept in the user cache beside
the fp32 export (``onnx_fp32``), under a name keyed by the weights hash, this recipe and the
versions of the tools that shape the graph (torch, transformers, onnx, onnxruntime):

1. ``torch.onnx.export`` with the TorchScript exporter (opset 17), whose BERT graph ONNX
   Runtime's transformer optimizer recognises (the dynamo graph's attention it does not);
2. ``onnxruntime.transformers.optimizer`` (``model_type="bert"``): embeddings + LayerNorm in one
   kernel, one ``MultiHeadAttention`` kernel per layer (the mask applied inside it), bias + GELU
   and residual + LayerNorm fused; the Q, K and V projections stay MatMuls, so they are
   quantized too;
3. ``token_int8.quantize_rows``: every weight MatMul (36: Q, K, V, output, and the two
   feed-forward ones in each of the 6 layers) takes uint8 activations quantized per token and
   per-column int8 weights; attention scores, softmax, LayerNorm and GELU stay fp32.

The result is checked against the torch model (mean-pooled vectors of a padded probe batch,
cosine ≥ 0.995) before it is kept. Per-token scales are what keep batching deterministic: a
token's int8 codes come from that token alone, the integer products are exact, and a text is
padded to a length that depends on it alone (``onnx_fp32.padded_length``), so its vector is the
same bits alone, in any batch and in any order. On CPUs without VNNI, ONNX Runtime's u8 x s8
kernel adds pairs of products in int16, which can saturate; there the weights are quantized to
7 bits (±63), so no sum can overflow (the file name says which: ``w8`` or ``w7``).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from indexfoundry.backends.embedding.local import LOCAL_MODEL_SHA256, local_model_path
from indexfoundry.backends.embedding.onnx_files import cached_export, make_once, tool_versions
from indexfoundry.backends.embedding.onnx_fp32 import INPUT_NAMES, quiet, session, torch_encoder
from indexfoundry.errors import EmbedError, missing_extra
from indexfoundry.storage.hashing import sha256_file

EXPORT_TOOLS = ("torch", "transformers", "onnx", "onnxruntime")
# The lowest cosine to the torch model's vectors on the probe batch that an export may have.
MIN_PROBE_COSINE = 0.995


def has_vnni() -> bool:
    """Does this CPU multiply uint8 x int8 into int32 without int16 saturation (x86 VNNI; other
    architectures' int8 dot products do not saturate either)?"""
    import platform

    if platform.machine().lower() not in ("x86_64", "amd64", "i386", "i686"):
        return True
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as info:
            flags = next((line for line in info if line.startswith("flags")), "")
    except OSError:
        return False
    return bool({"avx512_vnni", "avx_vnni"} & set(flags.split()))


def weight_bits() -> int:
    """8 where the int8 kernels cannot saturate, else 7 (``has_vnni``)."""
    return 8 if has_vnni() else 7


RECIPE = f"onnx-opset17-torchscript-bert-fused-rowint8-w{weight_bits()}-v1"


def fused_model_file() -> Path | None:
    """Where this machine's default model file is (or will be) cached (``onnx_fp32.cached_export``)."""
    return cached_export(RECIPE, EXPORT_TOOLS)


def _pooled(hidden: Any, mask: Any) -> Any:
    """Mean over each text's own tokens, L2-normalised (what the embedder returns)."""
    weights = mask.astype(np.float64)[:, :, None]
    pooled = (np.asarray(hidden, dtype=np.float64) * weights).sum(axis=1) / weights.sum(axis=1)
    return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)


def _fuse(raw: Path, config: dict[str, Any]) -> Any:
    """ONNX Runtime's BERT fusions over the exported graph (python fusions only, no ORT pass)."""
    from onnxruntime.transformers.fusion_options import FusionOptions
    from onnxruntime.transformers.optimizer import optimize_model

    options = FusionOptions("bert")
    options.use_multi_head_attention = True  # Q, K and V stay MatMuls, so they are quantized too
    fused = optimize_model(
        str(raw),
        model_type="bert",
        num_heads=int(config["num_attention_heads"]),
        hidden_size=int(config["hidden_size"]),
        optimization_options=options,
        opt_level=0,
        use_gpu=False,
    )
    return fused.model


def export_fused(model_dir: Path, target: Path) -> dict[str, Any]:
    """Make the default model file at ``target`` (module docstring); return its sidecar record
    (``onnx_files.make_once`` puts the file in its place).

    Raises EMBED_ERROR when the result is not close to the torch model on the probe batch.
    """
    import json

    import onnx
    import torch

    from indexfoundry.backends.embedding.token_int8 import quantize_rows

    encoder, feed, sample = torch_encoder(model_dir)
    config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".export-") as tmp:
        raw, out = Path(tmp) / "model-fp32.onnx", Path(tmp) / "model-int8.onnx"
        axes = {name: {0: "batch", 1: "sequence"} for name in (*INPUT_NAMES, "last_hidden_state")}
        with quiet():
            torch.onnx.export(
                encoder,
                sample,
                str(raw),
                input_names=list(INPUT_NAMES),
                output_names=["last_hidden_state"],
                dynamic_axes=axes,
                opset_version=17,
                dynamo=False,
            )
            model = _fuse(raw, config)
        rewritten = quantize_rows(model, weight_bits())
        onnx.save(model, str(out))
        with torch.no_grad():
            expected = _pooled(encoder(*sample).numpy(), feed["attention_mask"])
        got = _pooled(session(out, 1).run(None, feed)[0], feed["attention_mask"])
        cosine = float((expected * got).sum(axis=1).min())
        if got.shape != expected.shape or not cosine >= MIN_PROBE_COSINE:
            raise EmbedError(
                f"the int8 ONNX model made from the local model is too far from it (cosine {cosine:.4f})",
                suggestion="Set INDEXFOUNDRY_LOCAL_BACKEND=onnx-fp32; report the torch/onnxruntime versions",
            )
        digest = sha256_file(out)
        os.replace(out, target)
    return {
        "sha256": digest,
        "recipe": RECIPE,
        "model_sha256": LOCAL_MODEL_SHA256,
        "exporter": tool_versions(EXPORT_TOOLS),
        "int8_matmuls": rewritten,
        "probe_min_cosine": round(cosine, 6),
    }


def ensure_fused_model() -> Path:
    """The cached default model file, made now if missing (needs torch and transformers), once
    per machine (``onnx_files.make_once``)."""
    target = fused_model_file()
    if target is None:
        raise missing_extra("torch", "onnx", "making the local model's ONNX file")
    if not target.is_file():
        for module in ("torch", "transformers", "onnx", "onnxruntime"):
            try:
                __import__(module)
            except ImportError:
                raise missing_extra(module, "onnx", "making the local model's ONNX file") from None
    return make_once(target, lambda out: export_fused(local_model_path(), out))
