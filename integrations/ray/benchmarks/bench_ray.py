#!/usr/bin/env python3
"""Batch-inference throughput on Ray Data: opforge vs ONNX Runtime inside ``map_batches``.

The same pipeline for both engines: ``ROWS`` seeded images in a Ray dataset, ``map_batches``
with a callable class on a pool of 1 or 2 actors (``num_cpus=1`` each, so each runs one thread),
batches of ``--batch-size`` rows. The model is the benchmark set's mobilenet_v2 (static batch 1):
each batch is split into rows (opforge's ``batching="split"``, a loop of ``session.run`` for
ONNX Runtime). With ``--dynamic`` both run a copy whose batch dimension is dynamic, one call per
batch.

Throughput is rows / the span from the first batch's start to the last batch's end, over all
workers, which start together (each compiles and runs a warm-up inference, then waits for the
others): actor start-up and model compilation are left out (they are in the end-to-end time). Each configuration runs ``--repeats`` times; the median is reported.

    python make_models.py --out /tmp/bench-models      # /work/shared/bench: mobilenet_v2.onnx
    python integrations/ray/benchmarks/bench_ray.py --model /tmp/bench-models/onnx/mobilenet_v2.onnx
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from typing import Any

import numpy as np

# Ray's single-machine mode: the benchmark's cluster stays on the loopback address.
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")

import ray
from opforge_ray import OpforgePredictor, put_model


def stamp(out: dict[str, np.ndarray], t0: float) -> dict[str, np.ndarray]:
    n = len(next(iter(out.values())))
    out["t0"] = np.full(n, t0)
    out["t1"] = np.full(n, time.time())
    return out


def barrier(folder: str, parties: int, timeout: float = 120.0) -> None:
    """Wait until ``parties`` workers (on this machine) have reached this point (each after compiling and a first
    inference): otherwise the first worker ready runs alone while the second still compiles, and
    the timed span measures start-up, not throughput."""
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, f"{os.getpid()}-{time.time_ns()}"), "w"):
        pass
    end = time.time() + timeout
    while len(os.listdir(folder)) < parties and time.time() < end:
        time.sleep(0.01)


def warm_up_input(shape: list[Any]) -> np.ndarray:
    return np.zeros([1 if not isinstance(d, int) or d < 1 else d for d in shape], np.float32)


class TimedOpforge(OpforgePredictor):
    """OpforgePredictor that stamps each batch with its start and end times."""

    def __init__(self, gate: tuple[str, int], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        # First inference (kernel set-up) happens here, outside the timed span, as for ORT.
        port = self.runner.compiled.inputs[0]
        self.runner({port.any_name: warm_up_input(list(port.partial_shape))})
        barrier(*gate)

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        t0 = time.time()
        return stamp(super().__call__(batch), t0)


class TimedOrt:
    """The same job for ONNX Runtime: one session per actor, threads = the CPUs Ray assigned."""

    def __init__(self, model: Any, dynamic: bool, gate: tuple[str, int]) -> None:
        import onnxruntime as ort

        onnx_bytes = ray.get(model)
        cpus = ray.get_runtime_context().get_assigned_resources().get("CPU", 1.0)
        so = ort.SessionOptions()
        so.intra_op_num_threads = max(1, int(cpus))
        so.inter_op_num_threads = 1
        self.session = ort.InferenceSession(onnx_bytes, so, providers=["CPUExecutionProvider"])
        self.input = self.session.get_inputs()[0].name
        self.output = self.session.get_outputs()[0].name
        self.dynamic = dynamic
        self.session.run([self.output], {self.input: warm_up_input(self.session.get_inputs()[0].shape)})
        barrier(*gate)

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        t0 = time.time()
        x = batch[self.input]
        if self.dynamic:
            y = self.session.run([self.output], {self.input: x})[0]
        else:
            y = np.concatenate([self.session.run([self.output], {self.input: x[i:i + 1]})[0] for i in range(len(x))])
        return stamp({self.output: y}, t0)


def dynamic_onnx(path: str) -> bytes:
    """The model with a symbolic batch dimension on its input and output."""
    import onnx

    m = onnx.load(path)
    for v in (*m.graph.input, *m.graph.output):
        v.type.tensor_type.shape.dim[0].dim_param = "N"
    return bytes(m.SerializeToString())


def run_once(engine: str, workers: int, model: Any, rows: int, batch_size: int, dynamic: bool,
             x_ref: Any) -> dict[str, float]:
    ds = ray.data.from_numpy_refs(x_ref).rename_columns({"data": "x"})
    t_start = time.time()
    gate = (tempfile.mkdtemp(prefix="bench-ray-barrier-"), workers)
    if engine == "opforge":
        out = ds.map_batches(TimedOpforge, fn_constructor_kwargs={"model": model, "gate": gate},
                             concurrency=workers, num_cpus=1, batch_size=batch_size, batch_format="numpy")
    else:
        out = ds.map_batches(TimedOrt, fn_constructor_kwargs={"model": model, "dynamic": dynamic, "gate": gate},
                             concurrency=workers, num_cpus=1, batch_size=batch_size, batch_format="numpy")
    batches = list(out.iter_batches(batch_size=None, batch_format="numpy"))
    wall = time.time() - t_start
    t0 = min(float(b["t0"].min()) for b in batches)
    t1 = max(float(b["t1"].max()) for b in batches)
    logits = np.concatenate([b[next(k for k in b if k not in ("t0", "t1"))] for b in batches])  # in input order
    if len(logits) != rows:
        raise SystemExit(f"{engine} x{workers}: {len(logits)} rows came back, expected {rows}")
    return {"samples_per_s": rows / (t1 - t0), "wall_s": wall, "logits": logits}  # type: ignore[dict-item]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="/tmp/bench-models/onnx/mobilenet_v2.onnx")
    ap.add_argument("--rows", type=int, default=256)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--dynamic", action="store_true", help="dynamic batch: one call per batch")
    ap.add_argument("--json", help="also write the results here")
    args = ap.parse_args()

    load_before = os.getloadavg()
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    ctx.execution_options.preserve_order = True  # outputs in input order: the engines are compared row by row
    x = np.random.default_rng(0).standard_normal((args.rows, 3, 224, 224)).astype(np.float32)
    # One block per batch, so both workers get work from the start.
    x_ref = [ray.put(x[i:i + args.batch_size]) for i in range(0, args.rows, args.batch_size)]
    if args.dynamic:
        onnx_bytes = dynamic_onnx(args.model)
        of_model = put_model(onnx_bytes)
    else:
        with open(args.model, "rb") as f:
            onnx_bytes = f.read()
        of_model = put_model(args.model)
    ort_model = ray.put(onnx_bytes)

    results: dict[str, dict[str, Any]] = {}
    logits: dict[str, np.ndarray] = {}
    # Interleaved rounds, so a change in the machine's load hits every configuration alike.
    configs = [("opforge", 1), ("onnxruntime", 1), ("opforge", 2), ("onnxruntime", 2)]
    runs: dict[str, list[dict[str, float]]] = {f"{e} x{w}": [] for e, w in configs}
    for _ in range(args.repeats):
        for engine, workers in configs:
            r = run_once(engine, workers, of_model if engine == "opforge" else ort_model, args.rows,
                         args.batch_size, args.dynamic, x_ref)
            logits[engine] = r.pop("logits")  # type: ignore[arg-type]
            runs[f"{engine} x{workers}"].append(r)
            print(f"  {engine} x{workers}: {r['samples_per_s']:.1f} samples/s (wall {r['wall_s']:.1f} s)",
                  file=sys.stderr, flush=True)
    for key, rs in runs.items():
        results[key] = {"samples_per_s": statistics.median(r["samples_per_s"] for r in rs),
                        "all_samples_per_s": [round(r["samples_per_s"], 2) for r in rs],
                        "wall_s": statistics.median(r["wall_s"] for r in rs)}
    ray.shutdown()
    diff = float(np.abs(logits["opforge"] - logits["onnxruntime"]).max())
    load_after = os.getloadavg()

    of1, of2 = results["opforge x1"]["samples_per_s"], results["opforge x2"]["samples_per_s"]
    or1, or2 = results["onnxruntime x1"]["samples_per_s"], results["onnxruntime x2"]["samples_per_s"]
    mode = "dynamic batch, one call per batch" if args.dynamic else "static batch 1, split per row"
    print(f"\nmobilenet_v2, {args.rows} rows, batches of {args.batch_size}, {mode}, medians of {args.repeats}")
    print("| engine | 1 worker (samples/s) | 2 workers (samples/s) | 2 vs 1 worker |")
    print("|---|---|---|---|")
    print(f"| opforge | {of1:.1f} | {of2:.1f} | {of2 / of1:.2f}x |")
    print(f"| ONNX Runtime | {or1:.1f} | {or2:.1f} | {or2 / or1:.2f}x |")
    print(f"| opforge / ONNX Runtime | {of1 / or1:.2f}x | {of2 / or2:.2f}x | |")
    print(f"max |opforge - ORT| logits: {diff:.2e}; load average before {load_before[0]:.2f}, after {load_after[0]:.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"model": args.model, "rows": args.rows, "batch_size": args.batch_size, "mode": mode,
                       "results": results, "max_abs_diff": diff, "loadavg_before": load_before,
                       "loadavg_after": load_after}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
