"""Hosts without VNNI (plain AVX2, AVX-512 before Cascade Lake): oneDNN's u8 x s8 kernels add
products in pairs in saturating int16 there, so a convolution with full-range int8 weights
(ONNX Runtime's default) is kept in f32 rather than run wrong; 7-bit weights (reduce_range) still
run in int8. Each case runs in a child process with ONEDNN_MAX_CPU_ISA set, as such a host."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

pytest.importorskip("onnxruntime.quantization")

from int8_testing import output_scale, quantize, save_model

CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    sys.path.insert(0, sys.argv[1])
    from int8_testing import run_both
    x = np.load(sys.argv[3])
    got, want, rows = run_both(sys.argv[2], x)
    ran = [r.node_type for r in rows if r.status != "OPTIMIZED_OUT"]
    print(json.dumps({"steps": float(np.max(np.abs(got.astype(np.float64) - want)) / float(sys.argv[4])), "ran": ran}))
""")


def _conv_block(tmp_path: Path, weight_scale: float) -> tuple[Path, np.ndarray]:
    """Two 3x3 convolutions with ReLU, quantized by ONNX Runtime (u8 activations, s8 per-channel
    weights: each channel's largest weight becomes +-127)."""
    rng = np.random.default_rng(5)
    shape = (1, 32, 12, 12)
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2"], ["y"], pads=[1, 1, 1, 1])]
    inits = [numpy_helper.from_array((rng.standard_normal(s) * weight_scale).astype(np.float32), n)
             for n, s in (("w1", (32, 32, 3, 3)), ("w2", (16, 32, 3, 3)))]
    src = save_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                     [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 12, 12])], inits, tmp_path / "f32.onnx")
    q = quantize(src, tmp_path / "q.onnx", shape, True, "u8")
    # large positive activations: the u8 values reach 255, where pairs saturate first
    x = np.abs(np.random.default_rng(6).standard_normal(shape)).astype(np.float32) * 3
    return q, x


def _run(q: Path, x: np.ndarray, tmp_path: Path, isa: str | None) -> dict[str, object]:
    np.save(tmp_path / "x.npy", x)
    env = dict(os.environ)
    env.pop("ONEDNN_MAX_CPU_ISA", None)
    if isa:
        env["ONEDNN_MAX_CPU_ISA"] = isa
    done = subprocess.run([sys.executable, "-c", CHILD, str(Path(__file__).parent), str(q), str(tmp_path / "x.npy"),
                           str(output_scale(q))], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_full_range_weights_stay_f32_without_vnni_and_agree_with_onnx_runtime(tmp_path: Path) -> None:
    q, x = _conv_block(tmp_path, 0.2)
    res = _run(q, x, tmp_path, "AVX2")
    assert "QuantizedConvolution" not in res["ran"], res["ran"]  # type: ignore[operator]
    assert float(res["steps"]) <= 1.0 + 1e-4, res  # type: ignore[arg-type]


def test_with_vnni_the_same_model_runs_in_int8(tmp_path: Path) -> None:
    q, x = _conv_block(tmp_path, 0.2)
    res = _run(q, x, tmp_path, "AVX2_VNNI")
    assert "QuantizedConvolution" in res["ran"], res["ran"]  # type: ignore[operator]
    assert float(res["steps"]) <= 1.0 + 1e-4, res  # type: ignore[arg-type]
