"""The three CPU hot spots of issue 15 on small onnx.helper models, opforge CPU vs OpenVINO f32.

- ``silu_stack``: an EfficientNet-like stage, SiLU written as ``x * Sigmoid(x)`` after each 1x1 and
  depthwise convolution, with squeeze-and-excitation (whose ``x * Sigmoid(se)`` is *not* SiLU);
- ``power_gelu_rmsnorm``: RMSNorm (``Pow(x, 2)``, ReduceMean, ``Pow(., 0.5)`` reciprocal) and a
  tanh-GELU (``Pow(x, 3)``) around a MatMul, as GPT-2/T5/LLaMA exporters write them;
- ``unet_upsample``: a UNet decoder, bilinear ``Resize`` x2 (half_pixel, align_corners,
  asymmetric) + Concat + 3x3 convolution, and the Resize on its own (``resize_only``).

Prints median latencies (ms; engines timed in alternating rounds, so load that comes and goes
falls on both alike), the ratio opforge / OpenVINO, the max abs difference of their outputs, and
with ``--profile`` the top node types of each engine (per type, the median of 9 profiled runs after 3 warm-up runs).
``--baseline DIR`` adds a "before" column: the opforge_cpu of DIR (an unpacked wheel of another
build, say the commit before a change: ``git archive <commit> plugin-cpu | tar -x -C /tmp/old``,
``pip wheel --no-build-isolation --no-deps /tmp/old/plugin-cpu -w /tmp/whl``, unzip it into DIR),
timed by a child process in the same alternating rounds.

    python plugin-cpu/benchmarks/bench_hotspots.py [--threads 1] [--runs 40] [--profile] [--baseline DIR]
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

sys.path.insert(0, str(Path(__file__).parent))
from bench_cpu import (  # the shared timing helpers of the main CPU benchmark
    host_header,
    prepare_openvino,
    prepare_opforge,
    top_node_types,
)


class Builder:
    """Collects nodes and seeded initializers of one onnx.helper graph."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.nodes: list[Any] = []
        self.inits: list[Any] = []
        self.count = 0

    def name(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    def const(self, value: np.ndarray, prefix: str = "c") -> str:
        from onnx import numpy_helper

        n = self.name(prefix)
        self.inits.append(numpy_helper.from_array(np.asarray(value), n))
        return n

    def node(self, op: str, inputs: list[str], **attrs: Any) -> str:
        from onnx import helper

        out = self.name(op.lower())
        self.nodes.append(helper.make_node(op, inputs, [out], **attrs))
        return out

    def conv(self, x: str, cin: int, cout: int, k: int, group: int = 1) -> str:
        w = (self.rng.standard_normal((cout, cin // group, k, k)) * (2.0 / (cin // group * k * k)) ** 0.5)
        b = self.rng.standard_normal(cout) * 0.1
        return self.node("Conv", [x, self.const(w.astype(np.float32), "w"), self.const(b.astype(np.float32), "b")],
                         pads=[k // 2] * 4, group=group)

    def silu(self, x: str) -> str:
        return self.node("Mul", [x, self.node("Sigmoid", [x])])

    def save(self, path: Path, inputs: dict[str, tuple[int, ...]], out: str, name: str) -> dict[str, np.ndarray]:
        import onnx
        from onnx import TensorProto, helper

        graph = helper.make_graph(
            self.nodes, name,
            [helper.make_tensor_value_info(k, TensorProto.FLOAT, list(s)) for k, s in inputs.items()],
            [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)], self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        onnx.save(model, str(path))
        feed_rng = np.random.default_rng(1)
        return {k: feed_rng.standard_normal(s).astype(np.float32) for k, s in inputs.items()}


def make_silu_stack(path: Path) -> dict[str, np.ndarray]:
    b = Builder(0)
    cur, c = "x", 32
    for _ in range(4):
        e = b.silu(b.conv(cur, c, c * 4, 1))
        d = b.silu(b.conv(e, c * 4, c * 4, 3, group=c * 4))
        se = b.node("GlobalAveragePool", [d])
        se = b.silu(b.conv(se, c * 4, c // 2, 1))
        se = b.node("Sigmoid", [b.conv(se, c // 2, c * 4, 1)])
        d = b.node("Mul", [d, se])
        cur = b.node("Add", [cur, b.conv(d, c * 4, c, 1)])
    return b.save(path, {"x": (1, c, 56, 56)}, cur, "silu_stack")


def make_power_block(path: Path) -> dict[str, np.ndarray]:
    b = Builder(0)
    hidden, seq = 512, 128
    cur = "x"
    two, three, half = (b.const(np.array(v, np.float32)) for v in (2.0, 3.0, 0.5))
    for _ in range(2):
        ms = b.node("ReduceMean", [b.node("Pow", [cur, two])], axes=[-1], keepdims=1)
        rs = b.node("Reciprocal", [b.node("Pow", [b.node("Add", [ms, b.const(np.array(1e-6, np.float32))]), half])])
        normed = b.node("Mul", [b.node("Mul", [cur, rs]), b.const(np.ones(hidden, np.float32))])
        w = (b.rng.standard_normal((hidden, hidden)) / hidden**0.5).astype(np.float32)
        h = b.node("MatMul", [normed, b.const(w, "w")])
        inner = b.node("Add", [h, b.node("Mul", [b.node("Pow", [h, three]), b.const(np.array(0.044715, np.float32))])])
        t = b.node("Tanh", [b.node("Mul", [inner, b.const(np.array((2 / np.pi) ** 0.5, np.float32))])])
        g = b.node("Mul", [b.node("Mul", [h, b.const(np.array(0.5, np.float32))]),
                           b.node("Add", [t, b.const(np.array(1.0, np.float32))])])
        cur = b.node("Add", [cur, g])
    return b.save(path, {"x": (1, seq, hidden)}, cur, "power_gelu_rmsnorm")


def _resize(b: Builder, x: str, mode: str) -> str:
    scales = b.const(np.array([1, 1, 2, 2], np.float32), "scales")
    return b.node("Resize", [x, "", scales], mode="linear", coordinate_transformation_mode=mode)


def make_unet_upsample(path: Path) -> dict[str, np.ndarray]:
    b = Builder(0)
    cur, c = "x", 64
    skips = {"s1": (1, 32, 64, 64), "s2": (1, 16, 128, 128)}
    for (skip, shape), mode in zip(skips.items(), ("half_pixel", "align_corners")):
        up = _resize(b, cur, mode)
        cat = b.node("Concat", [up, skip], axis=1)
        cur = b.node("Relu", [b.conv(cat, c + shape[1], shape[1], 3)])
        c = shape[1]
    return b.save(path, {"x": (1, 64, 32, 32), **skips}, cur, "unet_upsample")


def make_resize_only(path: Path) -> dict[str, np.ndarray]:
    b = Builder(0)
    out = _resize(b, _resize(b, "x", "half_pixel"), "asymmetric")
    return b.save(path, {"x": (1, 32, 64, 64)}, out, "resize_only")


#: one profiled inference's rows: (node type, ms) of each executed node
Profiled = Callable[[], list[tuple[str, float]]]


def profiled_opforge(path: Path, feeds: dict[str, np.ndarray], threads: int) -> Profiled:
    """opforge in f32 (the default precision is bf16 on hosts with bf16 arithmetic)."""
    import opforge

    core = opforge.Core()
    compiled = core.compile_model(core.read_model(str(path)), "CPU", {
        "INFERENCE_NUM_THREADS": threads, "ENABLE_PROFILING": True, "INFERENCE_PRECISION_HINT": "f32"})
    req = compiled.create_infer_request()

    def run() -> list[tuple[str, float]]:
        req.infer(feeds)
        return [(r.node_type, r.real_time_ms) for r in req.get_profiling_info() if r.status == "EXECUTED"]
    return run


def profiled_openvino(path: Path, feeds: dict[str, np.ndarray], threads: int) -> Profiled:
    import openvino as ov

    compiled = ov.Core().compile_model(str(path), "CPU", {
        "INFERENCE_NUM_THREADS": threads, "PERFORMANCE_HINT": "LATENCY", "NUM_STREAMS": 1,
        "INFERENCE_PRECISION_HINT": "f32", "PERF_COUNT": True})
    req = compiled.create_infer_request()

    def run() -> list[tuple[str, float]]:
        req.infer(feeds)
        return [(r.node_type, r.real_time.total_seconds() * 1e3) for r in req.profiling_info
                if r.status == ov.ProfilingInfo.Status.EXECUTED]
    return run


def median_node_types(run: Profiled, samples: int = 9, warmup: int = 3) -> str:
    """Per node type, the median over ``samples`` profiled inferences (after ``warmup``, which
    touch the request's memory for the first time) of its total time: on a loaded host one
    preempted node can take most of a single run, so one run's counters mislead."""
    for _ in range(warmup):
        run()
    per_type: dict[str, list[float]] = {}
    for i in range(samples):
        totals: dict[str, float] = {}
        for node_type, ms in run():
            totals[node_type] = totals.get(node_type, 0.0) + ms
        for node_type in set(per_type) | set(totals):
            per_type.setdefault(node_type, [0.0] * i).append(totals.get(node_type, 0.0))
    return top_node_types([(t, statistics.median(v)) for t, v in per_type.items()], 6)


MODELS = {
    "silu_stack": make_silu_stack,
    "power_gelu_rmsnorm": make_power_block,
    "unet_upsample": make_unet_upsample,
    "resize_only": make_resize_only,
}


# ------------------------------------------------------------------ another build, side by side
def use_cpu_package(folder: Path) -> None:
    """Make this process import opforge_cpu from ``folder`` (an unpacked wheel of another build)
    instead of the installed one, before anything imported it."""
    def redirects_cpu(finder: Any) -> bool:  # scikit-build-core's editable-install finder
        return type(finder).__name__ == "ScikitBuildRedirectingFinder" and any(
            str(k).split(".")[0] == "opforge_cpu" for k in getattr(finder, "known_source_files", {}))
    sys.meta_path[:] = [f for f in sys.meta_path if not redirects_cpu(f)]
    sys.path[:] = [str(folder)] + [p for p in sys.path if not p.rstrip("/").endswith("plugin-cpu/src")]


def serve_baseline(folder: Path) -> int:
    """Child process of ``--baseline``: times the build in ``folder`` on request. Each stdin line
    is JSON {"model", "feeds" (an .npz), "threads", "runs"}; the answer is the list of run times
    (ms) and, on the first request for a model, the output (saved next to the feeds)."""
    use_cpu_package(folder)
    import json

    import opforge_cpu

    print(json.dumps({"loaded": opforge_cpu.__file__}), flush=True)
    prepared: dict[tuple[str, int], Any] = {}
    for line in sys.stdin:
        req = json.loads(line)
        key = (req["model"], req["threads"])
        if key not in prepared:
            feeds = dict(np.load(req["feeds"]))
            fn, out, _ = prepare_opforge(Path(req["model"]), feeds, req["threads"])
            np.save(req["feeds"] + ".baseline_out.npy", out)
            prepared[key] = fn
        times = []
        for _ in range(req["runs"]):
            t0 = time.perf_counter()
            prepared[key]()
            times.append((time.perf_counter() - t0) * 1e3)
        print(json.dumps(times), flush=True)
    return 0


class Baseline:
    """The ``--baseline`` build in a child process, timed in the same alternating rounds as the
    engines of this process (two builds of opforge_cpu cannot share one process)."""

    def __init__(self, folder: Path) -> None:
        import json
        import subprocess

        self.json = json
        self.proc = subprocess.Popen([sys.executable, __file__, "--serve-baseline", str(folder)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        hello = json.loads(self._line())
        if not str(hello["loaded"]).startswith(str(folder)):
            raise SystemExit(f"the baseline process loaded opforge_cpu from {hello['loaded']}, not {folder}")

    def _line(self) -> str:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit("the baseline process ended (see its error above)")
        return line

    def runner(self, model: Path, feeds: dict[str, np.ndarray], threads: int) -> tuple[Callable[[int], list[float]],
                                                                                         np.ndarray]:
        npz = str(model) + ".feeds.npz"
        arrays: dict[str, Any] = dict(feeds)  # numpy's stub types **kwds as its bool flag
        np.savez(npz, **arrays)

        def run(n: int) -> list[float]:
            assert self.proc.stdin is not None
            self.proc.stdin.write(self.json.dumps({"model": str(model), "feeds": npz, "threads": threads,
                                                   "runs": n}) + "\n")
            self.proc.stdin.flush()
            return [float(t) for t in self.json.loads(self._line())]
        run(5)  # compiles and warms up
        return run, np.load(npz + ".baseline_out.npy")


def timed_rounds(fns: dict[str, Callable[[], Any]], remote: dict[str, Callable[[int], list[float]]], runs: int,
                 rounds: int = 10, warmup: int = 5) -> dict[str, float]:
    """As bench_cpu.interleaved_medians, with engines of other processes in the same rounds."""
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    per_round = max(1, runs // rounds)
    times: dict[str, list[float]] = {k: [] for k in [*fns, *remote]}
    for _ in range(rounds):
        for k, fn in fns.items():
            for _ in range(per_round):
                t0 = time.perf_counter()
                fn()
                times[k].append((time.perf_counter() - t0) * 1e3)
        for k, run in remote.items():
            times[k] += run(per_round)
    return {k: statistics.median(v) for k, v in times.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, nargs="+", default=[1])
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    ap.add_argument("--profile", action="store_true", help="top node types of each engine")
    ap.add_argument("--baseline", type=Path, metavar="DIR",
                    help="also time the opforge_cpu of DIR (an unpacked wheel of another build, e.g. the "
                         "commit before a change) in the same rounds: a 'before' column")
    ap.add_argument("--serve-baseline", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve_baseline:
        return serve_baseline(args.serve_baseline)
    baseline = Baseline(args.baseline) if args.baseline else None
    print(host_header())
    before = f" {'before ms':>10} {'ratio':>6}" if baseline else ""
    print(f"{'model':<20} {'thr':>3}{before} {'opforge ms':>11} {'OpenVINO ms':>12} {'ratio':>6} {'max |diff|':>11}")
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models:
            path = Path(tmp) / f"{name}.onnx"
            feeds = MODELS[name](path)
            for threads in args.threads:
                of, of_out, _ = prepare_opforge(path, feeds, threads)
                ov, ov_out, _ = prepare_openvino(path, feeds, threads)
                remote: dict[str, Callable[[int], list[float]]] = {}
                if baseline:
                    remote["before"], before_out = baseline.runner(path, feeds, threads)
                t = timed_rounds({"opforge": of, "openvino": ov}, remote, args.runs)
                diff = float(np.max(np.abs(of_out - ov_out)))
                col = (f" {t['before']:>10.3f} {t['before'] / t['openvino']:>6.2f}" if baseline else "")
                print(f"{name:<20} {threads:>3}{col} {t['opforge']:>11.3f} {t['openvino']:>12.3f} "
                      f"{t['opforge'] / t['openvino']:>6.2f} {diff:>11.2e}")
                if baseline:
                    print(f"   before vs now: max |diff| {float(np.max(np.abs(before_out - of_out))):.2e}")
                if args.profile:
                    print("   opforge :", median_node_types(profiled_opforge(path, feeds, threads)))
                    print("   OpenVINO:", median_node_types(profiled_openvino(path, feeds, threads)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
