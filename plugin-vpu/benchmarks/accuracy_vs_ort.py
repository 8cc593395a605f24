"""The VPU device's FP16 accuracy on the benchmark models against ONNX Runtime f32.

    python plugin-vpu/benchmarks/accuracy_vs_ort.py /tmp/bench-models resnet18 mobilenet_v2

(models from ../shared/bench/make_models.py). Prints, per model, the largest absolute difference
divided by the largest absolute ORT output (the issue's "relative" error), and the time of one
inference. Slow on PoCL (a CPU OpenCL device): minutes per model.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np


def main() -> int:
    import onnxruntime as ort
    import opforge

    root = Path(sys.argv[1])
    core = opforge.Core()
    for name in sys.argv[2:] or ["resnet18", "mobilenet_v2"]:
        path = root / "onnx" / f"{name}.onnx"
        ref = np.load(root / "ref" / f"{name}.npz")
        feeds = {k[3:]: v for k, v in ref.items() if k.startswith("in.")}
        sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        want = sess.run(None, feeds)[0]
        model = core.read_model(str(path))
        t0 = time.perf_counter()
        compiled = core.compile_model(model, "VPU")
        t1 = time.perf_counter()
        got = compiled(list(feeds.values()))[0]
        t2 = time.perf_counter()
        rel = float(np.abs(got - want).max() / np.abs(want).max())
        top1 = int(np.argmax(got)) == int(np.argmax(want))
        print(f"{name}: max|VPU-ORT|/max|ORT| = {rel:.3e} (target 2e-2), top-1 equal: {top1}, "
              f"compile {t1 - t0:.1f} s, first inference {t2 - t1:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
