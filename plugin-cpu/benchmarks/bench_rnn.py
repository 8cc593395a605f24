"""Recurrent text models on CPU: opforge vs OpenVINO (f32) vs ONNX Runtime, at 1 and 2 threads.

Two models built with onnx.helper (seeded random weights, nothing downloaded), each in a small
and a large size:

* ``gru2``: token ids -> embedding (Gather) -> GRU -> GRU -> last hidden state -> Gemm;
* ``bilstm``: token ids -> embedding -> bidirectional LSTM -> mean over time -> Gemm.

Each row is the median latency (ms) of ``--runs`` inferences per engine, the engines timed in
alternating rounds (see bench_cpu.interleaved_medians), the ratios opforge / peer, and the largest
difference of opforge's output from ONNX Runtime's. ``--core PATH`` runs opforge with another
build of its executor (``_core*.so``), e.g. one built from an earlier commit, for before/after
figures; its ``libopforge_dnnl.so.3`` must lie next to it.

    python plugin-cpu/benchmarks/bench_rnn.py [--threads 1 2] [--runs 20] [--sizes small large]
        [--engines opforge openvino onnxruntime] [--core /path/to/_core.so]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_cpu import host_header, interleaved_medians, prepare_openvino, prepare_opforge, prepare_ort

VOCAB, EMBED, CLASSES = 1000, 128, 10
#: size name -> (batch, seq, hidden)
SIZES = {"small": (1, 32, 128), "large": (8, 128, 256)}


def _u(rng: np.random.Generator, *shape: int, scale: float) -> np.ndarray:
    return rng.uniform(-scale, scale, size=shape).astype(np.float32)


def make_model(kind: str, batch: int, seq: int, hidden: int, path: Path) -> dict[str, np.ndarray]:
    """Writes the ONNX model; returns its feeds."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    inits: list[Any] = []
    nodes: list[Any] = []

    def init(name: str, arr: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(arr, name))
        return name

    s = 1.0 / np.sqrt(hidden)
    # ids [seq, batch] (ONNX recurrent layout 0: time first) -> x [seq, batch, EMBED]
    nodes.append(helper.make_node("Gather", [init("embed", _u(rng, VOCAB, EMBED, scale=1.0)), "ids"], ["x"]))
    if kind == "gru2":
        x, width = "x", EMBED
        for layer in range(2):
            w = init(f"W{layer}", _u(rng, 1, 3 * hidden, width, scale=s))
            r = init(f"R{layer}", _u(rng, 1, 3 * hidden, hidden, scale=s))
            b = init(f"B{layer}", _u(rng, 1, 6 * hidden, scale=s))
            nodes.append(helper.make_node("GRU", [x, w, r, b], [f"y{layer}", f"h{layer}"], hidden_size=hidden,
                                          linear_before_reset=1))
            nodes.append(helper.make_node("Squeeze", [f"y{layer}", init(f"ax{layer}", np.array([1], np.int64))],
                                          [f"x{layer}"]))
            x, width = f"x{layer}", hidden
        nodes.append(helper.make_node("Squeeze", ["h1", init("ax_h", np.array([0], np.int64))], ["feat"]))
        feat_width = hidden
    elif kind == "bilstm":
        w = init("W", _u(rng, 2, 4 * hidden, EMBED, scale=s))
        r = init("R", _u(rng, 2, 4 * hidden, hidden, scale=s))
        b = init("B", _u(rng, 2, 8 * hidden, scale=s))
        nodes.append(helper.make_node("LSTM", ["x", w, r, b], ["y"], hidden_size=hidden, direction="bidirectional"))
        # y [seq, 2, batch, hidden] -> [seq, batch, 2 * hidden] -> mean over time
        nodes.append(helper.make_node("Transpose", ["y"], ["yt"], perm=[0, 2, 1, 3]))
        nodes.append(helper.make_node("Reshape", ["yt", init("shape", np.array([seq, batch, 2 * hidden], np.int64))],
                                      ["y2"]))
        nodes.append(helper.make_node("ReduceMean", ["y2"], ["feat"], axes=[0], keepdims=0))
        feat_width = 2 * hidden
    else:
        raise ValueError(f"unknown model kind {kind!r} (gru2, bilstm)")
    nodes.append(helper.make_node("Gemm", ["feat", init("Wc", _u(rng, feat_width, CLASSES, scale=s)),
                                           init("bc", _u(rng, CLASSES, scale=s))], ["logits"]))
    graph = helper.make_graph(nodes, kind, [helper.make_tensor_value_info("ids", TensorProto.INT64, [seq, batch])],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [batch, CLASSES])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return {"ids": rng.integers(0, VOCAB, size=(seq, batch)).astype(np.int64)}


def use_core(path: Path) -> None:
    """Makes ``opforge_cpu._core`` the extension module at ``path`` (before anything imports it)."""
    import importlib.machinery
    import importlib.util

    os.environ.setdefault("GOMP_SPINCOUNT", "300")  # as opforge_cpu._loader does
    loader = importlib.machinery.ExtensionFileLoader("opforge_cpu._core", str(path))
    spec = importlib.util.spec_from_file_location("opforge_cpu._core", str(path), loader=loader)
    if spec is None:
        raise SystemExit(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    sys.modules["opforge_cpu._core"] = module


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--sizes", nargs="+", default=list(SIZES), choices=list(SIZES))
    ap.add_argument("--models", nargs="+", default=["gru2", "bilstm"], choices=["gru2", "bilstm"])
    ap.add_argument("--engines", nargs="+", default=["opforge", "openvino", "onnxruntime"],
                    choices=["opforge", "openvino", "onnxruntime"])
    ap.add_argument("--core", type=Path, help="another build of opforge_cpu._core to run opforge with")
    args = ap.parse_args()
    if args.core:
        use_core(args.core)
    print(host_header())
    if args.core:
        print(f"# opforge executor: {args.core}")
    head = (f"{'model':<16}{'thr':>4}" + "".join(f"{e:>13}" for e in args.engines) +
            f"{'/ov':>7}{'/ort':>7}{'max|d| ort':>12}")
    print(head)
    preparers = {"opforge": prepare_opforge, "openvino": prepare_openvino, "onnxruntime": prepare_ort}
    with tempfile.TemporaryDirectory() as tmp:
        for kind in args.models:
            for size in args.sizes:
                batch, seq, hidden = SIZES[size]
                name = f"{kind}_{size}"
                path = Path(tmp) / f"{name}.onnx"
                feeds = make_model(kind, batch, seq, hidden, path)
                for t in args.threads:
                    prepared = {e: preparers[e](path, feeds, t) for e in args.engines}  # type: ignore[operator]
                    res = interleaved_medians({e: p[0] for e, p in prepared.items()}, args.runs,
                                              rounds=min(args.runs, 5), warmup=2)
                    row = f"{name:<16}{t:>4}" + "".join(f"{res[e]:>13.3f}" for e in args.engines)
                    for peer in ("openvino", "onnxruntime"):
                        ok = "opforge" in res and peer in res
                        row += f"{res['opforge'] / res[peer]:>7.2f}" if ok else f"{'-':>7}"
                    if "opforge" in prepared and "onnxruntime" in prepared:
                        diff = float(np.max(np.abs(prepared["opforge"][1] - prepared["onnxruntime"][1])))
                        row += f"{diff:>12.1e}"
                    print(row, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
