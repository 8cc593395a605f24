"""opforge CPU vs OpenVINO f32 (or ``--precision bf16``: both in bf16) at 1 thread by *process CPU time* per inference.

On a 2-core host shared with other busy tenants (load 4-7) a wall-clock median moves by 15 %
between runs of the same build: it mostly measures who else got the cores. The CPU time a
process spends on one inference (``time.process_time``: all its threads) is not inflated by
being descheduled, so at 1 thread it ranks two engines, or two builds, far more stably. It is
still not a quiet-host latency (the tenants share caches and memory bandwidth), and at 2 threads
it counts the time OpenMP/TBB workers spin, so it is for 1-thread comparisons only.

Both engines run in this process, timed in alternating rounds, after warm-up; the wall-clock
ratio of the same runs is printed beside it.

    python plugin-cpu/benchmarks/bench_cpu_time.py squeezenet1_1 /tmp/bench-models/onnx/resnet18.onnx
        [--models-dir /tmp/real-models] [--rounds 6] [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np


def random_feeds(path: Path) -> dict[str, np.ndarray]:
    import onnx

    m = onnx.load(str(path), load_external_data=False)
    rng = np.random.default_rng(0)
    feeds: dict[str, np.ndarray] = {}
    for i in m.graph.input:
        t = i.type.tensor_type
        shape = [d.dim_value for d in t.shape.dim]
        if t.elem_type == onnx.TensorProto.FLOAT:
            feeds[i.name] = rng.standard_normal(shape).astype(np.float32)
        else:  # token ids
            feeds[i.name] = rng.integers(0, 100, size=shape).astype(onnx.helper.tensor_dtype_to_np_dtype(t.elem_type))
    return feeds


def requests(path: Path, precision: str = "f32") -> tuple[Any, Any]:
    """bf16: opforge with the hint, OpenVINO at its default (bf16 on a bf16 host), as bench_cpu."""
    import openvino as ov
    import opforge

    core = opforge.Core()
    of = core.compile_model(core.read_model(str(path)), "CPU", {
        "INFERENCE_NUM_THREADS": 1, "INFERENCE_PRECISION_HINT": precision}).create_infer_request()
    config: dict[str, Any] = {"INFERENCE_NUM_THREADS": 1, "PERFORMANCE_HINT": "LATENCY", "NUM_STREAMS": 1}
    if precision == "f32":
        config["INFERENCE_PRECISION_HINT"] = "f32"
    ovr = ov.Core().compile_model(str(path), "CPU", config).create_infer_request()
    return of, ovr


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="+", help="model names in --models-dir/onnx, or .onnx paths")
    ap.add_argument("--models-dir", type=Path, default=Path("/tmp/real-models"))
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--runs", type=int, default=5, help="runs per engine and round")
    ap.add_argument("--precision", choices=("f32", "bf16"), default="f32")
    args = ap.parse_args()
    print("model                 CPU ms opforge  openvino  of/ov | wall of/ov  load")
    for name in args.models:
        path = Path(name) if name.endswith(".onnx") else args.models_dir / "onnx" / f"{name}.onnx"
        feeds = random_feeds(path)
        engines = requests(path, args.precision)
        for req in engines:
            for _ in range(3):
                req.infer(feeds)
        cpu: list[list[float]] = [[], []]
        wall: list[list[float]] = [[], []]
        for _ in range(args.rounds):
            for k, req in enumerate(engines):
                for _ in range(args.runs):
                    c0, w0 = time.process_time(), time.perf_counter()
                    req.infer(feeds)
                    cpu[k].append(time.process_time() - c0)
                    wall[k].append(time.perf_counter() - w0)
        c_of, c_ov = (statistics.median(v) * 1e3 for v in cpu)
        w_ratio = statistics.median(wall[0]) / statistics.median(wall[1])
        print(f"{path.stem:20s} {c_of:10.3f} {c_ov:9.3f} {c_of / c_ov:6.2f} | {w_ratio:10.2f} {os.getloadavg()[0]:5.1f}",
              flush=True)


if __name__ == "__main__":
    main()
