"""Row-wise int8 for an ONNX graph's weight MatMuls: each token is quantized on its own.

ONNX Runtime's dynamic quantization (``quantize_dynamic``) scales a MatMul's whole input tensor
at once, so a text's vector depends on the other texts (and the padding) of its batch. Here
every row of the input (one token's activations) gets its own scale and zero point, computed
from that row alone, so a token's result depends on nothing else in the batch: a padded,
batched run gives the same bits as the text alone at the same padded length.

One ``MatMul(X, W)`` with a constant ``W`` [K, N] becomes:

- weights: int8, symmetric, one scale per output column (``W ≈ Wq * w_scale``);
- activations, once per distinct ``X`` (the Q, K and V projections share theirs): per row,
  ``lo = min(0, min(x))``, ``hi = max(0, max(x))``, ``scale = (hi - lo) / 255``,
  ``zero = round(-lo / scale)``, ``xq = saturate(round(x / scale) + zero)`` as uint8;
- ``Y = (MatMulIntegerToFloat(xq, Wq) - zero * colsum(Wq)) * scale * w_scale``, the zero-point
  correction done in float with the column sums of ``Wq`` folded into a constant.

The integer products accumulate in int32, exactly. uint8 activations times int8 weights is the
pair x86 VNNI (``VPDPBUSD``) multiplies natively. Without VNNI, ONNX Runtime's AVX2 kernel adds
pairs of uint8 x int8 products in int16 with saturation (``VPMADDUBSW``), which 8-bit weights can
overflow (255 x 127 x 2 > 32767); ``bits=7`` keeps weights within ±63 so that no pair can.
"""

from __future__ import annotations

from typing import Any

import numpy as np

_MS_DOMAIN = "com.microsoft"


def _quantize_weight(weight: np.ndarray, bits: int) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric per-column integers of ``weight`` [K, N] within ±(2**(bits-1) - 1), as int8,
    and their float32 scales [N]."""
    levels = float(2 ** (bits - 1) - 1)
    scale = (np.maximum(np.abs(weight).max(axis=0), 1e-12) / levels).astype(np.float32)
    quantized = np.clip(np.round(weight / scale), -levels, levels).astype(np.int8)
    return quantized, scale


def _opset(model: Any) -> int:
    return int(next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx")))


def _reduce(helper: Any, op: str, source: str, target: str, opset: int) -> Any:
    """ReduceMax / ReduceMin over the last axis, keeping it (axes: an input from opset 18)."""
    if opset >= 18:
        return helper.make_node(op, [source, "tq_axes"], [target], keepdims=1)
    return helper.make_node(op, [source], [target], axes=[-1], keepdims=1)


def quantize_rows(model: Any, bits: int = 8) -> int:
    """Rewrite, in place, every MatMul of ``model`` whose second input is a constant into
    row-wise uint8 activations x per-column ``bits``-bit weights (8 or 7); returns how many
    were rewritten."""
    if bits not in (7, 8):
        raise ValueError(f"weights are quantized to 8 or 7 bits, not {bits}")
    from onnx import helper, numpy_helper

    graph = model.graph
    opset = _opset(model)
    weights = {init.name: init for init in graph.initializer}
    constants: dict[str, np.ndarray] = {
        "tq_eps": np.array(1e-12, np.float32),
        "tq_zero": np.array(0.0, np.float32),
        "tq_one": np.array(1.0, np.float32),
        "tq_255": np.array(255.0, np.float32),
        "tq_inv255": np.array(1.0 / 255.0, np.float32),
        "tq_zp": np.array(0, np.uint8),
        "tq_axes": np.array([-1], np.int64),
    }
    added = [numpy_helper.from_array(value, name) for name, value in constants.items()]
    rows: dict[str, tuple[str, str, str]] = {}  # input -> (uint8 rows, scale, zero * scale)
    nodes: list[Any] = []
    count = 0
    for node in graph.node:
        if node.op_type != "MatMul" or node.domain not in ("", "ai.onnx") or node.input[1] not in weights:
            nodes.append(node)
            continue
        source = node.input[0]
        if source not in rows:
            p = f"tq{len(rows)}_"
            make = helper.make_node
            nodes += [
                _reduce(helper, "ReduceMax", source, p + "max", opset),
                _reduce(helper, "ReduceMin", source, p + "min", opset),
                make("Max", [p + "max", "tq_zero"], [p + "hi"]),
                make("Min", [p + "min", "tq_zero"], [p + "lo"]),
                make("Sub", [p + "hi", p + "lo"], [p + "span"]),
                make("Max", [p + "span", "tq_eps"], [p + "range"]),
                make("Mul", [p + "range", "tq_inv255"], [p + "scale"]),
                make("Div", ["tq_255", p + "range"], [p + "inverse"]),
                make("Mul", [p + "lo", p + "inverse"], [p + "lo_steps"]),
                make("Neg", [p + "lo_steps"], [p + "zero_raw"]),
                make("Round", [p + "zero_raw"], [p + "zero"]),
                make("Mul", [source, p + "inverse"], [p + "steps"]),
                make("Add", [p + "steps", p + "zero"], [p + "shifted"]),
                make("QuantizeLinear", [p + "shifted", "tq_one", "tq_zp"], [p + "q"]),
                make("Mul", [p + "zero", p + "scale"], [p + "offset"]),
            ]
            rows[source] = (p + "q", p + "scale", p + "offset")
        quantized_rows, scale, offset = rows[source]
        weight_q, weight_scale = _quantize_weight(
            numpy_helper.to_array(weights[node.input[1]]).astype(np.float32), bits
        )
        column_sums = (weight_q.astype(np.int64).sum(axis=0) * weight_scale).astype(np.float32)
        m = f"tm{count}_"
        count += 1
        added += [
            numpy_helper.from_array(weight_q, m + "w"),
            numpy_helper.from_array(weight_scale, m + "w_scale"),
            numpy_helper.from_array(column_sums, m + "w_sums"),
        ]
        nodes += [
            helper.make_node(
                "MatMulIntegerToFloat", [quantized_rows, m + "w", "tq_one", m + "w_scale"], [m + "y"], domain=_MS_DOMAIN
            ),
            helper.make_node("Mul", [m + "y", scale], [m + "scaled"]),
            helper.make_node("Mul", [offset, m + "w_sums"], [m + "correction"]),
            helper.make_node("Sub", [m + "scaled", m + "correction"], [node.output[0]]),
        ]
    used = {name for n in nodes for name in n.input}
    kept = [init for init in graph.initializer if init.name in used]
    del graph.node[:]
    graph.node.extend(nodes)
    del graph.initializer[:]
    graph.initializer.extend(kept + [init for init in added if init.name in used])
    if not any(o.domain == _MS_DOMAIN for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid(_MS_DOMAIN, 1))
    return count
