"""The same network read from Paddle (PIR .json, legacy .pdmodel) and from ONNX, on the CPU device.

The ONNX files are paddle2onnx exports of the Paddle models (``shared/bench/make_models.py``), so
both routes should lower to the same graph and run equally fast. Checks that the outputs agree,
prints the op types where the converted graphs differ, and median latencies with the ratio
Paddle-read / ONNX-read.

    python frontends/paddle/benchmarks/bench_paddle_vs_onnx.py [--models /tmp/bench-models]
        [--names resnet18 mobilenet_v2] [--threads 1] [--runs 30]
"""

from __future__ import annotations

import argparse
import collections
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np


def median_ms(fn: Callable[[], Any], runs: int, warmup: int = 3) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def op_histogram(model: Any) -> collections.Counter[str]:
    return collections.Counter(n.type_name for n in model.get_ordered_ops()
                               if n.type_name not in ("Parameter", "Result", "Constant"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=Path, default=Path("/tmp/bench-models"))
    ap.add_argument("--names", nargs="+", default=["resnet18", "mobilenet_v2"])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--runs", type=int, default=30)
    args = ap.parse_args(argv)

    import opforge
    from opforge.frontend.convert import convert_model

    core = opforge.Core()
    if "CPU" not in core.available_devices:
        print("no CPU device (opforge-cpu) installed", file=sys.stderr)
        return 2
    config = {"INFERENCE_NUM_THREADS": args.threads}
    rng = np.random.default_rng(0)
    failed = False
    print(f"{'model':<14}{'read from':<16}{'ms (median)':>12}{'vs ONNX':>10}")
    for name in args.names:
        sources = {
            "onnx": args.models / "onnx" / f"{name}.onnx",
            "paddle pir": args.models / "paddle_pir" / f"{name}.json",
            "paddle legacy": args.models / "paddle_legacy" / f"{name}.pdmodel",
        }
        sources = {k: p for k, p in sources.items() if p.is_file()}
        if "onnx" not in sources or len(sources) < 2:
            print(f"{name}: needs the ONNX model and a Paddle one under {args.models}; skipped", file=sys.stderr)
            continue
        models = {k: convert_model(p) for k, p in sources.items()}
        shape = [d if d is not None else 1 for d in models["onnx"].inputs[0].partial_shape.dims]
        x = rng.standard_normal(shape).astype(np.float32)
        results: dict[str, tuple[float, np.ndarray]] = {}
        for route, model in models.items():
            req = core.compile_model(model, "CPU", config).create_infer_request()
            y = np.asarray(req.infer([x])[0])
            results[route] = (median_ms(lambda req=req, x=x: req.infer([x]), args.runs), y)
        base_ms, base_y = results["onnx"]
        hist = op_histogram(models["onnx"])
        for route, (ms, y) in results.items():
            err = float(np.abs(y - base_y).max()) / max(float(np.abs(base_y).max()), 1e-6)
            ok = y.shape == base_y.shape and err <= 1e-4
            failed |= not ok
            print(f"{name:<14}{route:<16}{ms:>12.2f}{ms / base_ms:>9.2f}x"
                  + ("" if ok else f"  OUTPUTS DIFFER (rel {err:.2g}, shapes {y.shape} / {base_y.shape})"))
            if route != "onnx":
                other = op_histogram(models[route])
                diff = {t: (other[t], hist[t]) for t in sorted(set(other) | set(hist)) if other[t] != hist[t]}
                if diff:
                    print(" " * 14 + "graph differs (op: paddle / onnx): "
                          + ", ".join(f"{t} {a}/{b}" for t, (a, b) in diff.items()))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
