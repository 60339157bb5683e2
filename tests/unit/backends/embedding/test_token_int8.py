"""Row-wise int8 MatMuls (``token_int8.quantize_rows``) on a small ONNX graph run by ONNX Runtime.

The graph is two weight MatMuls on one input (the way Q, K and V share theirs) and a third on
an intermediate, with random weights; no model is loaded.
"""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

from indexfoundry.backends.embedding.onnx_fused import weight_bits
from indexfoundry.backends.embedding.token_int8 import quantize_rows

K, N = 64, 48


def graph(seed: int = 0) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)
    w1, w2 = rng.normal(size=(K, N)).astype(np.float32), rng.normal(size=(K, N)).astype(np.float32)
    w3 = rng.normal(size=(N, N)).astype(np.float32)
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["a"]),
        helper.make_node("MatMul", ["x", "w2"], ["b"]),
        helper.make_node("Relu", ["a"], ["r"]),
        helper.make_node("MatMul", ["r", "w3"], ["c"]),
        helper.make_node("Add", ["b", "c"], ["y"]),
    ]
    g = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", K])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "seq", N])],
        [numpy_helper.from_array(w, name) for w, name in ((w1, "w1"), (w2, "w2"), (w3, "w3"))],
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def run(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    session = onnxruntime.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return np.asarray(session.run(None, {"x": x})[0])


def inputs(batch: int = 3, seq: int = 5, seed: int = 1) -> np.ndarray:
    x = np.random.default_rng(seed).normal(size=(batch, seq, K)).astype(np.float32)
    x[1] *= 40.0  # one text with much larger activations than the others
    x[2, :, : K // 2] += 3.0  # and one whose rows are far from centred on zero
    return x


def test_every_weight_matmul_is_rewritten_and_the_float_weights_are_gone():
    model = graph()
    assert quantize_rows(model) == 3
    ops = [n.op_type for n in model.graph.node]
    assert "MatMul" not in ops and ops.count("MatMulIntegerToFloat") == 3
    # One quantization per distinct input: x (shared by two MatMuls) and r.
    assert ops.count("QuantizeLinear") == 2
    assert {i.name for i in model.graph.initializer}.isdisjoint({"w1", "w2", "w3"})


def test_a_rows_result_does_not_depend_on_the_other_rows_of_the_batch():
    model = graph()
    quantize_rows(model)
    x = inputs()
    together = run(model, x)
    for b in range(x.shape[0]):
        alone = run(model, x[b : b + 1])
        assert alone.tobytes() == together[b : b + 1].tobytes()
        for s in range(x.shape[1]):
            assert run(model, x[b : b + 1, s : s + 1]).tobytes() == together[b : b + 1, s : s + 1].tobytes()


def test_the_result_stays_close_to_fp32_even_for_rows_of_very_different_scales():
    # With the weight bits the product uses on this CPU (``weight_bits``): 8 with VNNI; without
    # it 7, since ONNX Runtime's AVX2 kernel saturates int16 pair sums of 8-bit weights (here that
    # is a relative error of 0.23). A 7-bit weight has twice the step of an 8-bit one.
    bits = weight_bits()
    reference_model, model = graph(), graph()
    quantize_rows(model, bits)
    x = inputs()
    expected, got = run(reference_model, x), run(model, x)
    error = np.linalg.norm(got - expected, axis=-1) / np.linalg.norm(expected, axis=-1)
    assert float(error.max()) < (0.03 if bits == 8 else 0.04)


def test_seven_bit_weights_stay_within_63_and_eight_bit_ones_use_127():
    for bits, levels in ((7, 63), (8, 127)):
        model = graph()
        quantize_rows(model, bits)
        quantized = [numpy_helper.to_array(i) for i in model.graph.initializer if i.data_type == TensorProto.INT8]
        assert len(quantized) == 3
        assert max(int(np.abs(q.astype(np.int32)).max()) for q in quantized) == levels


def test_other_widths_are_refused():
    with pytest.raises(ValueError):
        quantize_rows(graph(), 4)
