"""The emulated AVX2 host (ONEDNN_MAX_CPU_ISA=AVX2 on an AVX-512 machine) is honest: every
hand-written kernel asks core/host_isa.hpp (cpuid AND oneDNN's effective ISA), so under the cap
none of ours runs AVX-512 code, and the loops that GCC's target_clones used to pick by cpuid alone
(core/isa_clones.hpp) take their AVX2 builds. Small onnx.helper graphs (a CNN block, a transformer
block, an LSTM, an int8 QDQ block) run in one child process under the cap; their outputs must match
ONNX Runtime's and no exec type may name avx512; both AVX2 builds of the loops (with FMA, the default,
and OPFORGE_CPU_AVX2_FMA=0) are checked."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

pytest.importorskip("onnxruntime.quantization")

from int8_testing import output_scale, save_model
from onnxruntime import quantization

F32 = TensorProto.FLOAT


def _init(rng: np.random.Generator, name: str, shape: tuple[int, ...], scale: float = 0.3) -> Any:
    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


def _cnn(path: Path) -> tuple[int, ...]:
    """Conv + BatchNorm + ReLU, MaxPool, a Concat of two branches, AveragePool, Resize, Clip,
    LeakyRelu, HardSigmoid, Pow 2 and a spatial ReduceMean: element-wise, pooling, resampling and
    reduce kernels of ours next to oneDNN's convolutions."""
    rng = np.random.default_rng(1)
    shape = (1, 8, 16, 16)
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c1", "g", "beta", "mu", "var"], ["bn"]),
        helper.make_node("Relu", ["bn"], ["r1"]),
        helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "w2"], ["c2"]),
        helper.make_node("Concat", ["p1", "c2"], ["cat"], axis=1),
        helper.make_node("AveragePool", ["cat"], ["ap"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Resize", ["ap", "", "scales"], ["up"], mode="linear"),
        helper.make_node("Clip", ["up", "lo", "hi"], ["cl"]),
        helper.make_node("LeakyRelu", ["cl"], ["lr"], alpha=0.1),
        helper.make_node("HardSigmoid", ["lr"], ["hs"], alpha=0.3, beta=0.4),
        helper.make_node("Pow", ["hs", "two"], ["sq"]),
        helper.make_node("ReduceMean", ["sq", "axes"], ["y"], keepdims=1),
    ]
    inits = [_init(rng, "w1", (16, 8, 3, 3)), _init(rng, "b1", (16,)),
             numpy_helper.from_array(rng.uniform(0.5, 1.5, 16).astype(np.float32), "g"), _init(rng, "beta", (16,)),
             _init(rng, "mu", (16,)), numpy_helper.from_array(rng.uniform(0.5, 2, 16).astype(np.float32), "var"),
             _init(rng, "w2", (8, 16, 1, 1)), numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales"),
             numpy_helper.from_array(np.array(-1, np.float32), "lo"),
             numpy_helper.from_array(np.array(3, np.float32), "hi"),
             numpy_helper.from_array(np.array(2, np.float32), "two"),
             numpy_helper.from_array(np.array([2, 3], np.int64), "axes")]
    save_model(nodes, [helper.make_tensor_value_info("x", F32, list(shape))],
               [helper.make_tensor_value_info("y", F32, [1, 24, 1, 1])], inits, path, opset=18)
    return shape


def _transformer(path: Path) -> tuple[int, ...]:
    """A projection, LayerNorm, one attention head (Q K^T, Softmax, times V), an erf-GELU MLP, a
    residual Add, and an RMSNorm written out (Pow, ReduceMean, Add, Sqrt, Div)."""
    rng = np.random.default_rng(2)
    shape = (1, 24, 32)
    nodes = [
        helper.make_node("MatMul", ["x", "wp"], ["p"]),
        helper.make_node("Add", ["p", "bp"], ["pb"]),
        helper.make_node("LayerNormalization", ["pb", "ln_g", "ln_b"], ["ln"], axis=-1),
        helper.make_node("Transpose", ["ln"], ["lnt"], perm=[0, 2, 1]),
        helper.make_node("MatMul", ["ln", "lnt"], ["s"]),
        helper.make_node("Mul", ["s", "scale"], ["ss"]),
        helper.make_node("Softmax", ["ss"], ["a"], axis=-1),
        helper.make_node("MatMul", ["a", "ln"], ["att"]),
        helper.make_node("MatMul", ["att", "w1"], ["h"]),
        helper.make_node("Div", ["h", "sqrt2"], ["hd"]),
        helper.make_node("Erf", ["hd"], ["he"]),
        helper.make_node("Add", ["he", "one"], ["he1"]),
        helper.make_node("Mul", ["h", "he1"], ["hm"]),
        helper.make_node("Mul", ["hm", "half"], ["gelu"]),
        helper.make_node("MatMul", ["gelu", "w2"], ["o"]),
        helper.make_node("Add", ["o", "pb"], ["res"]),
        helper.make_node("Pow", ["res", "two"], ["sq"]),
        helper.make_node("ReduceMean", ["sq", "axes"], ["ms"], keepdims=1),
        helper.make_node("Add", ["ms", "eps"], ["mse"]),
        helper.make_node("Sqrt", ["mse"], ["rms"]),
        helper.make_node("Div", ["res", "rms"], ["y"]),
    ]

    def scalar(name: str, v: float) -> Any:
        return numpy_helper.from_array(np.array(v, np.float32), name)

    inits = [_init(rng, "wp", (32, 32)), _init(rng, "bp", (32,)),
             numpy_helper.from_array(rng.uniform(0.5, 1.5, 32).astype(np.float32), "ln_g"), _init(rng, "ln_b", (32,)),
             scalar("scale", 32 ** -0.5), _init(rng, "w1", (32, 64)), scalar("sqrt2", 2 ** 0.5), scalar("one", 1),
             scalar("half", 0.5), _init(rng, "w2", (64, 32)), scalar("two", 2), scalar("eps", 1e-6),
             numpy_helper.from_array(np.array([-1], np.int64), "axes")]
    save_model(nodes, [helper.make_tensor_value_info("x", F32, list(shape))],
               [helper.make_tensor_value_info("y", F32, list(shape))], inits, path, opset=18)
    return shape


def _lstm(path: Path) -> tuple[int, ...]:
    """A batch-1 LSTM: its recurrent products run our panel GEMV, which has an AVX2 build."""
    rng = np.random.default_rng(3)
    shape, hidden = (6, 1, 8), 32
    nodes = [helper.make_node("LSTM", ["x", "W", "R", "B"], ["y"], hidden_size=hidden)]
    inits = [_init(rng, "W", (1, 4 * hidden, 8)), _init(rng, "R", (1, 4 * hidden, hidden)),
             _init(rng, "B", (1, 8 * hidden))]
    save_model(nodes, [helper.make_tensor_value_info("x", F32, list(shape))],
               [helper.make_tensor_value_info("y", F32, [6, 1, 1, hidden])], inits, path)
    return shape


class _Calibration(quantization.CalibrationDataReader):  # type: ignore[misc]
    """Four seeded N(0, 1) inputs."""

    def __init__(self, shape: tuple[int, ...]) -> None:
        rng = np.random.default_rng(11)
        self._it = iter([{"x": rng.standard_normal(shape).astype(np.float32)} for _ in range(4)])

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self._it, None)


def _int8(path: Path) -> tuple[int, ...]:
    """Two convolutions with ReLU and a MaxPool, quantized by ONNX Runtime with 7-bit weights
    (reduce_range: run in int8 even without VNNI, test_cpu_int8_no_vnni.py)."""
    rng = np.random.default_rng(4)
    shape = (1, 16, 12, 12)
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Conv", ["p1", "w2"], ["y"], pads=[1, 1, 1, 1])]
    inits = [_init(rng, "w1", (16, 16, 3, 3), 0.2), _init(rng, "w2", (16, 16, 3, 3), 0.2)]
    src = save_model(nodes, [helper.make_tensor_value_info("x", F32, list(shape))],
                     [helper.make_tensor_value_info("y", F32, [1, 16, 6, 6])], inits, path.with_suffix(".f32.onnx"))
    q = quantization
    q.quantize_static(str(src), str(path), _Calibration(shape), quant_format=q.QuantFormat.QDQ, per_channel=False,
                      activation_type=q.QuantType.QUInt8, weight_type=q.QuantType.QInt8, reduce_range=True)
    return shape


# The child: the plugin's ISA answers, then each model on CPU (f32 hint; int8 models run int8)
# against ONNX Runtime, and whether a bf16 hint is refused.
CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    import onnxruntime as ort
    import opforge
    from opforge_cpu._loader import load_core
    core_cpu = load_core()
    out = {"cpu_isa": core_cpu.cpu_isa(), "host_isa": core_cpu.host_isa(), "loops": core_cpu.vector_loops_isa(),
           "models": {}}
    core = opforge.Core()
    for name, path, shape in json.loads(sys.argv[1]):
        x = np.random.default_rng(9).standard_normal(shape).astype(np.float32)
        if name == "int8":
            x = np.abs(x) * 2
        compiled = core.compile_model(core.read_model(path), "CPU", {"ENABLE_PROFILING": True,
                                                                     "INFERENCE_PRECISION_HINT": "f32"})
        req = compiled.create_infer_request()
        got = np.asarray(req.infer({0: x})[0], np.float64)
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        want = sess.run(None, {sess.get_inputs()[0].name: x})[0].astype(np.float64)
        rows = [(r.node_type, r.exec_type) for r in req.get_profiling_info() if r.status == "EXECUTED"]
        out["models"][name] = {"err": float(np.abs(got - want).max()), "scale": float(np.abs(want).max()),
                               "rows": rows}
    try:
        core.compile_model(core.read_model(json.loads(sys.argv[1])[0][1]), "CPU", {"INFERENCE_PRECISION_HINT": "bf16"})
        out["bf16"] = "compiled"
    except Exception as e:
        out["bf16"] = type(e).__name__ + ": " + str(e)
    print(json.dumps(out))
""")


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, str, list[int]]]:
    d = tmp_path_factory.mktemp("isa_cap")
    return [(name, str(d / f"{name}.onnx"), list(make(d / f"{name}.onnx")))
            for name, make in (("cnn", _cnn), ("transformer", _transformer), ("lstm", _lstm), ("int8", _int8))]


# Each test runs on both AVX2 builds of the compiler-vectorised loops: with FMA (the default) and
# without (OPFORGE_CPU_AVX2_FMA=0, target_clones' code).
@pytest.fixture(scope="module", params=["fma", "no_fma"])
def capped(request: pytest.FixtureRequest, models: list[tuple[str, str, list[int]]]) -> dict[str, Any]:
    env = dict(os.environ, ONEDNN_MAX_CPU_ISA="AVX2", OPFORGE_CPU_AVX2_FMA="1" if request.param == "fma" else "0")
    done = subprocess.run([sys.executable, "-c", CHILD, json.dumps(models)], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    out["int8_step"] = output_scale(Path(models[-1][1]))
    out["fma"] = request.param == "fma"
    return out


def test_the_capped_process_reports_avx2_for_onednn_and_for_our_kernels(capped: dict[str, Any]) -> None:
    assert capped["cpu_isa"] == "avx2", capped["cpu_isa"]
    assert capped["host_isa"] == "avx2", capped["host_isa"]
    assert capped["loops"] == ("avx2_fma" if capped["fma"] else "avx2"), capped["loops"]


@pytest.mark.parametrize("name", ["cnn", "transformer", "lstm", "int8"])
def test_no_step_runs_avx512_under_the_cap(capped: dict[str, Any], name: str) -> None:
    rows = capped["models"][name]["rows"]
    assert rows, name
    wide = [r for r in rows if "avx512" in r[1]]
    assert not wide, wide


@pytest.mark.parametrize("name", ["cnn", "transformer", "lstm"])
def test_f32_outputs_match_onnx_runtime_under_the_cap(capped: dict[str, Any], name: str) -> None:
    m = capped["models"][name]
    assert m["err"] <= 1e-4 * max(1.0, m["scale"]), (name, m["err"], m["scale"])


def test_int8_output_within_one_step_of_onnx_runtime_under_the_cap(capped: dict[str, Any]) -> None:
    m = capped["models"]["int8"]
    assert m["err"] / capped["int8_step"] <= 1.0 + 1e-4, (m["err"], capped["int8_step"])
    assert any(t == "QuantizedConvolution" for t, _ in m["rows"]), m["rows"]


def test_the_lstm_gemv_takes_its_avx2_build(capped: dict[str, Any]) -> None:
    types = [e for t, e in capped["models"]["lstm"]["rows"] if t == "LSTMSequence" or "gemv" in e]
    assert any("panel_gemv_avx2" in e for e in types), capped["models"]["lstm"]["rows"]


def test_a_bf16_hint_is_refused_with_the_isa_named(capped: dict[str, Any]) -> None:
    assert capped["bf16"].startswith("PropertyError"), capped["bf16"]
    assert "avx2" in capped["bf16"], capped["bf16"]


def test_uncapped_answers_agree_with_onednn() -> None:
    from opforge_cpu._loader import load_core

    core = load_core()
    if "ONEDNN_MAX_CPU_ISA" in os.environ:
        pytest.skip("the suite itself runs under an ISA cap")
    isa, ours = core.cpu_isa(), core.host_isa()
    assert ours in ("avx512_bf16", "avx512", "avx2", "baseline"), ours
    assert core.vector_loops_isa() == {"avx512_bf16": "avx512", "avx2": "avx2_fma"}.get(ours, ours)
    assert ours.startswith("avx512") == isa.startswith("avx512"), (isa, ours)
    assert (ours == "avx512_bf16") == (isa.startswith("avx512") and core.native_bf16()), (isa, ours)
