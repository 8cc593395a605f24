"""Before and after in one run: the four benchmark models (/tmp/bench-models, see
../shared/bench/make_models.py), opforge CPU f32 of another build (an unpacked wheel in
/tmp/before-pkg, made as bench_hotspots.py's docstring says) vs this checkout vs OpenVINO f32,
timed in the same alternating rounds (medians, ms).

    python plugin-cpu/benchmarks/bench_before_after.py THREADS [model,model...]
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import numpy as np
import onnx
from bench_cpu import host_header, prepare_openvino, prepare_opforge
from bench_hotspots import Baseline, timed_rounds

threads = int(sys.argv[1]) if len(sys.argv) > 1 else 1
base = Baseline(Path("/tmp/before-pkg"))
print(host_header() if callable(host_header) else "")
print(f"threads={threads}")
for name in (sys.argv[2].split(",") if len(sys.argv) > 2 else ["resnet18", "mobilenet_v2", "bert_small", "mlp"]):
    path = Path(f"/tmp/bench-models/onnx/{name}.onnx")
    m = onnx.load(str(path))
    rng = np.random.default_rng(0)
    feeds = {}
    for i in m.graph.input:
        dims = [d.dim_value or 1 for d in i.type.tensor_type.shape.dim]
        et = i.type.tensor_type.elem_type
        feeds[i.name] = (rng.integers(0, 100, dims).astype(np.int64) if et == 7 else rng.standard_normal(dims).astype(np.float32))
    now, out_now, prec = prepare_opforge(path, feeds, threads)
    ov = prepare_openvino(path, feeds, threads)
    ov_fn = ov[0] if isinstance(ov, tuple) else ov
    run, out_before = base.runner(path, feeds, threads)
    med = timed_rounds({"now": now, "openvino": ov_fn}, {"before": run}, runs=60, rounds=12)
    diff = float(np.max(np.abs(out_now - out_before)))
    print(f"{name:14s} before {med['before']:8.3f}  now {med['now']:8.3f}  openvino {med['openvino']:8.3f}  "
          f"now/before {med['now']/med['before']:.2f}  before/ov {med['before']/med['openvino']:.2f}  now/ov {med['now']/med['openvino']:.2f}  maxdiff {diff:.2e}")
