"""opforge CPU vs OpenVINO (f32) vs ONNX Runtime, side by side, at 1 and 2 threads.

Uses the real benchmark models of ``shared/bench`` when ``--models`` points at them (made by
``make_models.py``); otherwise builds stand-ins with onnx.helper: a ResNet-like CNN (conv + BN +
residual + ReLU), a MobileNetV2-like CNN (depthwise + Clip), an MLP (3 Gemm + ReLU) and a
BERT-like encoder (LayerNormalization, erf GELU, attention). opforge reads the same ONNX file
through its ONNX frontend. Prints median latencies (ms) and ratios opforge / peer.

    python plugin-cpu/benchmarks/bench_cpu.py [--models /tmp/bench-models] [--threads 1 2] [--runs 50]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np


# ------------------------------------------------------------------------------ stand-in models
def _w(rng: np.random.Generator, *shape: int, scale: float | None = None) -> np.ndarray:
    fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else shape[0]
    return (rng.standard_normal(shape) * (scale or (2.0 / fan_in) ** 0.5)).astype(np.float32)


def make_resnet_like(path: Path) -> dict[str, np.ndarray]:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    nodes: list[Any] = []
    inits: list[Any] = []
    counter = [0]

    def name(p: str) -> str:
        counter[0] += 1
        return f"{p}{counter[0]}"

    def init(arr: np.ndarray) -> str:
        n = name("w")
        inits.append(numpy_helper.from_array(arr, n))
        return n

    def conv_bn(x: str, cin: int, cout: int, k: int, s: int, relu: bool) -> str:
        c = name("conv")
        nodes.append(helper.make_node("Conv", [x, init(_w(rng, cout, cin, k, k))], [c], kernel_shape=[k, k],
                                      strides=[s, s], pads=[k // 2] * 4))
        b = name("bn")
        nodes.append(helper.make_node("BatchNormalization", [c, init(rng.uniform(0.5, 1.5, cout).astype(np.float32)),
                                                             init(rng.uniform(-0.1, 0.1, cout).astype(np.float32)),
                                                             init(rng.uniform(-0.1, 0.1, cout).astype(np.float32)),
                                                             init(rng.uniform(0.5, 1.5, cout).astype(np.float32))],
                                      [b], epsilon=1e-5))
        if not relu:
            return b
        r = name("relu")
        nodes.append(helper.make_node("Relu", [b], [r]))
        return r

    x = conv_bn("x", 3, 64, 7, 2, True)
    p = name("pool")
    nodes.append(helper.make_node("MaxPool", [x], [p], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]))
    x, cin = p, 64
    for cout, stride in ((64, 1), (64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2), (512, 1)):
        y = conv_bn(x, cin, cout, 3, stride, True)
        y = conv_bn(y, cout, cout, 3, 1, False)
        sc = x if (stride == 1 and cin == cout) else conv_bn(x, cin, cout, 1, stride, False)
        a = name("add")
        nodes.append(helper.make_node("Add", [y, sc], [a]))
        r = name("relu")
        nodes.append(helper.make_node("Relu", [a], [r]))
        x, cin = r, cout
    g = name("gap")
    nodes.append(helper.make_node("GlobalAveragePool", [x], [g]))
    f = name("flat")
    nodes.append(helper.make_node("Flatten", [g], [f]))
    nodes.append(helper.make_node("Gemm", [f, init(_w(rng, 1000, 512)), init(np.zeros(1000, np.float32))], ["y"],
                                  transB=1))
    graph = helper.make_graph(nodes, "resnet_like", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 224, 224])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1000])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return {"x": np.random.default_rng(1).standard_normal((1, 3, 224, 224)).astype(np.float32)}


def make_mobilenet_like(path: Path) -> dict[str, np.ndarray]:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    nodes: list[Any] = []
    inits: list[Any] = []
    counter = [0]

    def name(p: str) -> str:
        counter[0] += 1
        return f"{p}{counter[0]}"

    def init(arr: np.ndarray) -> str:
        n = name("w")
        inits.append(numpy_helper.from_array(arr, n))
        return n

    lo, hi = init(np.array(0, np.float32)), init(np.array(6, np.float32))

    def conv(x: str, cin: int, cout: int, k: int, s: int, group: int, act: bool) -> str:
        c = name("conv")
        nodes.append(helper.make_node("Conv", [x, init(_w(rng, cout, cin // group, k, k)),
                                               init(rng.uniform(-0.1, 0.1, cout).astype(np.float32))], [c],
                                      kernel_shape=[k, k], strides=[s, s], pads=[k // 2] * 4, group=group))
        if not act:
            return c
        r = name("clip")
        nodes.append(helper.make_node("Clip", [c, lo, hi], [r]))
        return r

    x = conv("x", 3, 32, 3, 2, 1, True)
    cin = 32
    cfg = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]
    for t, c, n, s in cfg:
        for i in range(n):
            stride = s if i == 0 else 1
            hid = cin * t
            y = conv(x, cin, hid, 1, 1, 1, True) if t != 1 else x
            y = conv(y, hid, hid, 3, stride, hid, True)
            y = conv(y, hid, c, 1, 1, 1, False)
            if stride == 1 and cin == c:
                a = name("add")
                nodes.append(helper.make_node("Add", [y, x], [a]))
                y = a
            x, cin = y, c
    x = conv(x, cin, 1280, 1, 1, 1, True)
    g = name("gap")
    nodes.append(helper.make_node("GlobalAveragePool", [x], [g]))
    f = name("flat")
    nodes.append(helper.make_node("Flatten", [g], [f]))
    nodes.append(helper.make_node("Gemm", [f, init(_w(rng, 1000, 1280)), init(np.zeros(1000, np.float32))], ["y"],
                                  transB=1))
    graph = helper.make_graph(nodes, "mobilenet_like", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 224, 224])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1000])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return {"x": np.random.default_rng(1).standard_normal((1, 3, 224, 224)).astype(np.float32)}


def make_mlp(path: Path) -> dict[str, np.ndarray]:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    inits, nodes, x = [], [], "x"
    for i in range(3):
        inits += [numpy_helper.from_array(_w(rng, 1024, 1024), f"w{i}"),
                  numpy_helper.from_array(rng.uniform(-0.1, 0.1, 1024).astype(np.float32), f"b{i}")]
        nodes.append(helper.make_node("Gemm", [x, f"w{i}", f"b{i}"], [f"g{i}"], transB=1))
        x = f"g{i}"
        if i < 2:
            nodes.append(helper.make_node("Relu", [x], [f"r{i}"]))
            x = f"r{i}"
    nodes[-1].output[0] = "y"
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64, 1024])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [64, 1024])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return {"x": np.random.default_rng(1).standard_normal((64, 1024)).astype(np.float32)}


def make_bert_like(path: Path, layers: int = 4, hidden: int = 256, heads: int = 4, seq: int = 128) -> dict[str, np.ndarray]:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    nodes: list[Any] = []
    inits: list[Any] = []
    counter = [0]

    def name(p: str) -> str:
        counter[0] += 1
        return f"{p}{counter[0]}"

    def init(arr: np.ndarray) -> str:
        n = name("c")
        inits.append(numpy_helper.from_array(arr, n))
        return n

    def node(op: str, ins: list[str], **kw: Any) -> str:
        o = name(op.lower())
        nodes.append(helper.make_node(op, ins, [o], **kw))
        return o

    def ln(x: str) -> str:
        return node("LayerNormalization", [x, init(np.ones(hidden, np.float32)), init(np.zeros(hidden, np.float32))],
                    axis=-1, epsilon=1e-12)

    def dense(x: str, i: int, o: int) -> str:
        return node("Add", [node("MatMul", [x, init(_w(rng, i, o, scale=0.05))]), init(np.zeros(o, np.float32))])

    emb = node("Gather", [init(_w(rng, 1000, hidden, scale=0.05)), "input_ids"])
    pos = init(_w(rng, 1, seq, hidden, scale=0.05))
    x = ln(node("Add", [emb, pos]))
    mask = node("Unsqueeze", [node("Unsqueeze", ["attention_mask", init(np.array([1], np.int64))]),
                              init(np.array([2], np.int64))])
    mask = node("Mul", [node("Sub", [init(np.array(1.0, np.float32)), node("Cast", [mask], to=TensorProto.FLOAT)]),
                        init(np.array(-10000.0, np.float32))])
    d = hidden // heads
    split_shape = init(np.array([1, seq, heads, d], np.int64))
    merge_shape = init(np.array([1, seq, hidden], np.int64))
    for _ in range(layers):
        q, k, v = (node("Transpose", [node("Reshape", [dense(x, hidden, hidden), split_shape])], perm=[0, 2, 1, 3])
                   for _ in range(3))
        kt = node("Transpose", [k], perm=[0, 1, 3, 2])
        s = node("Add", [node("Div", [node("MatMul", [q, kt]), init(np.array(d ** 0.5, np.float32))]), mask])
        p = node("Softmax", [s], axis=-1)
        c = node("Reshape", [node("Transpose", [node("MatMul", [p, v])], perm=[0, 2, 1, 3]), merge_shape])
        x = ln(node("Add", [dense(c, hidden, hidden), x]))
        h = dense(x, hidden, 4 * hidden)
        g = node("Mul", [node("Mul", [h, node("Add", [node("Erf", [node("Div", [h, init(np.array(2 ** 0.5, np.float32))])]),
                                                      init(np.array(1.0, np.float32))])]),
                         init(np.array(0.5, np.float32))])
        x = ln(node("Add", [dense(g, 4 * hidden, hidden), x]))
    nodes[-1].output[0] = "y"
    graph = helper.make_graph(
        nodes, "bert_like",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, seq]),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT64, [1, seq])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, seq, hidden])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    ids = np.random.default_rng(1).integers(0, 1000, (1, seq)).astype(np.int64)
    m = np.ones((1, seq), np.int64)
    m[:, -16:] = 0
    return {"input_ids": ids, "attention_mask": m}


STAND_INS: dict[str, Callable[[Path], dict[str, np.ndarray]]] = {
    "resnet_like": make_resnet_like, "mobilenet_like": make_mobilenet_like, "bert_like": make_bert_like,
    "mlp": make_mlp,
}


# ------------------------------------------------------------------------------ runners
def median_ms(fn: Callable[[], Any], runs: int, warmup: int = 5) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def run_opforge(path: Path, feeds: dict[str, np.ndarray], threads: int, runs: int) -> tuple[float, np.ndarray]:
    import opforge

    core = opforge.Core()
    model = core.read_model(str(path))
    compiled = core.compile_model(model, "CPU", {"INFERENCE_NUM_THREADS": threads})
    req = compiled.create_infer_request()
    out = req.infer(feeds)[0]
    return median_ms(lambda: req.infer(feeds), runs), np.asarray(out)


def run_openvino(path: Path, feeds: dict[str, np.ndarray], threads: int, runs: int) -> tuple[float, np.ndarray]:
    import openvino as ov

    core = ov.Core()
    compiled = core.compile_model(str(path), "CPU", {"INFERENCE_NUM_THREADS": threads, "INFERENCE_PRECISION_HINT": "f32",
                                                     "PERFORMANCE_HINT": "LATENCY", "NUM_STREAMS": 1})
    req = compiled.create_infer_request()
    out = req.infer(feeds)[0]
    return median_ms(lambda: req.infer(feeds), runs), np.asarray(out)


def run_ort(path: Path, feeds: dict[str, np.ndarray], threads: int, runs: int) -> tuple[float, np.ndarray]:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    out = sess.run(None, feeds)[0]
    return median_ms(lambda: sess.run(None, feeds), runs), np.asarray(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", type=Path, help="folder of make_models.py output (resnet18.onnx ...)")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--only", nargs="*", help="model names to run")
    args = ap.parse_args()

    models: dict[str, tuple[Path, dict[str, np.ndarray]]] = {}
    tmp = Path(tempfile.mkdtemp(prefix="opforge-bench-"))
    if args.models:
        for name in ("resnet18", "mobilenet_v2", "bert_small", "mlp"):
            # make_models.py layout: onnx/<m>.onnx and ref/<m>.npz (inputs "in.<name>", output "out")
            onnx_path = next((p for p in (args.models / "onnx" / f"{name}.onnx", args.models / f"{name}.onnx")
                              if p.exists()), None)
            ref = args.models / "ref" / f"{name}.npz"
            if onnx_path is not None and ref.exists():
                data = np.load(ref)
                models[name] = (onnx_path, {k.removeprefix("in."): data[k] for k in data.files
                                            if not k.startswith("out")})
    if not models:
        for name, make in STAND_INS.items():
            p = tmp / f"{name}.onnx"
            models[name] = (p, make(p))
    if args.only:
        models = {k: v for k, v in models.items() if k in args.only}

    runners = {"opforge": run_opforge, "openvino": run_openvino, "onnxruntime": run_ort}
    print(f"{'model':<16}{'thr':>4}" + "".join(f"{k:>14}" for k in runners) + f"{'of/ov':>8}{'of/ort':>8}{'max rel err':>13}")
    for name, (path, feeds) in models.items():
        for t in args.threads:
            res: dict[str, float] = {}
            outs: dict[str, np.ndarray] = {}
            for k, fn in runners.items():
                try:
                    res[k], outs[k] = fn(path, feeds, t, args.runs)
                except Exception as err:  # noqa: BLE001 - one failing engine must not hide the others
                    print(f"  {k} failed on {name}: {type(err).__name__}: {str(err)[:300]}", file=sys.stderr)
            cols = "".join(f"{res[k]:>14.3f}" if k in res else f"{'-':>14}" for k in runners)
            r_ov = f"{res['opforge'] / res['openvino']:>8.2f}" if "opforge" in res and "openvino" in res else f"{'-':>8}"
            r_ort = f"{res['opforge'] / res['onnxruntime']:>8.2f}" if "opforge" in res and "onnxruntime" in res else f"{'-':>8}"
            err = "-"
            if "opforge" in outs and "onnxruntime" in outs:
                a, b = outs["opforge"].astype(np.float64), outs["onnxruntime"].astype(np.float64)
                err = f"{float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-12)):.2e}"
            print(f"{name:<16}{t:>4}{cols}{r_ov}{r_ort}{err:>13}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
