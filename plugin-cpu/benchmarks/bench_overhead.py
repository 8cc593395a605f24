"""Per-inference cost of the CPU device outside its kernels: one-node models, opforge vs ONNX Runtime.

A one-node Relu / Neg / Clip / RMSNormalization model at 4096x4096 f32 (64 MB in, 64 MB out: what
the program pays to take inputs and hand back outputs, and the NaN-preserving Relu/Clip at the
speed of the op), at 128x768 and at 1x64 (the fixed Python + binding cost per call), at 1 thread,
f32. Prints medians (microseconds) of opforge ``InferRequest.infer`` (inputs as a list; ``--dict``:
by name, as ONNX Runtime takes them), ONNX Runtime ``InferenceSession.run`` and the NumPy
expression, engines timed in alternating rounds.

    python plugin-cpu/benchmarks/bench_overhead.py [--runs 20] [--rounds 5] [--shapes 4096x4096 128x768 1x64]
        [--ops Relu RMSNormalization] [--dict]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import onnxruntime as ort
import opforge
from onnx import TensorProto, helper

NUMPY: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "Relu": lambda x: np.maximum(x, 0),
    "Neg": np.negative,
    "Clip": lambda x: np.clip(x, -1.0, 1.0),
    # scale 1 over the last axis, epsilon 1e-5 (ONNX's default)
    "RMSNormalization": lambda x: x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + np.float32(1e-5)),
}


def one_node_model(op: str, shape: tuple[int, ...]) -> bytes:
    inputs = ["x"]
    inits = []
    opset = 17
    if op == "Clip":
        inits = [helper.make_tensor("lo", TensorProto.FLOAT, [], [-1.0]),
                 helper.make_tensor("hi", TensorProto.FLOAT, [], [1.0])]
        inputs += ["lo", "hi"]
    elif op == "RMSNormalization":
        inits = [helper.make_tensor("scale", TensorProto.FLOAT, [shape[-1]], [1.0] * shape[-1])]
        inputs += ["scale"]
        opset = 23
    g = helper.make_graph([helper.make_node(op, inputs, ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(shape))], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    return m.SerializeToString()  # type: ignore[no-any-return]


def engines(req: Any, sess: Any, f: Callable[[np.ndarray], np.ndarray],
            x: np.ndarray, by_name: bool = False) -> dict[str, Callable[[], object]]:
    run: Callable[[], object] = (lambda: req.infer({"x": x})) if by_name else (lambda: req.infer([x]))
    return {"opforge": run, "ort": lambda: sess.run(None, {"x": x}), "numpy": lambda: f(x)}


def timed(fns: dict[str, Callable[[], object]], runs: int, rounds: int) -> dict[str, float]:
    times: dict[str, list[float]] = {k: [] for k in fns}
    for f in fns.values():
        f()  # warm-up: first-touch of arenas, JIT
    per = max(1, runs // rounds)
    for _ in range(rounds):
        for k, f in fns.items():
            for _ in range(per):
                s = time.perf_counter()
                f()
                times[k].append(time.perf_counter() - s)
    return {k: statistics.median(v) * 1e6 for k, v in times.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--shapes", nargs="+", default=["4096x4096", "128x768", "1x64"])
    ap.add_argument("--ops", nargs="+", default=list(NUMPY), choices=list(NUMPY))
    ap.add_argument("--dict", action="store_true", help="opforge's inputs by name, as ONNX Runtime's")
    args = ap.parse_args()
    core = opforge.Core()
    print(f"# median microseconds per call; load average {os.getloadavg()[0]:.1f}")
    print(f"{'model':<28}{'opforge':>10}{'ORT':>10}{'numpy':>10}{'opf/ORT':>9}")
    for text in args.shapes:
        shape = tuple(int(d) for d in text.split("x"))
        x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
        # small models repeat more: their cost is the fixed per-call part
        runs = args.runs if x.size > 1 << 20 else args.runs * 50
        for op in args.ops:
            m = one_node_model(op, shape)
            config = {"INFERENCE_NUM_THREADS": 1, "INFERENCE_PRECISION_HINT": "f32"}
            req = core.compile_model(core.read_model(m), "CPU", config).create_infer_request()
            so = ort.SessionOptions()
            so.intra_op_num_threads = 1
            sess = ort.InferenceSession(m, so, providers=["CPUExecutionProvider"])
            f = NUMPY[op]
            r = timed(engines(req, sess, f, x, args.dict), runs, args.rounds)
            print(f"{op + ' ' + text:<28}{r['opforge']:>10.1f}{r['ort']:>10.1f}{r['numpy']:>10.1f}"
                  f"{r['opforge'] / r['ort']:>9.2f}")


if __name__ == "__main__":
    main()
