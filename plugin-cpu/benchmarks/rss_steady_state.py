"""Resident memory of the CPU device in steady state: RSS sampled while one infer request runs
mobilenet_v2 10,000 times (a benchmark, not a timed test). A steady state that allocates nothing
per inference keeps RSS flat after the first runs.

    python plugin-cpu/benchmarks/rss_steady_state.py [--model /tmp/bench-models/onnx/mobilenet_v2.onnx]
        [--runs 10000] [--every 500] [--threads 2]

Prints RSS (MiB) after the first inference, every ``--every`` runs, the last and the largest
sample, and the growth from the first to the last and to the largest.
"""

from __future__ import annotations

import argparse
import os


def rss_mib() -> float:
    with open(f"/proc/{os.getpid()}/statm", encoding="ascii") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="/tmp/bench-models/onnx/mobilenet_v2.onnx")
    ap.add_argument("--runs", type=int, default=10_000)
    ap.add_argument("--every", type=int, default=500)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()

    import numpy as np
    import opforge

    core = opforge.Core()
    model = core.read_model(args.model)
    compiled = core.compile_model(model, "CPU", {"INFERENCE_NUM_THREADS": args.threads})
    shape = [int(d) for d in model.inputs[0].partial_shape.to_tuple()]
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    request = compiled.create_infer_request()
    request.infer([x])
    first = rss_mib()
    samples = [first]
    print(f"model {args.model}, {args.runs} inferences, {args.threads} thread(s)")
    print(f"run {1:>6}: RSS {first:8.1f} MiB")
    for i in range(2, args.runs + 1):
        request.infer([x])
        if i % args.every == 0:
            samples.append(rss_mib())
            print(f"run {i:>6}: RSS {samples[-1]:8.1f} MiB")
    last, top = samples[-1], max(samples)
    print(f"first {first:.1f} MiB, last {last:.1f} MiB, max {top:.1f} MiB; growth first->last "
          f"{last - first:+.2f} MiB, first->max {top - first:+.2f} MiB")


if __name__ == "__main__":
    main()
