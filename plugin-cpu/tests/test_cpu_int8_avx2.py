"""The int8 paths an AVX2 host runs since stop 23 (ONEDNN_MAX_CPU_ISA=AVX2 emulates one; each case
in a child process under the cap, as test_cpu_int8_no_vnni.py does):

- the byte tables of QuantizedConcat and QuantizedLookup (kernels/int8_layout.cpp, lookup_bytes)
  run 32 bytes at a time with pshufb (exec type ``table:avx2``) instead of one by one: the bytes
  of the scalar loop (OPFORGE_CPU_INT8_LOOKUP_AVX2=0, exec type ``table``) exactly, over every
  byte value and run lengths that leave every remainder of the 64- and 32-byte steps, and within
  one step of ONNX Runtime (the 7-bit reference of a host without VNNI, int8_testing);
- QuantizedMatMul asks oneDNN's gemm:jit for its weights K innermost (OPFORGE_CPU_INT8_MATMUL_KN=0:
  the plain [K, N]): the same bytes (integer sums, the same per-element requantization) for M = 1
  and M > 1, odd K and N.
Without the cap (this AVX-512 VBMI host) the tables run ``table:avx512`` and the switch changes
nothing."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

pytest.importorskip("onnxruntime.quantization")

from int8_testing import output_scale, quantize, run_child, save_model

CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    sys.path.insert(0, sys.argv[1])
    from int8_testing import output_scale, reference_model
    import onnxruntime as ort
    import opforge
    x = np.load(sys.argv[3])
    core = opforge.Core()
    compiled = core.compile_model(core.read_model(sys.argv[2]), "CPU", {"ENABLE_PROFILING": True})
    req = compiled.create_infer_request()
    got = np.asarray(req.infer({0: x})[0]).copy()
    again = np.asarray(req.infer({0: x})[0])
    np.testing.assert_array_equal(again, got)  # no state between runs
    np.save(sys.argv[4], got)
    from pathlib import Path
    sess = ort.InferenceSession(str(reference_model(Path(sys.argv[2]))), providers=["CPUExecutionProvider"])
    want = sess.run(None, {sess.get_inputs()[0].name: x})[0]
    steps = float(np.max(np.abs(got.astype(np.float64) - want), initial=0.0)) / output_scale(sys.argv[2])
    rows = [(r.node_type, r.exec_type) for r in req.get_profiling_info() if r.status != "OPTIMIZED_OUT"]
    print(json.dumps({"steps": steps, "rows": rows}))
""")


def _run(q: Path, x: np.ndarray, tmp_path: Path, isa: str | None, **switches: str) -> dict[str, object]:
    """Runs ``q`` on opforge in a child process (ONNX Runtime beside it for "steps")."""
    np.save(tmp_path / "x.npy", x)
    got = tmp_path / f"got_{q.stem}_{isa}_{'_'.join(f'{k}{v}' for k, v in switches.items())}.npy"
    res: dict[str, object] = run_child(CHILD, [str(Path(__file__).parent), str(q), str(tmp_path / "x.npy"), str(got)],
                                       isa, switches)
    res["got"] = np.load(got)
    return res


def _exec(res: dict[str, object], node_type: str) -> list[str]:
    return [e for t, e in res["rows"] if t == node_type]  # type: ignore[attr-defined]


def _inits(rng: np.random.Generator, **shapes: tuple[int, ...]) -> list[object]:
    return [numpy_helper.from_array((rng.standard_normal(s) * 0.2).astype(np.float32), n) for n, s in shapes.items()]


def _lookup_all_bytes(tmp_path: Path, n: int, dtype: str) -> tuple[Path, np.ndarray]:
    """QuantizeLinear -> (DequantizeLinear, Sigmoid, QuantizeLinear) -> DequantizeLinear on a
    [1, n] input whose bytes take every value 0..255 (-128..127) in turn: one QuantizedLookup of n
    bytes, every table entry read."""
    zp_t = TensorProto.UINT8 if dtype == "u8" else TensorProto.INT8
    lo = 0 if dtype == "u8" else -128
    s_in, z_in, s_out = 0.05, 7, 1.0 / 255
    inits: list[Any] = [helper.make_tensor("s_in", TensorProto.FLOAT, [], [s_in]), helper.make_tensor("z_in", zp_t, [], [z_in]),
             helper.make_tensor("s_out", TensorProto.FLOAT, [], [s_out]),
             helper.make_tensor("z_out", zp_t, [], [0 if dtype == "u8" else -128])]
    nodes = [helper.make_node("QuantizeLinear", ["x", "s_in", "z_in"], ["q"]),
             helper.make_node("DequantizeLinear", ["q", "s_in", "z_in"], ["d"]),
             helper.make_node("Sigmoid", ["d"], ["sg"]),
             helper.make_node("QuantizeLinear", ["sg", "s_out", "z_out"], ["q2"]),
             helper.make_node("DequantizeLinear", ["q2", "s_out", "z_out"], ["y"])]
    path = save_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, n])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, n])], inits, tmp_path / f"lut{n}{dtype}.onnx")
    codes = (np.arange(n) * 7 + 3) % 256 + lo  # every byte value once in each 256 (7 is odd)
    return path, ((codes - z_in) * s_in).astype(np.float32).reshape(1, n)


@pytest.mark.parametrize("dtype", ["u8", "i8"])
def test_lookup_gives_the_scalar_bytes_for_every_byte_and_length(tmp_path: Path, dtype: str) -> None:
    for n in (1, 17, 31, 32, 33, 63, 64, 65, 95, 97, 127, 256, 300, 1031):
        q, x = _lookup_all_bytes(tmp_path, n, dtype)
        on = _run(q, x, tmp_path, "AVX2")
        off = _run(q, x, tmp_path, "AVX2", OPFORGE_CPU_INT8_LOOKUP_AVX2="0")
        assert _exec(on, "QuantizedLookup") == ["table:avx2"], on["rows"]
        assert _exec(off, "QuantizedLookup") == ["table"], off["rows"]
        np.testing.assert_array_equal(on["got"], off["got"], err_msg=f"n={n}")
        assert float(on["steps"]) <= 1.0 + 1e-4, (n, on["steps"])  # type: ignore[arg-type]
    native = _run(q, x, tmp_path, None)
    assert _exec(native, "QuantizedLookup") == ["table:avx512"], native["rows"]
    np.testing.assert_array_equal(native["got"], on["got"])


@pytest.mark.parametrize(("ca", "cb", "axis"), [(1, 5, 1), (31, 33, 1), (64, 67, 1), (97, 32, 1), (6, 10, 2)])
def test_concat_tables_give_the_scalar_bytes(tmp_path: Path, ca: int, cb: int, axis: int) -> None:
    """SqueezeNet's fire module: a 1x1 and a 3x3 branch, each on its own scale, concatenated (the
    branch that is not on the output's grid through a table; channels-last, so each lookup is one
    branch's channels of a pixel: ``ca`` and ``cb`` bytes), read by a 1x1 convolution; along the
    height (axis 2) in the plain layout, one run of a branch's rows."""
    rng = np.random.default_rng(41)
    shape = (1, 8, 7, 9)
    c_cat = ca + cb if axis == 1 else ca
    nodes = [
        helper.make_node("Conv", ["x", "wa"], ["ca"]),
        helper.make_node("Relu", ["ca"], ["ra"]),
        helper.make_node("Conv", ["x", "wb"], ["cb"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["cb"], ["rb"]),
        helper.make_node("Concat", ["ra", "rb"], ["cat"], axis=axis),
        helper.make_node("Conv", ["cat", "wc"], ["y"]),
    ]
    inits = _inits(rng, wa=(ca, 8, 1, 1), wb=(cb if axis == 1 else ca, 8, 3, 3), wc=(12, c_cat, 1, 1))
    out_shape = [1, 12, 7, 9] if axis == 1 else [1, 12, 14, 9]
    src = save_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                     [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)], inits, tmp_path / "f32.onnx")
    q = quantize(src, tmp_path / "q.onnx", shape, True, "u8")
    x = np.random.default_rng(42).standard_normal(shape).astype(np.float32)
    on = _run(q, x, tmp_path, "AVX2")
    off = _run(q, x, tmp_path, "AVX2", OPFORGE_CPU_INT8_LOOKUP_AVX2="0")
    cat_on, cat_off = _exec(on, "QuantizedConcat"), _exec(off, "QuantizedConcat")
    assert len(cat_on) == 1 and cat_on[0].endswith("table:avx2"), on["rows"]
    assert len(cat_off) == 1 and cat_off[0].endswith("table"), off["rows"]
    np.testing.assert_array_equal(on["got"], off["got"])
    assert float(on["steps"]) <= 1.0 + 1e-4, on["steps"]  # type: ignore[arg-type]


@pytest.mark.parametrize(("m", "k", "n"), [(1, 200, 37), (1, 1000, 64), (5, 97, 130), (33, 64, 3)])
def test_matmul_weights_k_innermost_give_the_same_bytes(tmp_path: Path, m: int, k: int, n: int) -> None:
    rng = np.random.default_rng(43)
    w = (rng.standard_normal((k, n)) * 0.3).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["mm"]), helper.make_node("Relu", ["mm"], ["r"]),
             helper.make_node("MatMul", ["r", "w2"], ["y"])]
    w2 = (rng.standard_normal((n, 16)) * 0.3).astype(np.float32)
    src = save_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [m, k])],
                     [helper.make_tensor_value_info("y", TensorProto.FLOAT, [m, 16])],
                     [numpy_helper.from_array(w, "w"), numpy_helper.from_array(w2, "w2")], tmp_path / "mm.onnx")
    q = quantize(src, tmp_path / "mmq.onnx", (m, k), True, "u8")
    x = np.random.default_rng(44).standard_normal((m, k)).astype(np.float32)
    on = _run(q, x, tmp_path, "AVX2")
    off = _run(q, x, tmp_path, "AVX2", OPFORGE_CPU_INT8_MATMUL_KN="0")
    assert _exec(on, "QuantizedMatMul") and all(e.startswith("gemm") for e in _exec(on, "QuantizedMatMul")), on["rows"]
    np.testing.assert_array_equal(on["got"], off["got"])
    assert float(on["steps"]) <= 1.0 + 1e-4, on["steps"]  # type: ignore[arg-type]
    native_on, native_off = _run(q, x, tmp_path, None), _run(q, x, tmp_path, None, OPFORGE_CPU_INT8_MATMUL_KN="0")
    np.testing.assert_array_equal(native_on["got"], native_off["got"])
    assert _exec(native_on, "QuantizedMatMul") == _exec(native_off, "QuantizedMatMul"), native_on["rows"]
    assert output_scale(q) > 0
