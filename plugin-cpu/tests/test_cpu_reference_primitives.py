"""No heavy oneDNN primitive on a reference implementation: the graph patterns real models give
the CPU device (convolutions and MatMuls with the fusions emit.py makes: bias, residual sum,
activations, transposed operands; depthwise, grouped and transposed convolutions, pooling;
attention with Swin's position bias over windows and EdgeNeXt's transposed product) compiled in
f32, bf16 and int8 (QDQ by ONNX Runtime's quantizer), each checked against ONNX Runtime, and the
compiled model's ONEDNN_REFERENCE_PRIMITIVES must be empty. The same battery runs in child
processes as an AVX2 host and an AVX-512 host without VNNI/bf16 (ONEDNN_MAX_CPU_ISA). Stop 12
found two MatMuls on oneDNN's "ref:any" only because real models ran 5-27x slow
(reference_primitives.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import opforge
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
pytest.importorskip("onnxruntime.quantization")
helper, numpy_helper, TP = onnx.helper, onnx.numpy_helper, onnx.TensorProto

from int8_testing import quantize  # noqa: E402
from opforge_cpu._loader import load_core  # noqa: E402
from opforge_cpu.reference_primitives import (  # noqa: E402
    OneDNNReferenceWarning,
    describe,
    reference_primitives,
    warn_reference_primitives,
)

Pattern = tuple[list[Any], tuple[int, ...], list[Any]]  # nodes, the input x's shape, initializers


def _w(name: str, shape: tuple[int, ...], seed: int, scale: float = 0.2) -> Any:
    return numpy_helper.from_array((np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32),
                                   name)


def _conv(name: str, x: str, y: str, cin: int, cout: int, k: int, seed: int, group: int = 1, stride: int = 1,
          ) -> tuple[Any, list[Any]]:
    inits = [_w(name + "_w", (cout, cin // group, k, k), seed), _w(name + "_b", (cout,), seed + 1)]
    node = helper.make_node("Conv", [x, name + "_w", name + "_b"], [y], pads=[k // 2] * 4, group=group,
                            strides=[stride, stride])
    return node, inits


def conv_bias_relu() -> Pattern:
    c, inits = _conv("c", "x", "c1", 16, 32, 3, 1)
    return [c, helper.make_node("Relu", ["c1"], ["y"])], (1, 16, 28, 28), inits


def conv_residual_relu() -> Pattern:
    c, inits = _conv("c", "x", "c1", 32, 32, 3, 2)
    return [c, helper.make_node("Add", ["c1", "x"], ["s"]), helper.make_node("Relu", ["s"], ["y"])], (1, 32, 14, 14), inits


def conv_1x1_stride2() -> Pattern:
    c, inits = _conv("c", "x", "y", 32, 64, 1, 3, stride=2)
    return [c], (1, 32, 28, 28), inits


def depthwise_clip() -> Pattern:
    c, inits = _conv("c", "x", "c1", 32, 32, 3, 4, group=32)
    lo = numpy_helper.from_array(np.array(0, np.float32), "lo")
    hi = numpy_helper.from_array(np.array(6, np.float32), "hi")
    return [c, helper.make_node("Clip", ["c1", "lo", "hi"], ["y"])], (1, 32, 28, 28), [*inits, lo, hi]


def grouped_conv() -> Pattern:
    # ResNeXt: 32 groups of 4 channels (regrouped in bf16, nn.cpp regroup_bf16)
    c, inits = _conv("c", "x", "c1", 128, 128, 3, 5, group=32)
    return [c, helper.make_node("Relu", ["c1"], ["y"])], (1, 128, 14, 14), inits


def conv_transpose() -> Pattern:
    inits = [_w("w", (32, 16, 2, 2), 6), _w("b", (16,), 7)]
    return [helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], strides=[2, 2])], (1, 32, 14, 14), inits


def conv_pools() -> Pattern:
    c, inits = _conv("c", "x", "c1", 16, 32, 3, 8)
    nodes = [c, helper.make_node("MaxPool", ["c1"], ["m"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
             helper.make_node("AveragePool", ["m"], ["a"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("GlobalAveragePool", ["a"], ["y"])]
    return nodes, (1, 16, 28, 28), inits


def dilated_max_pool() -> Pattern:
    """A dilated MaxPool of a plain (model input) tensor: oneDNN 3.2 has only "ref:any" for
    dilated pooling (164 ms instead of 0.6 for 64x112x112), which the check found; AVX-512 hosts
    pool it channels-last (max_pool.cpp NchwDilatedMaxPool), AVX2 hosts still run the reference."""
    return [helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], dilations=[2, 2], strides=[2, 2],
                             pads=[1, 1, 1, 1])], (1, 16, 30, 30), []


def gemm_relu() -> Pattern:
    inits = [_w("w", (128, 256), 9), _w("b", (128,), 10)]
    return [helper.make_node("Gemm", ["x", "w", "b"], ["g"], transB=1), helper.make_node("Relu", ["g"], ["y"])], \
        (4, 256), inits


def matmul_bias_residual() -> Pattern:
    # a transformer block's projection: x W + b + x over [B, S, C]
    inits = [_w("w", (96, 96), 11), _w("b", (96,), 12)]
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Add", ["m", "b"], ["mb"]),
             helper.make_node("Add", ["mb", "x"], ["y"])]
    return nodes, (2, 49, 96), inits


def _attention(windows: int, bias: bool, seed: int) -> Pattern:
    """Multi-head self-attention of x [W, S, C] (3 heads of 32): q, k, v projections, heads split
    by Reshape + Transpose, q k^T (k transposed), scale, (Swin's position bias [1, H, S, S] over
    the windows), Softmax, x v, heads merged back, output projection."""
    s, heads, d = 49, 3, 32
    inits = [_w("wq", (96, 96), seed), _w("wk", (96, 96), seed + 1), _w("wv", (96, 96), seed + 2),
             _w("wo", (96, 96), seed + 3), numpy_helper.from_array(np.array([windows, s, heads, d], np.int64), "split"),
             numpy_helper.from_array(np.array([windows, s, heads * d], np.int64), "merge"),
             numpy_helper.from_array(np.array(d ** -0.5, np.float32), "scale")]
    nodes = []
    for n in "qkv":
        nodes += [helper.make_node("MatMul", ["x", "w" + n], [n + "0"]),
                  helper.make_node("Reshape", [n + "0", "split"], [n + "1"]),
                  helper.make_node("Transpose", [n + "1"], [n], perm=[0, 2, 1, 3] if n != "k" else [0, 2, 3, 1])]
    nodes += [helper.make_node("MatMul", ["q", "k"], ["s0"]), helper.make_node("Mul", ["s0", "scale"], ["s1"])]
    scores = "s1"
    if bias:
        inits.append(_w("bias", (1, heads, s, s), seed + 4, 2.0))
        nodes.append(helper.make_node("Add", ["s1", "bias"], ["s2"]))
        scores = "s2"
    nodes += [helper.make_node("Softmax", [scores], ["p"], axis=-1), helper.make_node("MatMul", ["p", "v"], ["o"]),
              helper.make_node("Transpose", ["o"], ["o1"], perm=[0, 2, 1, 3]),
              helper.make_node("Reshape", ["o1", "merge"], ["o2"]), helper.make_node("MatMul", ["o2", "wo"], ["y"])]
    return nodes, (windows, s, 96), inits


def attention() -> Pattern:
    return _attention(1, False, 20)


def swin_window_attention() -> Pattern:
    return _attention(4, True, 30)


def edgenext_xca() -> Pattern:
    """EdgeNeXt's cross-covariance attention: q, k, v [1, H, D, N] from x [1, H, D, N], D x D
    scores, the [1, H, D, N] result transposed to [1, N, H, D] (its last axis moves)."""
    inits = [numpy_helper.from_array(np.array(0.5, np.float32), "half")]
    nodes = [helper.make_node("Mul", ["x", "half"], ["k"]),
             helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
             helper.make_node("MatMul", ["x", "kt"], ["s"]),
             helper.make_node("Softmax", ["s"], ["p"], axis=-1),
             helper.make_node("MatMul", ["p", "x"], ["o"]),
             helper.make_node("Transpose", ["o"], ["y"], perm=[0, 3, 1, 2])]
    return nodes, (1, 4, 16, 96), inits


PATTERNS: dict[str, Callable[[], Pattern]] = {f.__name__: f for f in (
    conv_bias_relu, conv_residual_relu, conv_1x1_stride2, depthwise_clip, grouped_conv, conv_transpose, conv_pools,
    dilated_max_pool, gemm_relu, matmul_bias_residual, attention, swin_window_attention, edgenext_xca)}
# what ONNX Runtime's QDQ quantizer makes sense of (convolutions, pools, Gemm/MatMul with constant weights)
INT8 = ["conv_bias_relu", "conv_residual_relu", "conv_1x1_stride2", "depthwise_clip", "conv_transpose", "conv_pools",
        "gemm_relu", "matmul_bias_residual"]
TOLERANCE = {"f32": 1e-4, "bf16": 5e-2, "int8": 8e-2}
#: what is known to land on a reference implementation on an emulated older host (listed in
#: kernel-library.md 'Reference implementations'): the check must report exactly these
KNOWN_REFERENCE = {"AVX2": {"f32 dilated_max_pool"}, "AVX512_CORE": set()}


def save(name: str, folder: Path) -> tuple[Path, tuple[int, ...]]:
    nodes, shape, inits = PATTERNS[name]()
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TP.FLOAT, list(shape))],
                              [helper.make_tensor_value_info("y", TP.FLOAT, None)], inits)
    path = folder / f"{name}.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path, shape


def compile_pattern(name: str, precision: str, folder: Path) -> tuple[list[str], float]:
    """Compiles pattern `name` in `precision` ("f32", "bf16", "int8": its QDQ copy run in f32 mode)
    and runs it: the compiled model's ONEDNN_REFERENCE_PRIMITIVES and the largest difference from
    ONNX Runtime relative to max|y|."""
    path, shape = save(name, folder)
    if precision == "int8":
        path = quantize(path, folder / f"{name}_qdq.onnx", shape, True, "u8")
    x = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    compiled = opforge.Core().compile_model(str(path), "CPU", {
        "INFERENCE_PRECISION_HINT": "bf16" if precision == "bf16" else "f32", "INFERENCE_NUM_THREADS": 1})
    got = np.asarray(compiled.create_infer_request().infer({0: x})[0], np.float64)
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    err = float(np.abs(got - want).max() / max(float(np.abs(want).max()), 1e-12))
    return list(compiled.get_property("ONEDNN_REFERENCE_PRIMITIVES")), err


def _host() -> tuple[bool, bool]:
    """(native bf16, VNNI) of this host as oneDNN sees it (no_vnni.pairs_saturate: oneDNN's
    avx512_core_bf16, this Zen 5's ISA, has VNNI without saying so in its name)."""
    from opforge_cpu.passes.int8.no_vnni import pairs_saturate

    core = load_core()
    return bool(core.native_bf16()), not pairs_saturate()


@pytest.mark.parametrize("name", list(PATTERNS))
@pytest.mark.parametrize("precision", ["f32", "bf16"])
def test_no_reference_primitive(tmp_path: Path, name: str, precision: str) -> None:
    if precision == "bf16" and not _host()[0]:
        pytest.skip("no native bf16 on this host: bf16 runs in f32")
    with warnings.catch_warnings():
        warnings.simplefilter("error", OneDNNReferenceWarning)  # the warning would name the node too
        refs, err = compile_pattern(name, precision, tmp_path)
    assert refs == [], refs
    assert err < TOLERANCE[precision], f"{name} {precision}: {err:.2e} of max|y|"


@pytest.mark.parametrize("name", INT8)
def test_no_reference_primitive_int8(tmp_path: Path, name: str) -> None:
    if not _host()[1]:
        pytest.skip("no VNNI: full-range int8 weights stay in f32 here (test_cpu_int8_no_vnni.py)")
    refs, err = compile_pattern(name, "int8", tmp_path)
    assert refs == [], refs
    assert err < TOLERANCE["int8"], f"{name} int8: {err:.2e} of max|y|"


CHILD = textwrap.dedent("""
    import json, sys, tempfile, warnings
    from pathlib import Path
    sys.path.insert(0, sys.argv[1])
    import test_cpu_reference_primitives as t
    found = {}
    with tempfile.TemporaryDirectory() as d:
        for precision, names in (("f32", list(t.PATTERNS)), ("int8", t.INT8)):
            for name in names:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    refs, err = t.compile_pattern(name, precision, Path(d))
                said = [str(w.message) for w in caught if issubclass(w.category, t.OneDNNReferenceWarning)]
                found[precision + " " + name] = {"refs": refs, "err": err, "warnings": said}
    print(json.dumps(found))
""")


# (~25 s each on the 2-core host: the AVX-512-without-VNNI/bf16 host runs in the slow suite)
@pytest.mark.parametrize("isa", ["AVX2", pytest.param("AVX512_CORE", marks=pytest.mark.slow)])
def test_no_reference_primitive_on_older_isa(isa: str) -> None:
    """The f32 and int8 battery as an AVX2 host and an AVX-512 host without VNNI/bf16: every
    pattern still gets an optimised kernel (int8 without VNNI may stay in f32, see
    test_cpu_int8_no_vnni.py: then its convolutions are f32 ones, checked the same)."""
    env = dict(os.environ, ONEDNN_MAX_CPU_ISA=isa)
    done = subprocess.run([sys.executable, "-c", CHILD, str(Path(__file__).parent)], env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    on_ref = {k: v["refs"] for k, v in found.items() if v["refs"]}
    assert set(on_ref) == KNOWN_REFERENCE[isa], on_ref
    for key, refs in on_ref.items():  # what the property and the one warning say: node, kind, impl, shapes
        assert all(r.startswith("node '") and " on ref" in r and "src f32[" in r for r in refs), refs
        said = found[key]["warnings"]
        assert len(said) == 1 and all(r in said[0] for r in refs), said
    assert all(not v["warnings"] for k, v in found.items() if k not in on_ref), found
    wrong = {k: v["err"] for k, v in found.items() if v["err"] >= TOLERANCE[k.split()[0]]}
    assert not wrong, wrong


def test_reference_names() -> None:
    """oneDNN 3.2's reference implementations by name, and optimised ones that are not."""
    core = load_core()
    for impl in ("ref:any", "ref_int8:any", "gemm:ref", "ref_fused:any", "ref", ""):
        assert core.is_reference_impl(impl), impl
    for impl in ("brg:avx512_core_amx", "brgconv:avx512_core", "gemm:jit", "jit:avx2", "jit_int8:avx512_core_vnni",
                 "brdgmm:avx512_core", "jit_uni_dw:avx2", "simple:any", "x64:gemm:jit"):
        assert not core.is_reference_impl(impl), impl


def test_primitives_are_listed(tmp_path: Path) -> None:
    """Every primitive of a program is listed with the node that made it, its implementation and
    its shapes; only the heavy kinds count for the check."""
    path, _shape = save("conv_pools", tmp_path)
    compiled = opforge.Core().compile_model(str(path), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    rows = compiled._executable.primitives()  # the device's own introspection
    kinds = {r["kind"] for r in rows}
    assert {"convolution", "pooling"} <= kinds, rows
    conv = next(r for r in rows if r["kind"] == "convolution")
    assert conv["heavy"] and conv["impl"] and conv["src"].startswith("f32[1,16,28,28]"), conv
    assert conv["weights"].startswith("f32[32,16,3,3]") and conv["dst"].startswith("f32[1,32,28,28]"), conv
    assert reference_primitives(rows) == []


def test_warning_names_node_shapes_and_implementation() -> None:
    """What the 2 a.m. reader sees: one warning per program, a line per primitive."""
    rows = [{"node": "attn/MatMul_1", "node_type": "MatMul", "kind": "matmul", "impl": "ref:any",
             "src": "f32[1,4,16,96]", "weights": "f32[1,4,96,16]", "dst": "f32[1,4,16,96]", "reference": True,
             "heavy": True},
            {"node": "r", "node_type": "Reorder", "kind": "reorder", "impl": "ref:any", "src": "f32[8]",
             "weights": "", "dst": "f32[8]", "reference": True, "heavy": False}]
    picked = reference_primitives(rows)
    assert [r["node"] for r in picked] == ["attn/MatMul_1"]
    with pytest.warns(OneDNNReferenceWarning) as caught:
        warn_reference_primitives(picked, "avx512_core_amx")
    assert len(caught) == 1
    text = str(caught[0].message)
    assert "node 'attn/MatMul_1' (MatMul): matmul on ref:any" in text and "weights f32[1,4,96,16]" in text, text
    assert describe(rows[1]) == "node 'r' (Reorder): reorder on ref:any, src f32[8], dst f32[8]"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_reference_primitives([], "avx2")  # nothing to say: no warning


@pytest.mark.parametrize("threads", [1, 2])
def test_dilated_max_pool_of_a_plain_tensor(threads: int) -> None:
    """The path the check found (dilated_max_pool above): on an AVX-512 host it is pooled
    channels-last after a reorder, with NaN kept (a window holding a NaN gives NaN) and the
    padding never winning; against a NumPy dilated max pool."""
    if not load_core().cpu_isa().startswith("avx512"):
        pytest.skip("AVX2 hosts keep oneDNN's reference pooling for dilated windows")
    from cpu_testing import param
    from opforge.graph import Model

    x = param("x", [1, 24, 29, 31])
    y = opforge.op("MaxPool", x, strides=[2, 1], dilations=[2, 3], pads_begin=[2, 1], pads_end=[2, 3],
                   kernel=[3, 2], rounding_type="floor", auto_pad="explicit", name="pool")
    model = Model([y.output(0)], [x], name="dilated_pool")
    data = np.random.default_rng(4).standard_normal((1, 24, 29, 31)).astype(np.float32)
    data[0, 3, 10, 10] = np.nan
    compiled = opforge.Core().compile_model(model, "CPU", {"INFERENCE_NUM_THREADS": threads, "ENABLE_PROFILING": True})
    req = compiled.create_infer_request()
    got = np.asarray(req.infer({0: data})[0])
    padded = np.pad(data, ((0, 0), (0, 0), (2, 2), (1, 3)), constant_values=-np.inf)
    oh, ow = (padded.shape[2] - 5) // 2 + 1, padded.shape[3] - 3  # windows 5 x 4 with the dilations
    windows = [padded[:, :, 2 * i:2 * i + 2 * oh:2, 3 * j:3 * j + ow] for i in range(3) for j in range(2)]
    want = np.stack(windows).max(axis=0)
    np.testing.assert_array_equal(got, want)
    assert np.isnan(got[0, 3]).any()
    ran = [r.exec_type for r in req.get_profiling_info() if r.node_type == "MaxPool" and r.status == "EXECUTED"]
    assert ran == ["reorder+max_nhwc:avx512"], ran
    assert compiled.get_property("ONEDNN_REFERENCE_PRIMITIVES") == []
