"""com.microsoft DynamicQuantizeLSTM's recurrence on the integers (core/rnn_gemv.hpp, stop 26).

The ONNX frontend dequantizes the weights and records R's row scales in the sequence's rt_info;
where the weights hold exactly those multiples, the CPU's batch-1 recurrence (PanelGemv) quantizes
X once and h at each step to u8 as ONNX Runtime does (DynamicQuantizeLinear's rule) and
multiplies on the integers (vpdpbusd with AVX512_VNNI, vpmaddwd on s16 pairs with AVX2 only: the
same sums, checked bit for bit). Checked against ONNX Runtime's own DynamicQuantizeLSTM
(closer than the f32 recurrence on the dequantized weights, which OPFORGE_CPU_RNN_INT8=0 runs),
1 vs 2 threads, the exactness guard, what the path refuses, and an IR round trip.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import opforge
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto as T  # noqa: E402
from onnx import helper as h  # noqa: E402
from onnx import numpy_helper as nh  # noqa: E402
from opforge.opset._rnn import DYNAMIC_QUANTIZED_RECURRENCE  # noqa: E402
from opforge_cpu._loader import load_core  # noqa: E402

#: the host's ISA as oneDNN sees it (ONEDNN_MAX_CPU_ISA caps it; host_isa.hpp): AVX512_VNNI runs
#: vpdpbusd on s8 quads, AVX2 without it vpmaddwd on s16 pairs (the same integer sums)
ISA = str(load_core().cpu_isa())
VNNI = ISA.startswith("avx512_core_")
INT8 = VNNI or ISA.startswith(("avx2", "avx512"))
KIND = "rnn_gemm:panel_gemv_" + ("avx512_vnni_u8s8" if VNNI else "avx2_u8s8_s16")
SEQ, INPUT, HIDDEN = 12, 16, 32


def _model(path: Path, direction: str, batch: int, dtype: Any = np.int8, zero_point: int = 0,
           per_column: bool = False, seed: int = 5) -> Path:
    rng = np.random.default_rng(seed)
    nd = 2 if direction == "bidirectional" else 1
    cols = 4 * HIDDEN
    info = np.iinfo(dtype)
    shape = (nd, cols) if per_column else (nd,)

    def weights(rows: int) -> np.ndarray:
        lo = max(int(info.min), zero_point - 127)
        hi = min(int(info.max), zero_point + 127)
        return rng.integers(lo, hi + 1, (nd, rows, cols)).astype(dtype)

    inits = {"W": weights(INPUT), "R": weights(HIDDEN),
             "B": (0.1 * rng.standard_normal((nd, 8 * HIDDEN))).astype(np.float32),
             "ws": (0.003 + 0.002 * rng.random(shape)).astype(np.float32), "wz": np.full(shape, zero_point, dtype),
             "rs": (0.002 + 0.002 * rng.random(shape)).astype(np.float32), "rz": np.full(shape, zero_point, dtype)}
    node = h.make_node("DynamicQuantizeLSTM", ["X", "W", "R", "B", "", "", "", "", "ws", "wz", "rs", "rz"],
                       ["Y", "Y_h", "Y_c"], domain="com.microsoft", name="qlstm", hidden_size=HIDDEN,
                       direction=direction)
    graph = h.make_graph([node], "g", [h.make_tensor_value_info("X", T.FLOAT, [SEQ, batch, INPUT])],
                         [h.make_tensor_value_info(o, T.FLOAT, None) for o in ("Y", "Y_h", "Y_c")],
                         [nh.from_array(v, k) for k, v in inits.items()])
    onnx.save(h.make_model(graph, opset_imports=[h.make_opsetid("", 17), h.make_opsetid("com.microsoft", 1)]),
              str(path))
    return path


def _run(model: Any, x: np.ndarray, threads: int = 1) -> tuple[list[np.ndarray], list[str]]:
    core = opforge.Core()
    cm = core.compile_model(model if not isinstance(model, Path) else core.read_model(str(model)), "CPU",
                            {"INFERENCE_NUM_THREADS": threads, "ENABLE_PROFILING": True,
                             "INFERENCE_PRECISION_HINT": "f32"})
    req = cm.create_infer_request()
    outs = [np.array(v) for v in req.infer({"X": x}).values()]
    return outs, [p.exec_type for p in req.get_profiling_info() if p.node_type == "LSTMSequence"]


def _ort(path: Path, x: np.ndarray) -> list[np.ndarray]:
    """ONNX Runtime on one thread: with more, it splits a batch among its threads and quantizes
    each part's h on its own, so its own output moves with its thread count (2.2e-3 of 0.88 on
    the batch-2 case); opforge quantizes the batch's h together at any thread count, as ONNX
    Runtime does on one thread."""
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"]).run(None, {"X": x})


CASES = [("forward", 1, {}), ("reverse", 1, {}), ("bidirectional", 1, {}), ("bidirectional", 2, {}),
         ("forward", 1, {"per_column": True}), ("bidirectional", 1, {"dtype": np.uint8, "zero_point": 128}),
         ("forward", 1, {"zero_point": 3})]


@pytest.mark.skipif(not INT8, reason="the int8 recurrence needs AVX2")
@pytest.mark.parametrize(("direction", "batch", "kw"), CASES, ids=lambda c: str(c))
def test_integer_recurrence_tracks_onnxruntime(tmp_path: Path, direction: str, batch: int, kw: dict[str, Any]) -> None:
    path = _model(tmp_path / "m.onnx", direction, batch, **kw)
    x = np.random.default_rng(9).standard_normal((SEQ, batch, INPUT)).astype(np.float32)
    ref = _ort(path, x)
    one, kinds = _run(path, x, 1)
    two, _ = _run(path, x, 2)
    assert kinds == [KIND], kinds
    for a, b, r in zip(one, two, ref, strict=True):
        np.testing.assert_array_equal(a, b)
        # ONNX Runtime's arithmetic: within float rounding of its output (these cases measure
        # <= 2e-7 of the range), where the f32 recurrence on the dequantized weights is ~1 % off
        top = float(np.abs(r).max())
        assert float(np.abs(a - r).max()) <= 1e-5 * top, (float(np.abs(a - r).max()), top)


@pytest.mark.skipif(not INT8, reason="the int8 recurrence needs AVX2")
def test_switch_off_runs_the_dequantized_f32_recurrence(tmp_path: Path) -> None:
    path = _model(tmp_path / "m.onnx", "bidirectional", 1)
    x = np.random.default_rng(3).standard_normal((SEQ, 1, INPUT)).astype(np.float32)
    code = ("import sys, numpy as np, opforge\n"
            "c = opforge.Core(); cm = c.compile_model(c.read_model(sys.argv[1]), 'CPU', "
            "{'ENABLE_PROFILING': True, 'INFERENCE_PRECISION_HINT': 'f32'})\n"
            "r = cm.create_infer_request(); y = np.array(r.infer({'X': np.load(sys.argv[2])})[0])\n"
            "np.save(sys.argv[3], y)\n"
            "print([p.exec_type for p in r.get_profiling_info() if p.node_type == 'LSTMSequence'])\n")
    np.save(tmp_path / "x.npy", x)
    env = dict(os.environ, OPFORGE_CPU_RNN_INT8="0")
    done = subprocess.run([sys.executable, "-c", code, str(path), str(tmp_path / "x.npy"), str(tmp_path / "y.npy")],
                          env=env, capture_output=True, text=True, check=True)
    assert "u8s8" not in done.stdout and "panel_gemv" in done.stdout, done.stdout
    on, _ = _run(path, x)
    off = np.load(tmp_path / "y.npy")
    ref = _ort(path, x)[0]
    # both right; the integer recurrence is the one closer to ONNX Runtime's op
    assert np.abs(on[0] - ref).max() < np.abs(off - ref).max()


def test_scales_that_do_not_reproduce_r_leave_the_f32_recurrence(tmp_path: Path) -> None:
    """The rt_info is a claim about R; the kernel checks it (f32(q * scale) == R exactly) and runs
    f32 where it does not hold: a plain LSTM given made-up scales computes as before."""
    rng = np.random.default_rng(4)
    w = (0.3 * rng.standard_normal((1, 4 * HIDDEN, INPUT))).astype(np.float32)
    r = (0.3 * rng.standard_normal((1, 4 * HIDDEN, HIDDEN))).astype(np.float32)
    node = h.make_node("LSTM", ["X", "W", "R"], ["Y"], hidden_size=HIDDEN)
    graph = h.make_graph([node], "g", [h.make_tensor_value_info("X", T.FLOAT, [SEQ, 1, INPUT])],
                         [h.make_tensor_value_info("Y", T.FLOAT, None)], [nh.from_array(w, "W"), nh.from_array(r, "R")])
    path = tmp_path / "lstm.onnx"
    onnx.save(h.make_model(graph, opset_imports=[h.make_opsetid("", 17)]), str(path))
    x = rng.standard_normal((SEQ, 1, INPUT)).astype(np.float32)
    plain, plain_kinds = _run(path, x)
    for claim in ([0.01] * (4 * HIDDEN), [0.01] * 3, "not numbers", [float("nan")] * (4 * HIDDEN)):
        model = opforge.Core().read_model(str(path))
        seq = next(n for n in model.get_ordered_ops() if n.type_name == "LSTMSequence")
        seq.rt_info[DYNAMIC_QUANTIZED_RECURRENCE] = claim
        got, kinds = _run(model, x)
        assert kinds == plain_kinds and "u8s8" not in kinds[0], (claim, kinds)
        np.testing.assert_array_equal(got[0], plain[0])


@pytest.mark.skipif(not INT8, reason="the int8 recurrence needs AVX2")
def test_the_scales_survive_an_ir_round_trip(tmp_path: Path) -> None:
    path = _model(tmp_path / "m.onnx", "bidirectional", 1)
    core = opforge.Core()
    model = core.read_model(str(path))
    opforge.save_model(model, str(tmp_path / "m.xml"))
    x = np.random.default_rng(1).standard_normal((SEQ, 1, INPUT)).astype(np.float32)
    direct, kinds = _run(path, x)
    again, kinds_ir = _run(tmp_path / "m.xml", x)
    assert kinds_ir == kinds == [KIND], (kinds, kinds_ir)
    for a, b in zip(direct, again, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.skipif(not INT8, reason="the int8 recurrence needs AVX2")
@pytest.mark.parametrize("bad", [np.nan, np.inf, 0.0])
def test_non_finite_and_zero_inputs_do_not_crash(tmp_path: Path, bad: float) -> None:
    path = _model(tmp_path / "m.onnx", "forward", 1)
    x = np.random.default_rng(2).standard_normal((SEQ, 1, INPUT)).astype(np.float32)
    x[3] = bad
    if bad == 0.0:
        x[:] = 0.0  # an all-zero h at every step: scale 1, zero point 0
    got, kinds = _run(path, x)
    assert kinds == [KIND], kinds
    assert got[0].shape == (SEQ, 1, 1, HIDDEN)
    if bad == 0.0:
        np.testing.assert_allclose(got[0], _ort(path, x)[0], rtol=0, atol=1e-5)


@pytest.mark.skipif(not VNNI, reason="compares the AVX512_VNNI kernel with the AVX2 one")
def test_the_avx2_kernel_gives_the_same_bits(tmp_path: Path) -> None:
    """ONEDNN_MAX_CPU_ISA=AVX2 (an AVX2 host, as host_isa.hpp emulates it) runs the s16 kernel:
    the same integer sums and the same f32 arithmetic after them, so the same outputs."""
    path = _model(tmp_path / "m.onnx", "bidirectional", 2)
    x = np.random.default_rng(8).standard_normal((SEQ, 2, INPUT)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    code = ("import sys, numpy as np, opforge\n"
            "c = opforge.Core(); cm = c.compile_model(c.read_model(sys.argv[1]), 'CPU', "
            "{'ENABLE_PROFILING': True, 'INFERENCE_PRECISION_HINT': 'f32'})\n"
            "r = cm.create_infer_request(); np.save(sys.argv[3], np.array(r.infer({'X': np.load(sys.argv[2])})[0]))\n"
            "print([p.exec_type for p in r.get_profiling_info() if p.node_type == 'LSTMSequence'])\n")
    env = dict(os.environ, ONEDNN_MAX_CPU_ISA="AVX2")
    done = subprocess.run([sys.executable, "-c", code, str(path), str(tmp_path / "x.npy"), str(tmp_path / "y.npy")],
                          env=env, capture_output=True, text=True, check=True)
    assert "avx2_u8s8_s16" in done.stdout, done.stdout
    native, _ = _run(path, x)
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), native[0])
