"""The ``opforge benchmark`` sub-command: OpenVINO benchmark_app's options, opforge's devices."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from opforge.benchmark.runner import BenchmarkReport, BenchmarkSettings, run_benchmark


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:  # type: ignore[type-arg]
    sb = sub.add_parser("benchmark", help="measure latency and throughput of a model on a device (benchmark_app)",
                        description="Compile a model and measure it. Runs until -niter iterations or -t "
                                    "seconds, whichever comes first (10 s when neither is given).")
    sb.add_argument("-m", dest="model", required=True, help="model file (.onnx, .xml, Paddle...)")
    sb.add_argument("-d", dest="device", default="CPU", help="device: CPU, GPU.1, HETERO:GPU,CPU, AUTO:GPU,CPU ...")
    sb.add_argument("-i", dest="inputs", help="an .npz of inputs by name (default: seeded random data)")
    sb.add_argument("-shape", dest="shape", help="input shapes: x[1,3,224,224] or a[1,128],b[1,128]")
    sb.add_argument("-b", dest="batch", type=int, help="batch: dimension 0 of every input")
    sb.add_argument("-niter", dest="niter", type=int, help="number of timed iterations")
    sb.add_argument("-t", dest="time_s", type=float, help="seconds to run")
    sb.add_argument("-nireq", dest="nireq", type=int,
                    help="infer requests in flight (default: 1 for latency, the device's optimum for throughput)")
    sb.add_argument("-hint", dest="hint", default="latency", choices=("latency", "throughput"),
                    type=str.lower, help="PERFORMANCE_HINT")
    sb.add_argument("-nthreads", dest="nthreads", type=int, help="INFERENCE_NUM_THREADS")
    sb.add_argument("-infer_precision", dest="infer_precision", type=str.lower,
                    help="INFERENCE_PRECISION_HINT (f32, bf16, f16); default: the device's own (CPU: bf16 on a host "
                         "with bf16 arithmetic, as OpenVINO's benchmark_app); the report says which ran")
    sb.add_argument("-extensions", dest="extensions", action="append", default=[],
                    help="extension(s) to load first: plugin name, module, .py file (comma separated or repeated)")
    sb.add_argument("-c", dest="config_file", help="CONFIG_FILE of custom kernels (GPU/VPU XML)")
    sb.add_argument("-pc", dest="perf_counts", action="store_true", help="report per-layer performance counters")
    sb.add_argument("--json", dest="json_file", help="write the report as JSON to this file ('-' = stdout)")
    sb.add_argument("--progress", action="store_true", help="draw the progress bar even when stderr is not a terminal")
    sb.set_defaults(func=benchmark_command)
    return sb


def benchmark_command(args: argparse.Namespace) -> int:
    extensions = [e.strip() for item in args.extensions for e in item.split(",") if e.strip()]
    settings = BenchmarkSettings(
        model=args.model, device=args.device, inputs=args.inputs, shape=args.shape, batch=args.batch,
        niter=args.niter, time_s=args.time_s, nireq=args.nireq, hint=args.hint, nthreads=args.nthreads,
        infer_precision=args.infer_precision,
        extensions=extensions, config_file=args.config_file, perf_counts=args.perf_counts, progress=args.progress)
    report = run_benchmark(settings)
    if args.json_file == "-":
        print(json.dumps(report.to_dict(), indent=2))
        return 0
    print_report(report)
    if args.json_file:
        Path(args.json_file).write_text(json.dumps(report.to_dict(), indent=2) + "\n")
        print(f"report written to {args.json_file}")
    return 0


def print_report(r: BenchmarkReport) -> None:
    out = sys.stdout
    if r.counters:
        print("Per-layer performance counters (last inference):", file=out)
        print(f"  {'node':<40} {'type':<20} {'exec type':<28} {'status':<14} {'ms':>9}", file=out)
        for c in r.counters:
            print(f"  {c.node_name[:40]:<40} {c.node_type[:20]:<20} {c.exec_type[:28]:<28} {c.status:<14} "
                  f"{c.real_time_ms:>9.3f}", file=out)
        total = sum(c.real_time_ms for c in r.counters if c.node_type != "HeteroSubgraph")
        print(f"  total: {total:.3f} ms", file=out)
    lat = r.latency
    print(f"model:        {r.model}", file=out)
    print(f"device:       {r.device} (executed on {', '.join(r.execution_devices)})", file=out)
    print(f"hint:         {r.hint}, {r.nireq} infer request(s), batch {r.batch}", file=out)
    if r.precision:
        how = "set by -infer_precision" if r.precision_chosen else "the device's default here; -infer_precision to choose"
        print(f"precision:    {r.precision} ({how})", file=out)
    print("inputs:       " + ", ".join(f"{k}{v}" for k, v in r.input_shapes.items()), file=out)
    print(f"read {r.read_ms:.1f} ms, compile {r.compile_ms:.1f} ms, first inference {r.first_inference_ms:.2f} ms",
          file=out)
    print(f"count:        {r.iterations} iterations in {r.duration_s:.2f} s", file=out)
    print(f"latency (ms): median {lat.median:.3f}  average {lat.average:.3f}  min {lat.min:.3f}  "
          f"max {lat.max:.3f}  p90 {lat.p90:.3f}  p99 {lat.p99:.3f}", file=out)
    print(f"throughput:   {r.throughput_fps:.2f} FPS", file=out)
