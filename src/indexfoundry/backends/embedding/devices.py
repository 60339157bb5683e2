"""Which device an embedding worker runs its model on, and placing the model there.

A worker that was given GPUs (a Ray actor with ``execution.num_gpus`` > 0: Ray sets
``CUDA_VISIBLE_DEVICES`` to them, so the first one is CUDA device 0 in the worker) runs the
model there: under ONNX Runtime's ``CUDAExecutionProvider`` when this ONNX Runtime has it
(package ``onnxruntime-gpu``), else under torch CUDA (the model's sentence-transformers
backend). A worker given no GPU stays on the CPU path without importing torch. A worker given a
GPU it cannot use runs on the CPU and says why (``Device.reason``): the manifest records which
device every worker ran.

``choose_device`` is a pure function of the facts (GPU ids, ONNX Runtime providers, torch CUDA)
so the choice is tested without a GPU; ``detect_device`` gathers the facts in the worker.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

CUDA_PROVIDER = "CUDAExecutionProvider"
CPU_PROVIDER = "CPUExecutionProvider"


@dataclass(frozen=True)
class Device:
    """Where a worker's model runs: ``cpu`` or ``cuda`` (device ``index`` as the worker sees it)
    under ``runtime`` (``onnxruntime`` or ``torch``; ``None``: the embedder's own CPU path)."""

    kind: Literal["cpu", "cuda"]
    index: int | None = None
    runtime: Literal["onnxruntime", "torch"] | None = None
    reason: str = ""

    @property
    def label(self) -> str:
        """``cpu`` or ``cuda:0/onnxruntime`` (what the manifest records)."""
        return "cpu" if self.kind == "cpu" else f"cuda:{self.index}/{self.runtime}"


CPU = Device("cpu", reason="no GPU was given to this worker")


def choose_device(gpu_ids: Sequence[int | str], onnx_providers: Sequence[str], torch_cuda: bool) -> Device:
    """The device for a worker given ``gpu_ids`` (Ray's ids; empty: a CPU worker).

    ONNX Runtime's CUDA provider first, then torch CUDA, else the CPU with the reason."""
    if not gpu_ids:
        return CPU
    given = ",".join(str(g) for g in gpu_ids)
    if CUDA_PROVIDER in onnx_providers:
        return Device("cuda", 0, "onnxruntime", f"GPU {given}: ONNX Runtime {CUDA_PROVIDER}")
    if torch_cuda:
        return Device("cuda", 0, "torch", f"GPU {given}: torch CUDA (ONNX Runtime has no {CUDA_PROVIDER})")
    return Device(
        "cpu",
        reason=f"GPU {given} was given, but ONNX Runtime has no {CUDA_PROVIDER} (install onnxruntime-gpu) "
        "and torch has no CUDA: running on the CPU",
    )


def _onnx_providers() -> list[str]:
    try:
        import onnxruntime
    except ImportError:
        return []
    return list(onnxruntime.get_available_providers())


def _torch_cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def detect_device(
    gpu_ids: Sequence[int | str],
    onnx_providers: Callable[[], list[str]] = _onnx_providers,
    torch_cuda: Callable[[], bool] = _torch_cuda,
) -> Device:
    """``choose_device`` over this process's facts (nothing is imported for a CPU worker, and
    torch only when ONNX Runtime has no CUDA provider)."""
    if not gpu_ids:
        return CPU
    providers = onnx_providers()
    return choose_device(gpu_ids, providers, CUDA_PROVIDER not in providers and torch_cuda())


def session_providers(device: Device) -> list[Any]:
    """ONNX Runtime's provider list for ``device`` (CPU last: ops CUDA lacks fall back to it)."""
    if device.kind == "cuda" and device.runtime == "onnxruntime":
        return [(CUDA_PROVIDER, {"device_id": device.index or 0}), CPU_PROVIDER]
    return [CPU_PROVIDER]


def torch_device(device: Device) -> str:
    """torch's name for ``device`` (``cuda:0`` or ``cpu``)."""
    return f"cuda:{device.index or 0}" if device.kind == "cuda" and device.runtime == "torch" else "cpu"


def place(embedder: Any, device: Device) -> tuple[Any, Device]:
    """``embedder`` on ``device`` and the device it really runs on.

    Embedders with a model to place have ``on_device(device) -> (embedder, device)``; the
    others (hash, API providers) run as they are and are reported on the CPU path."""
    if device.kind == "cpu":
        return embedder, device
    method = getattr(embedder, "on_device", None)
    if not callable(method):
        return embedder, Device("cpu", reason=f"{type(embedder).__name__} has no model to place on a GPU")
    placed, where = method(device)
    return placed, where


def actual_onnx_device(session: Any, wanted: Device) -> Device:
    """The device an ONNX Runtime session really runs on (it falls back to the CPU silently)."""
    providers: list[str] = []
    with contextlib.suppress(Exception):
        providers = list(session.get_providers())
    if wanted.kind == "cuda" and providers[:1] == [CUDA_PROVIDER]:
        return wanted
    if wanted.kind == "cuda":
        return Device("cpu", reason=f"ONNX Runtime did not take {CUDA_PROVIDER} (session providers: {providers})")
    return wanted
