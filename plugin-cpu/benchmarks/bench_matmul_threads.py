"""Does a second thread pay for a MatMul? Transformer MatMul shapes at 1 and 2 threads, with a
control that says whether the host gave the second thread a CPU while they were timed.

Each shape ``B,M,K,N`` becomes a one-MatMul ONNX model built with onnx.helper (seeded data):
B = 1 is a projection, ``x[1, M, K] @ W[K, N] + b`` with constant weights (packed once, as in a
real model); B > 1 is an attention product of two run-time inputs, ``x[1, B, M, K] @ y[1, B, K, N]``.
Every shape is compiled at 1 and 2 threads in this process, and the inferences are interleaved
(rounds over every shape and thread count), so load that comes and goes falls on all of them; a
row is the MatMul's profiled node time (ENABLE_PROFILING), min and median over the runs.

The control is a large f32 MatMul (``--control``, ~270 M multiply-adds by default) timed in the
same rounds: on a host where the second thread gets a CPU it runs in ~0.5-0.6x the 1-thread time
at 2 threads. When the control's 2/1 ratio is near 1.0, the rows above say nothing about
oneDNN's 2-thread kernels, only that the host was busy (this 2-vCPU host shared by other
tenants often is: docs/kernel-library.md, "bf16 transformers at 2 threads").

Each model's output is checked against NumPy (f32) before timing: the error column.

    python plugin-cpu/benchmarks/bench_matmul_threads.py [--precision bf16] [--rounds 20 --runs 5]
        [--shapes 1,197,192,576 3,197,64,197 ...] [--control 1,256,1024,1024]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

#: DeiT-tiny / ViT-tiny (197 tokens, width 192, 3 heads), BERT-small (128 x 256, 4 heads),
#: RoBERTa-small (512 wide), DistilBERT (768 wide, 12 heads), Whisper-tiny's encoder (500 x 384)
TRANSFORMER_SHAPES = [
    "1,197,192,576", "1,197,192,192", "1,197,192,768", "1,197,768,192", "3,197,64,197", "3,197,197,64",
    "1,128,256,256", "1,128,256,1024", "1,128,1024,256", "4,128,64,128", "4,128,128,64",
    "1,128,512,512", "1,128,512,2048", "1,128,2048,512", "8,128,64,128",
    "1,128,768,768", "1,128,768,3072", "1,128,3072,768", "12,128,64,128",
    "1,500,384,384", "1,500,384,1536", "6,500,64,500",
]
CONTROL = "1,256,1024,1024"


def parse_shape(text: str) -> tuple[int, int, int, int]:
    parts = text.split(",")
    if len(parts) != 4 or not all(p.strip().isdigit() and int(p) > 0 for p in parts):
        raise ValueError(f"shape {text!r}: expected four positive integers B,M,K,N")
    b, m, k, n = (int(p) for p in parts)
    return b, m, k, n


def make_matmul(path: Path, shape: tuple[int, int, int, int], seed: int = 0) -> dict[str, np.ndarray]:
    """The model of one shape (see the module's docstring); returns its feeds."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    b, m, k, n = shape
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((1, b, m, k) if b > 1 else (1, m, k)).astype(np.float32)
    feeds = {"x": x}
    if b > 1:
        y = (rng.standard_normal((1, b, k, n)) / k**0.5).astype(np.float32)
        feeds["y"] = y
        nodes = [helper.make_node("MatMul", ["x", "y"], ["out"])]
        inits: list[Any] = []
        inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape)),
                  helper.make_tensor_value_info("y", TensorProto.FLOAT, list(y.shape))]
    else:
        w = (rng.standard_normal((k, n)) / k**0.5).astype(np.float32)
        bias = (rng.standard_normal(n) * 0.1).astype(np.float32)
        nodes = [helper.make_node("MatMul", ["x", "w"], ["xw"]), helper.make_node("Add", ["xw", "bias"], ["out"])]
        inits = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(bias, "bias")]
        inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))]
    graph = helper.make_graph(nodes, "matmul", inputs, [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)],
                              inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return feeds


def reference(path: Path, feeds: dict[str, np.ndarray]) -> np.ndarray:
    """NumPy's product (f32 data, f64 sums) of the model at ``path``."""
    import onnx
    from onnx import numpy_helper

    consts = {i.name: numpy_helper.to_array(i) for i in onnx.load(str(path)).graph.initializer}
    x = feeds["x"].astype(np.float64)
    if "y" in feeds:
        return x @ feeds["y"].astype(np.float64)
    return x @ consts["w"].astype(np.float64) + consts["bias"]


@dataclass
class Row:
    shape: str
    precision: str
    times: dict[int, list[float]] = field(default_factory=lambda: {1: [], 2: []})  # MatMul node ms
    exec_type: dict[int, str] = field(default_factory=dict)
    error: float = 0.0  # max |opforge - NumPy| / max |NumPy|, worst of both thread counts

    def ratio(self, stat: str) -> float:
        f = min if stat == "min" else statistics.median
        return f(self.times[2]) / f(self.times[1])


def _matmul_ms(req: Any) -> tuple[float, str]:
    rows = [r for r in req.get_profiling_info() if r.status == "EXECUTED" and r.node_type == "MatMul"]
    if not rows:
        raise RuntimeError("the compiled model ran no MatMul step")
    return sum(r.real_time_ms for r in rows), rows[0].exec_type


def measure(shapes: list[str], precision: str, rounds: int, runs: int, control: str = CONTROL,
            workdir: Path | None = None) -> tuple[list[Row], Row]:
    """Rows of ``shapes`` in ``precision`` and the f32 control, timed in the same rounds."""
    import opforge

    core = opforge.Core()
    with tempfile.TemporaryDirectory() as tmp:
        folder = workdir or Path(tmp)
        rows = [Row(s, precision) for s in shapes] + [Row(control, "f32")]
        reqs: list[tuple[Row, int, Any, dict[str, np.ndarray]]] = []
        for i, row in enumerate(rows):
            path = folder / f"matmul{i}.onnx"
            feeds = make_matmul(path, parse_shape(row.shape), seed=i)
            want = reference(path, feeds)
            scale = float(np.abs(want).max()) or 1.0
            for threads in (1, 2):
                compiled = core.compile_model(core.read_model(str(path)), "CPU", {
                    "INFERENCE_NUM_THREADS": threads, "ENABLE_PROFILING": True,
                    "INFERENCE_PRECISION_HINT": row.precision})
                req = compiled.create_infer_request()
                got = np.asarray(req.infer(feeds).to_tuple()[0])
                row.error = max(row.error, float(np.abs(got - want).max()) / scale)
                row.exec_type[threads] = _matmul_ms(req)[1]
                reqs.append((row, threads, req, feeds))
        for _ in range(rounds):
            for row, threads, req, feeds in reqs:
                for _ in range(runs):
                    req.infer(feeds)
                    row.times[threads].append(_matmul_ms(req)[0])
    return rows[:-1], rows[-1]


def macs(shape: str) -> float:
    b, m, k, n = parse_shape(shape)
    return float(b * m * k * n)


def report(rows: list[Row], control: Row) -> list[str]:
    lines = [f"{'shape B,M,K,N':>16} {'prec':>4} {'MMAC':>6} {'exec (2 thr)':>22} "
             f"{'1thr min':>8} {'med':>7} {'2thr min':>8} {'med':>7} {'2/1 min':>7} {'med':>5} {'error':>8}"]
    for r in [*rows, control]:
        lines.append(f"{r.shape:>16} {r.precision:>4} {macs(r.shape) / 1e6:6.1f} {r.exec_type[2][:22]:>22} "
                     f"{min(r.times[1]) * 1e3:8.1f} {statistics.median(r.times[1]) * 1e3:7.1f} "
                     f"{min(r.times[2]) * 1e3:8.1f} {statistics.median(r.times[2]) * 1e3:7.1f} "
                     f"{r.ratio('min'):7.2f} {r.ratio('median'):5.2f} {r.error:8.1e}")
    usable = control.ratio("median") < 0.75
    lines.append(f"control (last row, f32) 2/1 = {control.ratio('median'):.2f}: " + (
        "the second thread had a CPU; the 2/1 ratios above are the kernels'" if usable else
        "the second thread did not get a CPU for most of the run; the 2/1 ratios above measure the host, "
        "not the kernels"))
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapes", nargs="+", default=TRANSFORMER_SHAPES, help="B,M,K,N of each MatMul")
    ap.add_argument("--precision", choices=["bf16", "f32"], default="bf16")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--runs", type=int, default=5, help="inferences a model and thread count per round")
    ap.add_argument("--control", default=CONTROL, help="B,M,K,N of the f32 control MatMul")
    args = ap.parse_args()
    for s in [*args.shapes, args.control]:
        parse_shape(s)  # a bad shape fails before anything is built
    rows, control = measure(args.shapes, args.precision, args.rounds, args.runs, args.control)
    print(f"load {os.getloadavg()[0]:.1f}, {args.rounds} rounds x {args.runs} runs, MatMul node times in us")
    print("\n".join(report(rows, control)))


if __name__ == "__main__":
    main()
