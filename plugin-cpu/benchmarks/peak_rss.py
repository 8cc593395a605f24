"""Peak resident memory of a fresh process that compiles and runs resnet18: opforge CPU vs
OpenVINO (INFERENCE_PRECISION_HINT=f32), each in its own subprocess, measured with
``resource.getrusage(RUSAGE_SELF).ru_maxrss`` at the end (a benchmark, not a timed test).
Also prints the baseline of a process that only imported the engine, so the model's own share
is visible.

    python plugin-cpu/benchmarks/peak_rss.py [--model /tmp/bench-models/onnx/resnet18.onnx] [--runs 10]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

CHILD = r"""
import json, resource, sys
import numpy as np
engine, path, runs, threads = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
if engine == "opforge":
    import opforge
    core = opforge.Core()
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    model = core.read_model(path)
    compiled = core.compile_model(model, "CPU", {"INFERENCE_NUM_THREADS": threads,
                                                 "INFERENCE_PRECISION_HINT": "f32"})  # as OpenVINO's below
    shape = [int(d) for d in model.inputs[0].partial_shape.to_tuple()]
    run = lambda x: compiled([x])
else:
    import openvino as ov
    core = ov.Core()
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    compiled = core.compile_model(path, "CPU", {"INFERENCE_NUM_THREADS": threads,
                                                "INFERENCE_PRECISION_HINT": "f32"})
    shape = list(compiled.inputs[0].shape)
    req = compiled.create_infer_request()
    run = lambda x: req.infer([x])
x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
for _ in range(runs):
    run(x)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"engine": engine, "import_kib": base, "peak_kib": peak}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="/tmp/bench-models/onnx/resnet18.onnx")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    rows = []
    for engine in ("opforge", "openvino"):
        out = subprocess.run([sys.executable, "-c", CHILD, engine, args.model, str(args.runs), str(args.threads)],
                             check=True, capture_output=True, text=True).stdout
        rows.append(json.loads(out.strip().splitlines()[-1]))
    print(f"{'engine':<10} {'after import':>14} {'peak':>10} {'peak - import':>14}   (MiB, {args.model})")
    for r in rows:
        print(f"{r['engine']:<10} {r['import_kib'] / 1024:14.1f} {r['peak_kib'] / 1024:10.1f} "
              f"{(r['peak_kib'] - r['import_kib']) / 1024:14.1f}")
    print(f"opforge / OpenVINO peak: {rows[0]['peak_kib'] / rows[1]['peak_kib']:.2f}")


if __name__ == "__main__":
    main()
