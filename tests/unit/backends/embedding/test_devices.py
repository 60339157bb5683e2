"""Where an embedding worker runs its model: the choice from the facts (GPU ids given by Ray,
ONNX Runtime's providers, torch CUDA) and the placement.

There is no GPU here. Nothing pretends there is one: the choice is a pure function of the facts,
tested for each case; ONNX Runtime is asked for its CUDA provider for real and falls back to the
CPU, which the embedder then reports. Running a model on a real GPU is not tested.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from indexfoundry.backends.embedding.devices import (
    CPU,
    CUDA_PROVIDER,
    Device,
    actual_onnx_device,
    choose_device,
    detect_device,
    place,
    session_providers,
    torch_device,
)
from indexfoundry.backends.embedding.hashing import HashEmbedder

ONNX_CUDA = [CUDA_PROVIDER, "CPUExecutionProvider"]
ONNX_CPU = ["AzureExecutionProvider", "CPUExecutionProvider"]


def test_a_worker_given_no_gpu_stays_on_the_cpu_whatever_is_installed():
    assert choose_device([], ONNX_CUDA, torch_cuda=True) == CPU
    assert choose_device([], ONNX_CUDA, torch_cuda=True).label == "cpu"


def test_a_worker_given_a_gpu_uses_onnx_runtimes_cuda_provider_first():
    device = choose_device([3], ONNX_CUDA, torch_cuda=True)
    # Ray makes the given GPU the only visible one: it is CUDA device 0 inside the worker.
    assert (device.kind, device.index, device.runtime) == ("cuda", 0, "onnxruntime")
    assert device.label == "cuda:0/onnxruntime"
    assert session_providers(device) == [(CUDA_PROVIDER, {"device_id": 0}), "CPUExecutionProvider"]


def test_without_onnx_cuda_a_gpu_worker_uses_torch_cuda():
    device = choose_device(["1"], ONNX_CPU, torch_cuda=True)
    assert device.label == "cuda:0/torch"
    assert torch_device(device) == "cuda:0"
    assert session_providers(device) == ["CPUExecutionProvider"]


def test_a_gpu_worker_that_can_use_neither_runs_on_the_cpu_and_says_why():
    device = choose_device([0], ONNX_CPU, torch_cuda=False)
    assert device.kind == "cpu" and torch_device(device) == "cpu"
    assert "onnxruntime-gpu" in device.reason and "GPU 0" in device.reason


def test_detecting_a_cpu_workers_device_looks_at_nothing_and_torch_only_without_onnx_cuda():
    def fail() -> bool:
        raise AssertionError("must not be asked")

    assert detect_device([], onnx_providers=fail, torch_cuda=fail) == CPU  # type: ignore[arg-type]
    assert detect_device([0], onnx_providers=lambda: ONNX_CUDA, torch_cuda=fail).runtime == "onnxruntime"
    assert detect_device([0], onnx_providers=lambda: ONNX_CPU, torch_cuda=lambda: True).runtime == "torch"


def test_on_a_machine_without_a_gpu_the_real_facts_give_the_cpu():
    import onnxruntime

    if CUDA_PROVIDER in onnxruntime.get_available_providers():
        pytest.skip("this ONNX Runtime has the CUDA provider")
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("torch has CUDA here")
    device = detect_device([0])  # as if Ray had given GPU 0: the real providers and torch decide
    assert device.kind == "cpu" and "onnxruntime-gpu" in device.reason


def test_an_embedder_without_a_model_is_not_placed_on_a_gpu():
    embedder = HashEmbedder(8)
    assert place(embedder, CPU) == (embedder, CPU)
    placed, where = place(embedder, Device("cuda", 0, "onnxruntime"))
    assert placed is embedder and where.kind == "cpu" and "HashEmbedder" in where.reason


def test_onnx_runtime_falling_back_to_the_cpu_is_reported_as_the_cpu(tmp_path: Path):
    onnx = pytest.importorskip("onnx")
    import onnxruntime
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])],
        "identity",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
    )
    path = tmp_path / "identity.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), str(path))
    wanted = Device("cuda", 0, "onnxruntime", "GPU 0: ONNX Runtime CUDAExecutionProvider")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ONNX Runtime warns that the provider is not available
        session = onnxruntime.InferenceSession(str(path), providers=session_providers(wanted))
    actual = actual_onnx_device(session, wanted)
    assert actual.kind == "cpu" and "did not take" in actual.reason
    assert actual_onnx_device(session, CPU) == CPU
