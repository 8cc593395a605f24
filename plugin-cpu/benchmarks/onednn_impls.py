"""Which oneDNN implementations opforge's CPU device runs for a model, and their time: the
``ONEDNN_VERBOSE=1`` lines of a child process, after three warm-up inferences, summed per
(primitive, implementation, memory descriptors) and per inference, largest first.

The question it answers on a host you cannot log in to (the device machine): does this model's
int8 / bf16 work run on the AMX kernels (``brgconv:avx512_core_amx``), the AVX-512 VNNI ones, or
a reference implementation, and how does the split change from 1 to 2 threads.

    python plugin-cpu/benchmarks/onednn_impls.py MODEL.onnx REF.npz [--precision bf16] [--threads 2] [--runs 5]

REF.npz holds the inputs as ``in.<name>`` (``make_real_models.py`` / ``make_models.py`` layout).
"""

from __future__ import annotations

import argparse
import collections
import os
import subprocess
import sys

MARK = "@@opforge-timed-runs"

CHILD = f"""
import sys
import numpy as np
import opforge
path, ref, precision, threads, runs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
data = np.load(ref)
feeds = {{k[3:]: data[k] for k in data.files if k.startswith("in.")}}
core = opforge.Core()
compiled = core.compile_model(core.read_model(path), "CPU",
                              {{"INFERENCE_NUM_THREADS": threads, "INFERENCE_PRECISION_HINT": precision}})
request = compiled.create_infer_request()
for _ in range(3):
    request.infer(feeds)
print("{MARK}", flush=True)
for _ in range(runs):
    request.infer(feeds)
"""


def summarize(verbose: str, runs: int) -> tuple[float, list[tuple[str, str, str, int, float]]]:
    """(oneDNN ms per inference, rows of (primitive, implementation, descriptors, calls per
    inference, ms per inference)) of the verbose lines after the marker."""
    timed = verbose.split(MARK, 1)[-1]
    sums: dict[tuple[str, str, str], list[float]] = collections.defaultdict(lambda: [0, 0.0])
    for line in timed.splitlines():
        fields = line.split(",")
        # onednn_verbose,exec,cpu,<primitive>,<implementation>,<propagation>,<descriptors>,...,<ms>
        if len(fields) > 7 and fields[0] == "onednn_verbose" and fields[1] == "exec":
            entry = sums[(fields[3], fields[4], fields[6])]
            entry[0] += 1
            entry[1] += float(fields[-1])
    rows = [(p, impl, md, int(n) // runs, ms / runs) for (p, impl, md), (n, ms) in sums.items()]
    rows.sort(key=lambda r: -r[4])
    return sum(r[4] for r in rows), rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("ref")
    ap.add_argument("--precision", default="f32", choices=["f32", "bf16"])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--top", type=int, default=12)
    args = ap.parse_args()
    env = dict(os.environ, ONEDNN_VERBOSE="1")
    done = subprocess.run([sys.executable, "-c", CHILD, args.model, args.ref, args.precision, str(args.threads),
                           str(args.runs)], env=env, capture_output=True, text=True, timeout=300)
    if done.returncode != 0 or MARK not in done.stdout:
        print(done.stderr[-3000:], file=sys.stderr)
        return 1
    total, rows = summarize(done.stdout, args.runs)
    print(f"{os.path.basename(args.model)} {args.precision} {args.threads} thread(s): "
          f"oneDNN time {total:.3f} ms per inference")
    for prim, impl, md, calls, ms in rows[:args.top]:
        print(f"  {prim:<20} {impl:<30} {calls:>4} calls {ms:8.3f} ms  {md[:110]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
