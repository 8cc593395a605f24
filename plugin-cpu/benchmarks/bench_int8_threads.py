"""Why int8 convolutions get slower at 2 threads: per-convolution times at 1 and 2 threads, opforge
vs OpenVINO, and how often opforge's OpenMP threads fall asleep in an inference.

Builds chains of identical QDQ convolutions with onnx.helper (seeded weights; Inception-v3's
shapes by default: 3x3 over 192 channels at 17x17, 1x1 over 288 at 35x35 and over 768 at 17x17,
3x3 over 80 at 71x71), or takes a real QDQ model (``--model``, its inputs from ``--feeds``, an
.npz of ``in.<name>`` arrays as make_real_models.py writes them). Each engine runs in its own
process: a 1-thread and a 2-thread compiled model, their inferences interleaved (so load that
comes and goes falls on both), per node the median of ``--runs`` profiled inferences
(ENABLE_PROFILING / PERF_COUNT). For opforge it also counts the voluntary context switches of the
process's threads per inference at 2 threads (/proc/self/task/*/status): each is a thread that
stopped spinning and slept in a futex (an OpenMP barrier or the pool's dock), which the next
fork or join pays as a wake-up. ``--spincounts`` repeats opforge under several
``GOMP_SPINCOUNT`` values.

    python plugin-cpu/benchmarks/bench_int8_threads.py [--runs 30] [--spincounts 300 3000]
    python plugin-cpu/benchmarks/bench_int8_threads.py --model /tmp/real-models/int8/inception_v3.onnx \
        --feeds /tmp/real-models/ref/inception_v3.npz

The host is shared: quote ratios from one run (see docs/kernel-library.md, "int8 at 2 threads").
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

#: chain name -> (channels, height = width, kernel size)
CHAINS = {"c192_17_3x3": (192, 17, 3), "c288_35_1x1": (288, 35, 1), "c768_17_1x1": (768, 17, 1),
          "c80_71_3x3": (80, 71, 3)}
DEPTH = 6  # convolutions per chain


def make_chain(path: Path, channels: int, hw: int, k: int, seed: int = 0) -> dict[str, np.ndarray]:
    """x -> QDQ -> DEPTH x (Conv -> Relu -> QDQ): every convolution runs on int8 bytes."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    inits: list[Any] = []
    nodes: list[Any] = []

    def qdq(name: str, src: str, scale: float, zero: int) -> str:
        inits.extend([numpy_helper.from_array(np.array(scale, np.float32), f"{name}_s"),
                      numpy_helper.from_array(np.array(zero, np.uint8), f"{name}_z")])
        nodes.append(helper.make_node("QuantizeLinear", [src, f"{name}_s", f"{name}_z"], [f"{name}_q"]))
        nodes.append(helper.make_node("DequantizeLinear", [f"{name}_q", f"{name}_s", f"{name}_z"], [f"{name}_d"]))
        return f"{name}_d"

    x = qdq("x", "x", 0.02, 128)
    # He-scaled weights (real scale 0.001): the activations keep their spread down the chain
    spread = np.sqrt(2.0 / (channels * k * k)) / 0.001
    for i in range(DEPTH):
        w = np.round(rng.standard_normal((channels, channels, k, k)) * spread).clip(-127, 127).astype(np.int8)
        inits.extend([numpy_helper.from_array(w, f"w{i}_q"), numpy_helper.from_array(np.array(0.001, np.float32), f"w{i}_s"),
                      numpy_helper.from_array(np.array(0, np.int8), f"w{i}_z")])
        nodes.append(helper.make_node("DequantizeLinear", [f"w{i}_q", f"w{i}_s", f"w{i}_z"], [f"w{i}"]))
        nodes.append(helper.make_node("Conv", [x, f"w{i}"], [f"c{i}"], name=f"Conv.{i}", kernel_shape=[k, k],
                                      pads=[k // 2] * 4))
        nodes.append(helper.make_node("Relu", [f"c{i}"], [f"r{i}"]))
        x = qdq(f"r{i}", f"r{i}", 0.05, 0)
    shape = [1, channels, hw, hw]
    graph = helper.make_graph(nodes, "int8_chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info(x, TensorProto.FLOAT, shape)], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return {"x": np.random.default_rng(seed + 1).standard_normal(shape).astype(np.float32)}


def conv_key(names: list[str]) -> str | None:
    """The ONNX convolution a profiling row ran (opforge: among its fused nodes; OpenVINO: its
    name), as ``Conv.<n>``: the exporters' and make_chain's names."""
    for name in names:
        m = re.match(r"(Conv\.\d+)[/_]", name + "/")
        if m:
            return m.group(1)
    return None


def voluntary_switches() -> int:
    total = 0
    for tid in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{tid}/status") as f:
            for line in f:
                if line.startswith("voluntary_ctxt_switches:"):
                    total += int(line.split()[1])
    return total


def child(engine: str, path: str, feeds_path: str, runs: int) -> dict[str, Any]:
    """In this process: per-convolution medians (ms) at 1 and 2 threads, their runs interleaved."""
    feeds = dict(np.load(feeds_path))
    profiled: dict[int, Any] = {}
    for threads in (1, 2):
        if engine == "opforge":
            import opforge

            core = opforge.Core()
            req = core.compile_model(core.read_model(path), "CPU", {
                "INFERENCE_NUM_THREADS": threads, "ENABLE_PROFILING": True, "INFERENCE_PRECISION_HINT": "f32"},
            ).create_infer_request()

            def run(req: Any = req) -> list[tuple[str | None, float]]:
                req.infer(feeds)
                return [(conv_key([r.node_name, *r.extra.get("fused_names", [])]), r.real_time_ms)
                        for r in req.get_profiling_info() if r.status == "EXECUTED"]
        else:
            import openvino as ov

            req = ov.Core().compile_model(path, "CPU", {
                "INFERENCE_NUM_THREADS": threads, "PERFORMANCE_HINT": "LATENCY", "NUM_STREAMS": 1,
                "INFERENCE_PRECISION_HINT": "f32", "PERF_COUNT": True}).create_infer_request()

            def run(req: Any = req) -> list[tuple[str | None, float]]:
                req.infer(feeds)
                return [(conv_key([r.node_name]), r.real_time.total_seconds() * 1e3) for r in req.profiling_info
                        if r.status == ov.ProfilingInfo.Status.EXECUTED]
        profiled[threads] = run
    for run in profiled.values():
        for _ in range(3):
            run()
    per: dict[int, dict[str, list[float]]] = {1: {}, 2: {}}
    totals: dict[int, list[float]] = {1: [], 2: []}
    switches = 0
    for _ in range(runs):
        for threads, run in profiled.items():
            before = voluntary_switches() if threads == 2 else 0
            rows = run()
            if threads == 2:
                switches += voluntary_switches() - before
            totals[threads].append(sum(ms for _, ms in rows))
            sums: dict[str, float] = {}
            for key, ms in rows:
                if key:
                    sums[key] = sums.get(key, 0.0) + ms
            for key, ms in sums.items():
                per[threads].setdefault(key, []).append(ms)
    return {"conv": {t: {k: statistics.median(v) for k, v in per[t].items()} for t in (1, 2)},
            "total": {t: statistics.median(v) for t, v in totals.items()}, "sleeps": switches / runs}


def measure(engine: str, path: Path, feeds: Path, runs: int, spincount: int | None = None) -> dict[str, Any]:
    env = dict(os.environ)
    if spincount is not None:
        env["GOMP_SPINCOUNT"] = str(spincount)
    done = subprocess.run([sys.executable, __file__, "--child", engine, str(path), str(feeds), str(runs)],
                          capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{engine} on {path} failed (exit {done.returncode}): {done.stderr.strip()[-400:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def report(name: str, path: Path, feeds: Path, runs: int, spincounts: list[int], with_ov: bool) -> None:
    print(f"== {name}")
    peer = measure("openvino", path, feeds, runs) if with_ov else None
    for sc in spincounts:
        of = measure("opforge", path, feeds, runs, sc)
        print(f"  GOMP_SPINCOUNT={sc}: opforge node sum {of['total']['1']:.3f} / {of['total']['2']:.3f} ms at 1 / 2 "
              f"threads, {of['sleeps']:.1f} thread sleeps per 2-thread inference"
              + (f"; OpenVINO {peer['total']['1']:.3f} / {peer['total']['2']:.3f}" if peer else ""))
        keys = sorted(of["conv"]["1"], key=lambda k: int(k.split(".")[1]))
        for key in keys[:12]:
            row = f"    {key:9s} opforge {of['conv']['1'][key]:7.3f} {of['conv']['2'].get(key, float('nan')):7.3f}"
            if peer and key in peer["conv"]["1"]:
                row += f"   OpenVINO {peer['conv']['1'][key]:7.3f} {peer['conv']['2'].get(key, float('nan')):7.3f}"
            print(row)


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        print(json.dumps(child(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", type=Path, help="a QDQ .onnx instead of the built-in chains")
    ap.add_argument("--feeds", type=Path, help="its inputs: .npz of in.<name> arrays")
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--spincounts", type=int, nargs="+", default=[300])
    ap.add_argument("--no-openvino", action="store_true")
    args = ap.parse_args()
    print(f"# load average {os.getloadavg()[0]:.1f}; {time.strftime('%H:%M:%S')}; per convolution: median ms at 1, 2 threads")
    with tempfile.TemporaryDirectory() as tmp:
        if args.model:
            if not args.feeds:
                ap.error("--model needs --feeds")
            model_feeds = Path(tmp) / "feeds.npz"
            ref = np.load(args.feeds)
            np.savez(model_feeds, **{k[3:]: ref[k] for k in ref.files if k.startswith("in.")})  # type: ignore[arg-type]
            report(args.model.stem, args.model, model_feeds, args.runs, args.spincounts, not args.no_openvino)
            return 0
        for name, (channels, hw, k) in CHAINS.items():
            path = Path(tmp) / f"{name}.onnx"
            chain_feeds = Path(tmp) / f"{name}.npz"
            np.savez(chain_feeds, **make_chain(path, channels, hw, k))  # type: ignore[arg-type]
            report(name, path, chain_feeds, args.runs, args.spincounts, not args.no_openvino)
    return 0


if __name__ == "__main__":
    sys.exit(main())
