"""INFERENCE_PRECISION_HINT=bf16 on CPU: convolutions and dense MatMuls compute in bf16 (f32
accumulation and output) where the host has bf16 arithmetic, and the request is refused elsewhere."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from typing import Any

import numpy as np
import opforge
import pytest
from cpu_testing import const, param, rand
from opforge.graph import Model
from opforge_cpu._loader import load_core

NATIVE_BF16 = bool(load_core().native_bf16())
needs_bf16 = pytest.mark.skipif(not NATIVE_BF16, reason="this host has no bf16 arithmetic (AVX512_BF16/AMX)")


def to_bf16(a: np.ndarray) -> np.ndarray:
    """f32 -> nearest bf16 (ties to even), returned as f32: what oneDNN's f32->bf16 reorder does."""
    bits = a.astype(np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.astype(np.uint32).view(np.float32)


def conv2d(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    """3x3, stride 1, pad 1 convolution in f64 (the exact sum of the given operands)."""
    n, _, h, wd = x.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    y = np.zeros((n, w.shape[0], h, wd))
    for i in range(3):
        for j in range(3):
            y += np.einsum("nchw,oc->nohw", xp[:, :, i:i + h, j:j + wd], w[:, :, i, j].astype(np.float64))
    return y + b.reshape(1, -1, 1, 1)


def conv_relu() -> tuple[Model, np.ndarray, np.ndarray, np.ndarray]:
    x = param("x", [1, 32, 12, 12])
    w, b = rand((64, 32, 3, 3), seed=1) * 0.1, rand((64,), seed=2) * 0.1
    y = opforge.op("Convolution", x, const(w), strides=[1, 1], pads_begin=[1, 1], pads_end=[1, 1],
                   dilations=[1, 1], name="conv")
    y = opforge.op("Add", y, const(b.reshape(1, 64, 1, 1)), name="bias")
    return Model([opforge.op("Relu", y, name="relu")], [x], name="conv_relu"), w, b, rand((1, 32, 12, 12), seed=3)


def dense() -> tuple[Model, np.ndarray, np.ndarray, np.ndarray]:
    x = param("x", [16, 256])
    w, b = rand((256, 128), seed=4) * 0.1, rand((128,), seed=5)
    y = opforge.op("Add", opforge.op("MatMul", x, const(w), name="fc"), const(b), name="bias")
    return Model([y], [x], name="dense"), w, b, rand((16, 256), seed=6)


def test_suite_default_is_pinned_to_f32_and_reported(core: Any) -> None:
    # the repository's conftest.py pins the default to f32 for the numeric tests
    assert os.environ.get("OPFORGE_CPU_DEFAULT_PRECISION") == "f32"
    model, _, _, x = dense()
    compiled = core.compile_model(model, "CPU")
    assert core.get_property("CPU", "INFERENCE_PRECISION_HINT") == "f32"
    assert compiled.get_property("INFERENCE_PRECISION_HINT") == "f32"
    # f16 is not implemented on CPU: it computes (and says it computes) in f32
    half = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f16"})
    assert half.get_property("INFERENCE_PRECISION_HINT") == "f32"
    np.testing.assert_array_equal(half([x])[0], compiled([x])[0])


# Prints the device's default, what a compile without a hint and one with f32 report, and whether
# the default compile's result is the f32 one (bit for bit) or differs by bf16 rounding.
DEFAULT_SCRIPT = textwrap.dedent("""
    import numpy as np, opforge
    from opforge.graph import Model
    rng = np.random.default_rng(0)
    x = opforge.op("Parameter", shape=[16, 256], element_type="f32", name="x")
    w = opforge.op("Constant", value=rng.standard_normal((256, 128)).astype(np.float32))
    m = Model([opforge.op("MatMul", x, w)], [x])
    feed = rng.standard_normal((16, 256)).astype(np.float32)
    core = opforge.Core()
    default, f32 = core.compile_model(m, "CPU"), core.compile_model(m, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    same = np.array_equal(default([feed])[0], f32([feed])[0])
    print("DEFAULT", core.get_property("CPU", "INFERENCE_PRECISION_HINT"),
          default.get_property("INFERENCE_PRECISION_HINT"), f32.get_property("INFERENCE_PRECISION_HINT"),
          "same" if same else "differs")
""")


def run_default_script(**env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if k not in ("OPFORGE_CPU_DEFAULT_PRECISION", "DNNL_MAX_CPU_ISA",
                                                               "ONEDNN_MAX_CPU_ISA")}
    out = subprocess.run([sys.executable, "-c", DEFAULT_SCRIPT], env={**clean, **env}, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return next(line for line in out.stdout.splitlines() if line.startswith("DEFAULT"))


@needs_bf16
def test_default_is_bf16_on_a_bf16_host() -> None:
    # no OPFORGE_CPU_DEFAULT_PRECISION: the host decides, as OpenVINO does; explicit f32 stays f32
    assert run_default_script() == "DEFAULT bf16 bf16 f32 differs"
    assert run_default_script(OPFORGE_CPU_DEFAULT_PRECISION="auto") == "DEFAULT bf16 bf16 f32 differs"


def test_default_is_f32_on_a_host_without_bf16() -> None:
    # ONEDNN_MAX_CPU_ISA caps what oneDNN reports (and the plugin's bf16 check asks oneDNN): an
    # AVX2 host, whatever this one is
    assert run_default_script(ONEDNN_MAX_CPU_ISA="AVX2") == "DEFAULT f32 f32 f32 same"


def test_default_precision_variable_pins_f32() -> None:
    assert run_default_script(OPFORGE_CPU_DEFAULT_PRECISION="F32") == "DEFAULT f32 f32 f32 same"


@pytest.mark.parametrize(("value", "env", "message"), [
    ("fp8", {}, "environment variable OPFORGE_CPU_DEFAULT_PRECISION='fp8' is not a precision of device CPU: "
                "expected auto, f32 or bf16"),
    ("bf16", {"ONEDNN_MAX_CPU_ISA": "AVX2"}, "environment variable OPFORGE_CPU_DEFAULT_PRECISION=bf16 needs a CPU "
                                              "with bf16 arithmetic"),
])
def test_bad_default_precision_variable_is_a_clear_error(value: str, env: dict[str, str], message: str) -> None:
    clean = {k: v for k, v in os.environ.items() if k != "OPFORGE_CPU_DEFAULT_PRECISION"}
    script = ("import opforge\ntry:\n    opforge.Core().get_property('CPU', 'INFERENCE_PRECISION_HINT')\n"
              "except opforge.errors.OpforgeError as err:\n    print('ERROR', type(err).__name__, err)\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                         env={**clean, **env, "OPFORGE_CPU_DEFAULT_PRECISION": value})
    assert out.returncode == 0, out.stderr
    assert "ERROR DeviceUnavailableError" in out.stdout
    assert message in out.stdout


@needs_bf16
def test_bf16_conv_rounds_operands_to_bf16(core: Any) -> None:
    model, w, b, x = conv_relu()
    compiled = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "bf16"})
    assert compiled.get_property("INFERENCE_PRECISION_HINT") == "bf16"
    got = compiled([x])[0].astype(np.float64)
    want_bf16 = np.maximum(conv2d(to_bf16(x), to_bf16(w), b), 0)  # bf16 operands, exact sums
    want_f32 = np.maximum(conv2d(x, w, b), 0)
    scale = np.abs(want_f32).max()
    err_bf16 = np.abs(got - want_bf16).max() / scale
    err_f32 = np.abs(got - want_f32).max() / scale
    # f32 accumulation of the bf16 products: ~1e-6; the bf16 rounding itself: ~1e-3
    assert err_bf16 < 2e-5, err_bf16
    assert 1e-4 < err_f32 < 2e-2, err_f32


@needs_bf16
def test_bf16_dense_matmul_rounds_operands_to_bf16(core: Any) -> None:
    model, w, b, x = dense()
    compiled = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "bf16"})
    got = compiled([x])[0].astype(np.float64)
    want_bf16 = to_bf16(x).astype(np.float64) @ to_bf16(w).astype(np.float64) + b
    want_f32 = x.astype(np.float64) @ w.astype(np.float64) + b
    scale = np.abs(want_f32).max()
    assert np.abs(got - want_bf16).max() / scale < 2e-5
    assert 1e-4 < np.abs(got - want_f32).max() / scale < 2e-2
    # the f32 program is unchanged by the option existing
    f32 = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})([x])[0]
    np.testing.assert_allclose(f32, want_f32, rtol=1e-5, atol=1e-4)


def test_bf16_refused_without_bf16_arithmetic() -> None:
    # DNNL_MAX_CPU_ISA caps what oneDNN dispatches to: AVX-512 without BF16 stands in for such a
    # host (an AVX2 host gets the same answer from its own ISA).
    script = textwrap.dedent("""
        import numpy as np, opforge
        from opforge.errors import PropertyError
        from opforge.graph import Model
        x = opforge.op("Parameter", shape=[2, 4], element_type="f32", name="x")
        m = Model([opforge.op("MatMul", x, opforge.op("Constant", value=np.ones((4, 3), np.float32)))], [x])
        core = opforge.Core()
        try:
            core.compile_model(m, "CPU", {"INFERENCE_PRECISION_HINT": "bf16"})
        except PropertyError as err:
            print("REFUSED", err)
        ok = core.compile_model(m, "CPU")([np.ones((2, 4), np.float32)])[0]
        print("F32", float(ok.sum()))
    """)
    env = dict(os.environ, DNNL_MAX_CPU_ISA="AVX512_CORE")
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "REFUSED device CPU: INFERENCE_PRECISION_HINT=bf16 needs a CPU with bf16 arithmetic" in out.stdout
    assert "Use f32" in out.stdout
    assert "F32 24.0" in out.stdout


@needs_bf16
def test_bf16_tensor_between_convolutions_is_stored_in_bf16(core: Any) -> None:
    # conv -> relu -> conv: the middle tensor is read only by a bf16 convolution, so it is kept
    # in bf16 (half the bytes); the result is what the f32-stored path would give, since that
    # path rounds the same tensor to bf16 in the reader.
    x = param("x", [1, 32, 12, 12])
    w1, w2 = rand((32, 32, 3, 3), seed=1) * 0.1, rand((32, 32, 3, 3), seed=2) * 0.1
    pads = {"strides": [1, 1], "pads_begin": [1, 1], "pads_end": [1, 1], "dilations": [1, 1]}
    h = opforge.op("Relu", opforge.op("Convolution", x, const(w1), name="conv1", **pads), name="relu")
    y = opforge.op("Convolution", h, const(w2), name="conv2", **pads)
    model, feeds = Model([y], [x], name="chain"), rand((1, 32, 12, 12), seed=3)
    zero = np.zeros(32, np.float32)
    mid = to_bf16(np.maximum(conv2d(to_bf16(feeds), to_bf16(w1), zero), 0).astype(np.float32))
    want = conv2d(mid, to_bf16(w2), zero)
    plans = {}
    for prec in ("f32", "bf16"):
        compiled = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": prec})
        got = compiled([feeds])[0].astype(np.float64)
        if prec == "bf16":
            assert np.abs(got - want).max() / np.abs(want).max() < 2e-5
        plans[prec] = compiled._executable.programs()[((1, 32, 12, 12),)].program.memory_plan()
    # the f32 program holds x, the middle tensor and y in f32; bf16 stores the middle one in bf16
    assert plans["f32"]["unplanned_bytes"] - plans["bf16"]["unplanned_bytes"] == 32 * 12 * 12 * 2


@needs_bf16
def test_bf16_matmul_of_two_activations(core: Any) -> None:
    # attention's Q x K^T: both operands are converted to bf16 at run time
    a, b = param("a", [2, 4, 32, 16]), param("b", [2, 4, 32, 16])
    y = opforge.op("MatMul", a, b, transpose_a=False, transpose_b=True, name="qk")
    model = Model([y], [a, b], name="qk")
    xa, xb = rand((2, 4, 32, 16), seed=1), rand((2, 4, 32, 16), seed=2)
    got = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "bf16"})([xa, xb])[0].astype(np.float64)
    want = to_bf16(xa).astype(np.float64) @ np.swapaxes(to_bf16(xb).astype(np.float64), -1, -2)
    want_f32 = xa.astype(np.float64) @ np.swapaxes(xb.astype(np.float64), -1, -2)
    scale = np.abs(want_f32).max()
    assert np.abs(got - want).max() / scale < 2e-5
    assert np.abs(got - want_f32).max() / scale > 1e-4


def dwconv2d(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    """3x3 depthwise, stride 1, pad 1, in f64; w is [C, 1, 1, 3, 3]."""
    _, _, h, wd = x.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    y = np.zeros(x.shape)
    for i in range(3):
        for j in range(3):
            y += xp[:, :, i:i + h, j:j + wd] * w[:, 0, 0, i, j].astype(np.float64).reshape(1, -1, 1, 1)
    return y + b.astype(np.float64).reshape(1, -1, 1, 1)


@needs_bf16
def test_bf16_mobilenet_block_stays_in_bf16_through_the_depthwise_convolution(core: Any) -> None:
    # expand 1x1 -> depthwise 3x3 (+ bias) -> project 1x1, as MobileNetV2: the depthwise
    # convolution runs in bf16 too (our dw kernel, dw_conv_bf16.cpp, with its bias in f32; or, with
    # OPFORGE_CPU_DW_KERNEL=0, oneDNN's brdgmm_dw, its bias rounded to bf16 once), so both
    # tensors between the three are stored in bf16 and nothing converts f32 -> bf16 in between
    x = param("x", [1, 16, 10, 10])
    w1, w3 = rand((48, 16, 1, 1), seed=1) * 0.3, rand((16, 48, 1, 1), seed=3) * 0.2
    w2, b2 = rand((48, 1, 1, 3, 3), seed=2) * 0.3, rand((48,), seed=4)
    one = {"strides": [1, 1], "pads_begin": [0, 0], "pads_end": [0, 0], "dilations": [1, 1]}
    h = opforge.op("Convolution", x, const(w1), name="expand", **one)
    h = opforge.op("GroupConvolution", h, const(w2), strides=[1, 1], pads_begin=[1, 1], pads_end=[1, 1],
                   dilations=[1, 1], name="dw")
    h = opforge.op("Add", h, const(b2.reshape(1, 48, 1, 1)), name="dw_bias")
    y = opforge.op("Convolution", h, const(w3), name="project", **one)
    model, feeds = Model([y], [x], name="block"), rand((1, 16, 10, 10), seed=5)
    zero16, zero48 = np.zeros(16, np.float32), np.zeros(48, np.float32)
    mid1 = to_bf16(conv1x1(to_bf16(feeds), to_bf16(w1), zero48).astype(np.float32))
    want_f32 = conv1x1(dwconv2d(conv1x1(feeds, w1, zero48), w2, b2), w3, zero16)
    plans = {}
    for prec in ("f32", "bf16"):
        compiled = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": prec, "ENABLE_PROFILING": True})
        request = compiled.create_infer_request()
        got = np.asarray(request.infer([feeds])[0]).astype(np.float64)
        scale = np.abs(want_f32).max()
        if prec == "bf16":
            dw = next(r for r in request.get_profiling_info() if r.node_name == "dw_bias")
            ours = dw.exec_type == "dw:avx512_bf16"
            assert ours or (dw.exec_type.startswith("brdgmm_dw") and "bf16" in dw.exec_type), dw.exec_type
            mid2 = to_bf16(dwconv2d(mid1, to_bf16(w2), b2 if ours else to_bf16(b2)).astype(np.float32))
            want = conv1x1(mid2, to_bf16(w3), zero16)
            assert np.abs(got - want).max() / scale < 1e-4
            assert np.abs(got - want_f32).max() / scale > 1e-4  # it really rounded
        else:
            np.testing.assert_allclose(got, want_f32, rtol=1e-4, atol=1e-4 * scale)
        plans[prec] = compiled._executable.programs()[((1, 16, 10, 10),)].program.memory_plan()
    # both 48x10x10 tensors between the convolutions are stored in bf16
    assert plans["f32"]["unplanned_bytes"] - plans["bf16"]["unplanned_bytes"] == 2 * 48 * 10 * 10 * 2


def conv1x1(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.einsum("nchw,oc->nohw", x.astype(np.float64), w[:, :, 0, 0].astype(np.float64)) + b.reshape(1, -1, 1, 1)


@needs_bf16
def test_demo_holds_a_bf16_default_to_bf16_tolerance(tmp_path: Any) -> None:
    # the main job on a bf16 host without the suite's f32 pin: the CPU row computes in bf16 and
    # is judged by what bf16 operands give, not by f32 noise
    clean = {k: v for k, v in os.environ.items() if k != "OPFORGE_CPU_DEFAULT_PRECISION"}
    out = subprocess.run([sys.executable, "-m", "opforge", "demo", "--out", str(tmp_path), "--device", "CPU"], env=clean,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    row = next(line for line in out.stdout.splitlines() if line.startswith("[5/5] CPU"))
    assert row.endswith("OK (bf16)"), row


@needs_bf16
@pytest.mark.parametrize(("op", "c", "factor"), [("Divide", 8.0, 1 / 8.0), ("Multiply", 0.3, 0.3)])
def test_bf16_attention_scale_is_a_post_op_of_the_matmul(core: Any, op: str, c: float, factor: float) -> None:
    # Q x K^T / sqrt(d) (or * a factor): in bf16 the constant scalar joins the MatMul as a
    # oneDNN post-op instead of running as its own kernel; in f32 too (test_cpu_attention_f32.py)
    a, b = param("a", [1, 4, 32, 16]), param("b", [1, 4, 32, 16])
    y = opforge.op("MatMul", a, b, transpose_a=False, transpose_b=True, name="qk")
    y = opforge.op(op, y, const(np.array(c, np.float32)), name="scale")
    model = Model([opforge.op("Softmax", y, axis=-1, name="sm")], [a, b], name="attention")
    xa, xb = rand((1, 4, 32, 16), seed=1), rand((1, 4, 32, 16), seed=2)
    logits = to_bf16(xa).astype(np.float64) @ np.swapaxes(to_bf16(xb).astype(np.float64), -1, -2) * factor
    want = np.exp(logits - logits.max(-1, keepdims=True))
    want /= want.sum(-1, keepdims=True)
    for prec in ("bf16", "f32"):
        compiled = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": prec})
        steps = compiled._executable.programs()[((1, 4, 32, 16), (1, 4, 32, 16))].program.steps()
        mm = next(s for s in steps if "qk" in s["fused_names"])
        assert "scale" in mm["fused_names"], steps
        got = compiled([xa, xb])[0].astype(np.float64)
        if prec == "bf16":
            assert np.abs(got - want).max() < 1e-5
