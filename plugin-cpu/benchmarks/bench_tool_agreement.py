"""Does ``opforge benchmark`` report what ``bench_cpu.py`` measures? Both time ``infer`` on the CPU
device; this runs them alternately in one process (the order swapped every round, so both see
the same load) on the benchmark models and prints the median of the round medians and the median
of the paired per-round ratios.

    python plugin-cpu/benchmarks/bench_tool_agreement.py --models /tmp/bench-models [--rounds 10] [--iters 30]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_cpu  # the bench script beside this file
from opforge.benchmark import BenchmarkSettings, run_benchmark


def by_script(path: Path, feeds: dict[str, np.ndarray], threads: int, iters: int) -> float:
    return float(bench_cpu.run_opforge(path, feeds, threads, iters)[0])


def by_tool(path: Path, npz: Path, threads: int, iters: int) -> float:
    settings = BenchmarkSettings(str(path), "CPU", inputs=str(npz), niter=iters, nthreads=threads)
    return run_benchmark(settings).latency.median


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", type=Path, required=True, help="make_models.py output folder")
    ap.add_argument("--only", nargs="*", default=["resnet18", "mobilenet_v2"])
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--iters", type=int, default=30)
    args = ap.parse_args()
    for model in args.only:
        path = args.models / "onnx" / f"{model}.onnx"
        npz = args.models / "ref" / f"{model}.npz"
        data = np.load(npz)
        feeds = {k.removeprefix("in."): data[k] for k in data.files if not k.startswith("out")}
        for t in args.threads:
            script: list[float] = []
            tool: list[float] = []
            for r in range(args.rounds):
                # swapped every round: neither always runs first (after the other warmed caches)
                for which in ("script", "tool") if r % 2 == 0 else ("tool", "script"):
                    if which == "script":
                        script.append(by_script(path, feeds, t, args.iters))
                    else:
                        tool.append(by_tool(path, npz, t, args.iters))
            ms, mt = statistics.median(script), statistics.median(tool)
            paired = statistics.median(b / a for a, b in zip(script, tool))
            print(f"{model:<13} threads {t}  bench_cpu.py {ms:8.2f} ms  opforge benchmark {mt:8.2f} ms  "
                  f"ratio of medians {mt / ms:.3f}  median paired ratio {paired:.3f}  "
                  f"load {os.getloadavg()[0]:.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
