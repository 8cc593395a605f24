"""opforge CPU vs OpenVINO (f32) vs ONNX Runtime, side by side, at 1 and 2 threads.

Uses the real benchmark models of ``shared/bench`` when ``--models`` points at them (made by
``make_models.py``); otherwise builds stand-ins with onnx.helper: a ResNet-like CNN (conv + BN +
residual + ReLU), a MobileNetV2-like CNN (depthwise + Clip), an MLP (3 Gemm + ReLU) and a
BERT-like encoder (LayerNormalization, erf GELU, attention). opforge reads the same ONNX file
through its ONNX frontend. Prints the host's CPU, oneDNN ISA and load, then median latencies
(ms, engines timed in alternating rounds) and ratios opforge / peer. Each engine runs in its own
process (``engine_process.py``: in one process ONNX Runtime's spinning workers slow the others
down at 2 threads); ``--same-process`` keeps them together.

``--precision f32`` compares opforge f32 with OpenVINO f32; ``--precision bf16`` compares opforge
with INFERENCE_PRECISION_HINT=bf16 against OpenVINO at its default precision (bf16 on hosts with
bf16 arithmetic, f32 elsewhere; the column says which). ONNX Runtime runs f32 in both. Without
``--precision``: f32, plus bf16 where the host has native bf16.

``--precision int8`` (a default where int8 models exist) runs the QDQ copy ``int8/<m>.onnx`` of a
model (``make_real_models.py --int8``, ``shared/bench/make_int8.py``) on all three engines, the
rest of the graph in f32, and compares opforge's output with ONNX Runtime's int8 output.
``--precision int8dyn`` (a default where such copies exist) does the same with ``int8dyn/<m>.onnx``,
ONNX Runtime's dynamic quantization (``make_real_models.py --int8dyn``: DynamicQuantizeLinear +
MatMulInteger, activation scales computed at run time), its documented int8 recipe for transformers.

``--models-dir`` runs every ``onnx/<m>.onnx`` with its ``ref/<m>.npz`` of a folder made by
``make_real_models.py`` (a held-out set of real models) or ``shared/bench/make_models.py``. Each
row checks opforge's output against ONNX Runtime's (relative and max abs error); models opforge
cannot load or run are listed with their error at the end, with the geometric means of the ratios
and, with ``--profile N``, the top node types by time (ENABLE_PROFILING counters) of opforge and
OpenVINO on the N models slowest against OpenVINO.

    python plugin-cpu/benchmarks/bench_cpu.py [--models /tmp/bench-models] [--threads 1 2] [--runs 50]
        [--precision f32 bf16 int8]
    python plugin-cpu/benchmarks/bench_cpu.py --models-dir /tmp/real-models [--runs 10 --rounds 5] [--profile 6]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # engine_process, also in its children
from engine_process import ROUND_WARMUP, SETTLE_S, EngineProcess, interleaved_medians_remote


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


#: an engine prepared for one model: (infer callable, its first output, resolved precision)
Prepared = tuple[Callable[[], Any], np.ndarray, str]


def prepare_opforge(path: Path, feeds: dict[str, np.ndarray], threads: int, precision: str = "f32") -> Prepared:
    import opforge

    core = opforge.Core()
    model = core.read_model(str(path))
    compiled = core.compile_model(model, "CPU", {"INFERENCE_NUM_THREADS": threads,
                                                 "INFERENCE_PRECISION_HINT": precision})
    req = compiled.create_infer_request()
    out = req.infer(feeds)[0]
    return (lambda: req.infer(feeds)), np.asarray(out), str(compiled.get_property("INFERENCE_PRECISION_HINT"))


#: file -> why OpenVINO cannot be run on it in this process (None: it can), see openvino_crash
_OPENVINO_CRASHES: dict[Path, str | None] = {}


def openvino_crash(path: Path) -> str | None:
    """Why compiling ``path`` kills OpenVINO, found in a child process, else None. OpenVINO
    2026.4.1 segfaults compiling some valid models (the QDQ densenet121 of make_real_models.py
    --int8), which in this process would take every other row of the benchmark down with it."""
    if path not in _OPENVINO_CRASHES:
        code = "import sys, openvino as ov; ov.Core().compile_model(sys.argv[1], 'CPU')"
        done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, check=False)
        # a Python exception (returncode 1) is reported by the real compile below; only signals here
        _OPENVINO_CRASHES[path] = (f"OpenVINO crashed (signal {-done.returncode}) compiling {path}"
                                   if done.returncode < 0 else None)
    return _OPENVINO_CRASHES[path]


def prepare_openvino(path: Path, feeds: dict[str, np.ndarray], threads: int, precision: str | None = "f32") -> Prepared:
    """``precision=None``: OpenVINO's default for this host (bf16 where the CPU has bf16)."""
    import openvino as ov

    crash = openvino_crash(path)
    if crash:
        raise RuntimeError(crash)

    core = ov.Core()
    config: dict[str, Any] = {"INFERENCE_NUM_THREADS": threads, "PERFORMANCE_HINT": "LATENCY", "NUM_STREAMS": 1}
    if precision is not None:
        config["INFERENCE_PRECISION_HINT"] = precision
    compiled = core.compile_model(str(path), "CPU", config)
    req = compiled.create_infer_request()
    out = req.infer(feeds)[0]
    prec = compiled.get_property("INFERENCE_PRECISION_HINT")  # an ov.Type: "f32", "bf16"
    return (lambda: req.infer(feeds)), np.asarray(out), str(getattr(prec, "get_type_name", lambda: prec)())


def prepare_ort(path: Path, feeds: dict[str, np.ndarray], threads: int) -> Prepared:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    out = sess.run(None, feeds)[0]
    return (lambda: sess.run(None, feeds)), np.asarray(out), "f32"


#: engine -> its preparer, for --same-process
LOCAL_PREPARERS: dict[str, Callable[..., Prepared]] = {
    "opforge": prepare_opforge, "openvino": prepare_openvino, "onnxruntime": prepare_ort}


def run_opforge(path: Path, feeds: dict[str, np.ndarray], threads: int, runs: int) -> tuple[float, np.ndarray]:
    fn, out, _ = prepare_opforge(path, feeds, threads)
    return median_ms(fn, runs), out


def run_openvino(path: Path, feeds: dict[str, np.ndarray], threads: int, runs: int) -> tuple[float, np.ndarray]:
    fn, out, _ = prepare_openvino(path, feeds, threads)
    return median_ms(fn, runs), out


def run_ort(path: Path, feeds: dict[str, np.ndarray], threads: int, runs: int) -> tuple[float, np.ndarray]:
    fn, out, _ = prepare_ort(path, feeds, threads)
    return median_ms(fn, runs), out


def interleaved_medians(fns: dict[str, Callable[[], Any]], runs: int, rounds: int = 10,
                        warmup: int = 5, round_warmup: int = ROUND_WARMUP) -> dict[str, float]:
    """Median latency of each engine, timed in alternating rounds (engine A ``runs/rounds``
    times, then B, then C, again...), so load that comes and goes on a shared machine falls on
    every engine alike instead of on whichever ran during a busy spell. Each round of an engine
    starts with ``round_warmup`` untimed runs (engine_process.ROUND_WARMUP says why)."""
    for fn in fns.values():
        for _ in range(warmup):
            fn()
        time.sleep(SETTLE_S)
    per_round = max(1, runs // rounds)
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(rounds):
        for k, fn in fns.items():
            for _ in range(round_warmup):
                fn()
            for _ in range(per_round):
                t0 = time.perf_counter()
                fn()
                times[k].append((time.perf_counter() - t0) * 1e3)
            time.sleep(SETTLE_S)  # let the engine's spinning workers go idle before the next one
    return {k: statistics.median(v) for k, v in times.items()}


#: the /proc/cpuinfo flags that decide which kernels the engines pick
ISA_FLAGS = ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "avx512_bf16", "amx_bf16", "amx_int8")


def isa_flags() -> str:
    """The ISA_FLAGS this host's /proc/cpuinfo lists (what makes a row comparable to another host's)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            flags = set(next((ln.split(":", 1)[1].split() for ln in f if ln.startswith("flags")), []))
    except OSError:
        return "unknown (no /proc/cpuinfo)"
    return " ".join(fl for fl in ISA_FLAGS if fl in flags) or "none of " + " ".join(ISA_FLAGS)


def host_header() -> str:
    """CPU model, the ISA oneDNN dispatches to (what decides f32/bf16 speed) and the load."""
    import platform

    from opforge_cpu._loader import load_core

    core = load_core()
    model = platform.processor() or "CPU"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            model = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), model)
    except OSError:
        pass
    load = " ".join(f"{v:.2f}" for v in os.getloadavg())
    return (f"# host: {model}; flags: {isa_flags()}; oneDNN {core.onednn_version()} ISA {core.cpu_isa()}; "
            f"native bf16: {'yes' if core.native_bf16() else 'no'}; {os.cpu_count()} CPUs; load average {load}")


#: the quantized modes: precision -> the subfolder of its copies (they take the f32 model's inputs)
QUANTIZED = {"int8": "int8", "int8dyn": "int8dyn"}


def default_precisions(have_int8: bool, have_int8dyn: bool = False) -> list[str]:
    """Every mode this host can run: f32, bf16 where the CPU has bf16 arithmetic, int8 / int8dyn
    where such models were given."""
    from opforge_cpu._loader import load_core

    return ["f32", *(["bf16"] if load_core().native_bf16() else []), *(["int8"] if have_int8 else []),
            *(["int8dyn"] if have_int8dyn else [])]


def int8_files(folder: Path, names: list[str], mode: str = "int8") -> dict[str, Path]:
    """The quantized copies ``<mode>/<m>.onnx`` of the models ``names`` that have one: ``int8``
    the QDQ copies (make_real_models.py --int8, shared/bench make_int8.py), ``int8dyn`` ONNX
    Runtime's dynamic quantization (make_real_models.py --int8dyn)."""
    sub = QUANTIZED[mode]
    return {n: folder / sub / f"{n}.onnx" for n in names if (folder / sub / f"{n}.onnx").exists()}


def models_in(folder: Path) -> dict[str, tuple[Path, dict[str, np.ndarray]]]:
    """Every ``onnx/<m>.onnx`` of a make_real_models.py / make_models.py folder that has its
    ``ref/<m>.npz`` (inputs saved as ``in.<name>``), in file-name order."""
    found: dict[str, tuple[Path, dict[str, np.ndarray]]] = {}
    for onnx_path in sorted((folder / "onnx").glob("*.onnx")):
        ref = folder / "ref" / f"{onnx_path.stem}.npz"
        if not ref.exists():
            print(f"  {onnx_path} skipped: no {ref}", file=sys.stderr)
            continue
        data = np.load(ref)
        found[onnx_path.stem] = (onnx_path, {k.removeprefix("in."): data[k] for k in data.files
                                             if k.startswith("in.")})
    return found


def top_node_types(rows: list[tuple[str, float]], top: int) -> str:
    """``Type ms (share)`` of the ``top`` node types with the most time, from (type, ms) rows."""
    by_type: dict[str, float] = {}
    for node_type, ms in rows:
        by_type[node_type] = by_type.get(node_type, 0.0) + ms
    total = sum(by_type.values()) or 1.0
    ranked = sorted(by_type.items(), key=lambda kv: -kv[1])[:top]
    return ", ".join(f"{t} {ms:.2f} ({100 * ms / total:.0f}%)" for t, ms in ranked) + f"; total {total:.2f} ms"


def profile_opforge(path: Path, feeds: dict[str, np.ndarray], threads: int, runs: int = 5,
                    precision: str = "f32") -> list[tuple[str, float]]:
    """(node type, ms) of opforge's executed rows, the median run of ``runs``; ``precision`` the
    row's mode (the quantized modes run their copy with the f32 hint, as the table times them)."""
    import opforge

    core = opforge.Core()
    # f32 unless asked, as OpenVINO's profile below (the CPU's default is bf16 on bf16 hosts)
    compiled = core.compile_model(core.read_model(str(path)), "CPU",
                                  {"INFERENCE_NUM_THREADS": threads, "ENABLE_PROFILING": True,
                                   "INFERENCE_PRECISION_HINT": "f32" if precision in QUANTIZED else precision})
    req = compiled.create_infer_request()
    samples = []
    for _ in range(runs):
        req.infer(feeds)
        rows = [(r.node_type, r.real_time_ms) for r in req.get_profiling_info() if r.status == "EXECUTED"]
        samples.append((sum(ms for _, ms in rows), rows))
    return sorted(samples, key=lambda s: s[0])[len(samples) // 2][1]


def profile_openvino(path: Path, feeds: dict[str, np.ndarray], threads: int, runs: int = 5,
                     precision: str = "f32") -> list[tuple[str, float]]:
    """(node type, ms) of OpenVINO's executed rows, the median run of ``runs``: f32, or for
    ``precision="bf16"`` OpenVINO's default precision, as the bf16 rows of the table time it."""
    import openvino as ov

    crash = openvino_crash(path)
    if crash:
        raise RuntimeError(crash)

    config: dict[str, Any] = {"INFERENCE_NUM_THREADS": threads, "PERFORMANCE_HINT": "LATENCY", "NUM_STREAMS": 1,
                              "PERF_COUNT": True}
    if precision != "bf16":
        config["INFERENCE_PRECISION_HINT"] = "f32"
    compiled = ov.Core().compile_model(str(path), "CPU", config)
    req = compiled.create_infer_request()
    samples = []
    for _ in range(runs):
        req.infer(feeds)
        rows = [(r.node_type, r.real_time.total_seconds() * 1e3) for r in req.profiling_info
                if r.status == ov.ProfilingInfo.Status.EXECUTED]
        samples.append((sum(ms for _, ms in rows), rows))
    return sorted(samples, key=lambda s: s[0])[len(samples) // 2][1]


def maxabs(a: np.ndarray, b: np.ndarray) -> str:
    if a.shape != b.shape:
        return f"shape {a.shape} vs {b.shape}"
    return f"{float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)), initial=0.0)):.1e}"


def relerr(a: np.ndarray, b: np.ndarray) -> str:
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    return f"{float(np.max(np.abs(a64 - b64)) / max(np.max(np.abs(b64)), 1e-12)):.2e}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", type=Path, help="folder of make_models.py output (resnet18.onnx ...)")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--runs", type=int, default=50, help="timed runs per engine (split over --rounds)")
    ap.add_argument("--rounds", type=int, default=10, help="alternating rounds the runs are split into")
    ap.add_argument("--round-warmup", type=int, default=ROUND_WARMUP, metavar="N",
                    help=f"untimed runs at the start of each engine's round (default {ROUND_WARMUP}; 0 times "
                         "the first run after the pause between engines, which finds the vCPUs halted)")
    ap.add_argument("--models-dir", type=Path, help="every onnx/<m>.onnx + ref/<m>.npz of a folder "
                    "(make_real_models.py or make_models.py output)")
    ap.add_argument("--precision", nargs="+", choices=["f32", "bf16", "int8", "int8dyn"],
                    help="f32: opforge f32 vs OpenVINO f32; bf16: opforge bf16 vs OpenVINO's default "
                         "precision (bf16 on hosts with bf16), ONNX Runtime f32; int8: the QDQ copy "
                         "int8/<m>.onnx on all three engines (the rest of the graph in f32); int8dyn: the "
                         "dynamically quantized copy int8dyn/<m>.onnx, likewise. Default: f32, bf16 where "
                         "the host has native bf16, int8 / int8dyn where such models exist.")
    ap.add_argument("--profile", type=int, default=0, metavar="N",
                    help="top node types by time, opforge and OpenVINO at the first thread count, of "
                         "the N models slowest against the faster peer, in --profile-precision")
    ap.add_argument("--profile-precision", choices=["f32", "bf16", "int8", "int8dyn"], default="f32",
                    help="the rows --profile ranks and profiles (default f32; it must be one of --precision)")
    ap.add_argument("--only", nargs="*", help="model names to run")
    ap.add_argument("--same-process", action="store_true",
                    help="time all three engines in this process (their thread pools then compete: "
                         "ONNX Runtime's spinning workers slow the others down at 2 threads)")
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
    if args.models_dir:
        models.update(models_in(args.models_dir))
    if not models:
        for name, make in STAND_INS.items():
            p = tmp / f"{name}.onnx"
            models[name] = (p, make(p))
    if args.only:
        models = {k: v for k, v in models.items() if k in args.only}
    # precision -> model -> its quantized copy
    quantized = {mode: {**(int8_files(args.models, list(models), mode) if args.models else {}),
                        **(int8_files(args.models_dir, list(models), mode) if args.models_dir else {})}
                 for mode in QUANTIZED}

    args.precision = args.precision or default_precisions(bool(quantized["int8"]), bool(quantized["int8dyn"]))
    failures: dict[str, str] = {}  # "model engine precision" -> the error, listed at the end
    ratios: dict[tuple[str, int, str], list[float]] = {}  # (precision, threads, peer) -> opforge/peer
    of_vs_ov: dict[str, float] = {}  # model -> opforge / OpenVINO f32 at the first thread count
    print(host_header())
    # each engine in its own process unless asked otherwise: see engine_process.py for why
    procs = {} if args.same_process else {k: EngineProcess(k) for k in ("opforge", "openvino", "onnxruntime")}
    print(f"# median of {args.runs} runs per engine in {args.rounds} alternating rounds, each round after "
          f"{args.round_warmup} untimed run(s); ms")
    width = max([14, *(len(n) + 1 for n in models)])
    print(f"{'model':<{width}}{'prec':>6}{'thr':>4}{'opforge':>10}{'openvino':>14}{'onnxrt':>12}"
          f"{'of/ov':>8}{'of/ort':>8}{'err vs ort':>12}{'maxabs':>9}{'load':>6}")
    for name, (path, feeds) in models.items():
        for prec in args.precision:
            if prec in QUANTIZED and name not in quantized[prec]:
                continue
            run_path = quantized[prec][name] if prec in QUANTIZED else path
            for t in args.threads:
                prepared: dict[str, Prepared] = {}
                extra: dict[str, tuple[Any, ...]] = {
                    # int8 rows: the QDQ graph decides what runs in int8; the rest in f32 everywhere
                    "opforge": ("f32" if prec in QUANTIZED else prec,),
                    # bf16 rows: OpenVINO at its own default precision, not forced
                    "openvino": (None if prec == "bf16" else "f32",),
                    "onnxruntime": (),
                }
                for k, more in extra.items():
                    try:
                        if procs:
                            out, got = procs[k].prepare(run_path, feeds, t, *more)
                            prepared[k] = (procs[k].drop, out, got)  # the callable is unused: timed remotely
                        else:
                            prepared[k] = LOCAL_PREPARERS[k](run_path, feeds, t, *more)
                    except Exception as err:  # noqa: BLE001 - one failing engine must not hide the others
                        print(f"  {k} failed on {name}: {type(err).__name__}: {str(err)[:300]}", file=sys.stderr)
                        failures[f"{name} {k} {prec}"] = f"{type(err).__name__}: {err}"
                if procs:
                    res = interleaved_medians_remote({k: procs[k] for k in prepared}, args.runs, args.rounds,
                                                     round_warmup=args.round_warmup)
                else:
                    res = interleaved_medians({k: v[0] for k, v in prepared.items()}, args.runs, args.rounds,
                                              round_warmup=args.round_warmup)
                ov_prec = prepared["openvino"][2] if "openvino" in prepared else "-"
                cols = "".join(f"{res[k]:>10.3f}" if k in res else f"{'-':>10}" for k in ["opforge"])
                cols += f"{res['openvino']:>8.3f} {ov_prec:<5}" if "openvino" in res else f"{'-':>14}"
                cols += f"{res['onnxruntime']:>12.3f}" if "onnxruntime" in res else f"{'-':>12}"
                r_ov = f"{res['opforge'] / res['openvino']:>8.2f}" if "opforge" in res and "openvino" in res else f"{'-':>8}"
                r_ort = (f"{res['opforge'] / res['onnxruntime']:>8.2f}" if "opforge" in res and "onnxruntime" in res
                         else f"{'-':>8}")
                both = "opforge" in prepared and "onnxruntime" in prepared
                rel = relerr(prepared["opforge"][1], prepared["onnxruntime"][1]) if both else "-"
                diff = maxabs(prepared["opforge"][1], prepared["onnxruntime"][1]) if both else "-"
                for peer in ("openvino", "onnxruntime"):
                    if "opforge" in res and peer in res:
                        ratios.setdefault((prec, t, peer), []).append(res["opforge"] / res[peer])
                if "opforge" in res and "openvino" in res and "onnxruntime" in res:
                    best = min(res["openvino"], res["onnxruntime"])
                    ratios.setdefault((prec, t, "the better peer"), []).append(res["opforge"] / best)
                peers = [res[k] for k in ("openvino", "onnxruntime") if k in res]
                if prec == args.profile_precision and t == args.threads[0] and "opforge" in res and peers:
                    of_vs_ov[name] = res["opforge"] / min(peers)
                of_prec = prepared["opforge"][2] if "opforge" in prepared and prec not in QUANTIZED else prec
                print(f"{name:<{width}}{of_prec:>6}{t:>4}{cols}{r_ov}{r_ort}{rel:>12}{diff:>9}"
                      f"{os.getloadavg()[0]:>6.1f}", flush=True)
                prepared.clear()
    for proc in procs.values():
        proc.close()
    if args.profile_precision in QUANTIZED:  # profile the quantized copies the rows ran
        models = {n: (quantized[args.profile_precision].get(n, p), f) for n, (p, f) in models.items()}
    print_summary(models, args, failures, ratios, of_vs_ov)
    return 0


def print_summary(models: dict[str, tuple[Path, dict[str, np.ndarray]]], args: argparse.Namespace,
                  failures: dict[str, str], ratios: dict[tuple[str, int, str], list[float]],
                  of_vs_ov: dict[str, float]) -> None:
    """Geometric means of the ratios, the failures, and the profiles of the slowest models
    (``of_vs_ov``: model -> opforge / the faster peer, ``--profile-precision``, first thread count)."""
    print("\n# geometric mean of opforge / peer (rows where both ran)")
    for (prec, t, peer), rs in sorted(ratios.items()):
        slower = sum(r > 1.0 for r in rs)
        print(f"  {prec} {t} thr vs {peer}: {float(np.exp(np.mean(np.log(rs)))):.2f}x over {len(rs)} models, "
              f"opforge slower on {slower}")
    print(f"\n# failures: {len(failures) or 'none'}")
    for what, err in failures.items():
        print(f"  {what}: {err[:500]}")
    if args.profile:
        t = args.threads[0]
        prec = args.profile_precision
        worst = sorted(of_vs_ov, key=lambda m: -of_vs_ov[m])[:args.profile]
        print(f"\n# top node types by time, {prec} {t} thread(s), the {len(worst)} models slowest against "
              "the faster peer")
        for name in worst:
            path, feeds = models[name]
            print(f"  {name} (opforge/the faster peer {of_vs_ov[name]:.2f}x)")
            for engine, fn in (("opforge", profile_opforge), ("openvino", profile_openvino)):
                try:
                    print(f"    {engine:<9}{top_node_types(fn(path, feeds, t, precision=prec), 5)}", flush=True)
                except Exception as err:  # noqa: BLE001 - a profile that fails must not hide the others
                    print(f"    {engine:<9}profiling failed: {type(err).__name__}: {str(err)[:300]}")


if __name__ == "__main__":
    sys.exit(main())
