#!/usr/bin/env python3
"""Per-layer convolution timings: every distinct convolution of resnet18 (with its folded
BatchNorm, residual Add and Relu where the network has them) as a one-layer model, timed from
OpenCL profiling events (the sum of its kernels, median of several runs).

    python plugin-gpu/benchmarks/bench_conv_layers.py [--batch 1] [--image 224] [--runs 7]
        [--paths default,gemm] [--json out.json]

``--paths``: ``default`` is what the plugin chooses; ``gemm`` forces the implicit GEMM for every
convolution (no Winograd, no split-K): the kernel before those paths existed, for comparison on
the same device.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

import numpy as np

#: (name, Cin, Cout, kernel, stride, input size at 224, residual)
LAYERS = [
    ("conv1 7x7/2", 3, 64, 7, 2, 224, False),
    ("layer1 3x3 64", 64, 64, 3, 1, 56, True),
    ("layer2.0 3x3/2 64>128", 64, 128, 3, 2, 56, False),
    ("layer2 3x3 128", 128, 128, 3, 1, 28, True),
    ("layer2 down 1x1/2", 64, 128, 1, 2, 56, False),
    ("layer3.0 3x3/2 128>256", 128, 256, 3, 2, 28, False),
    ("layer3 3x3 256", 256, 256, 3, 1, 14, True),
    ("layer3 down 1x1/2", 128, 256, 1, 2, 28, False),
    ("layer4.0 3x3/2 256>512", 256, 512, 3, 2, 14, False),
    ("layer4 3x3 512", 512, 512, 3, 1, 7, True),
    ("layer4 down 1x1/2", 256, 512, 1, 2, 14, False),
]


def build(cin: int, cout: int, k: int, s: int, size: int, batch: int, residual: bool) -> Any:
    import opforge
    from opforge.graph import Model

    rng = np.random.default_rng(0)
    x = opforge.op("Parameter", element_type="f32", shape=[batch, cin, size, size], name="x")
    x.output(0).set_names(["x"])
    w = (rng.standard_normal((cout, cin, k, k)) * np.sqrt(2.0 / (cin * k * k))).astype(np.float32)
    pad = k // 2
    y = opforge.op("Convolution", x, opforge.op("Constant", value=w), strides=[s, s], pads_begin=[pad, pad],
                   pads_end=[pad, pad], dilations=[1, 1], name="conv")
    c = [opforge.op("Constant", value=v.astype(np.float32)) for v in
         (rng.uniform(0.5, 1, cout), rng.standard_normal(cout) * 0.1, rng.standard_normal(cout) * 0.1,
          rng.uniform(0.5, 1.5, cout))]
    y = opforge.op("BatchNormInference", y, *c, epsilon=1e-5, name="bn")
    params = [x]
    if residual:
        r = opforge.op("Parameter", element_type="f32", shape=[batch, cout, size // s, size // s], name="r")
        r.output(0).set_names(["r"])
        y = opforge.op("Add", y, r)
        params.append(r)
    y = opforge.op("Relu", y)
    return Model([y], params)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--image", type=int, default=224)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--device", default="GPU")
    ap.add_argument("--paths", default="default,gemm")
    ap.add_argument("--only", default="", help="substring of the layer names to run")
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    import opforge
    from opforge_gpu.library import conv_fast

    core = opforge.Core()
    if "GPU" not in core.device_plugins():
        core.add_extension("opforge_gpu.plugin")  # running from a checkout: no entry point installed
    print(f"device: {core.get_property(args.device, 'FULL_DEVICE_NAME')}, batch {args.batch}, image {args.image}")
    out: list[dict[str, Any]] = []
    paths = args.paths.split(",")
    print(f"{'layer':26s} " + " ".join(f"{p:>18s}" for p in paths))
    for name, cin, cout, k, s, size, residual in LAYERS:
        if args.only and args.only not in name:
            continue
        size = max(size * args.image // 224, k)
        model = build(cin, cout, k, s, size, args.batch, residual)
        rng = np.random.default_rng(1)
        feeds = [rng.standard_normal(tuple(p.output(0).shape)).astype(np.float32) for p in model.parameters]
        row: dict[str, Any] = {"layer": name, "shape": [args.batch, cin, size, size, cout, k, s]}
        cells = []
        for path in paths:
            with conv_fast.forced(path):
                compiled = core.compile_model(model, args.device, {"ENABLE_PROFILING": True})
                req = compiled.create_infer_request()
                req.infer(feeds)
                times = []
                for _ in range(args.runs):
                    req.infer(feeds)
                    times.append(sum(c.real_time_ms for c in req.get_profiling_info()))
                kernels = sorted({c["kernel"] for c in req.get_profiling_info()})
            ms = statistics.median(times)
            row[path] = {"ms": ms, "kernels": kernels}
            kind = "wino" if "wino_input" in kernels else ("splitk" if "splitk_reduce" in kernels else "gemm")
            cells.append(f"{ms:8.3f} ms {kind:>6s}")
        print(f"{name:26s} " + " ".join(f"{c:>18s}" for c in cells), flush=True)
        out.append(row)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
