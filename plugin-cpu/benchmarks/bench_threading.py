"""Two builds of opforge-cpu (OpenMP and TBB threading, two virtual environments) and OpenVINO,
timed in the same alternating rounds.

The builds cannot share a process (each is ``opforge_cpu._core`` of its own environment), so each
engine runs in a child started with its environment's Python; the parent sends "run n" and gets
the latencies back, round after round (the same scheme as ``engine_process.py``), so that the
three medians come from the same minutes of a noisy host. OpenVINO runs under the first
environment's Python. ``--hog N`` starts N busy loops (``while True: pass``) for the timing: the
loaded-host case of docs/kernel-library.md, "oneDNN and our loops on TBB".

    python plugin-cpu/benchmarks/bench_threading.py --env omp=/work/main/.venv/bin/python \\
        --env tbb=/tmp/tbb-venv/bin/python --model /tmp/bench-models/onnx/mobilenet_v2.onnx \\
        --threads 2 --precision f32 --runs 24 --rounds 6 [--hog 1]

``--ort`` adds ONNX Runtime (under the first environment's Python) to the rounds;
``--precision int8`` times the QDQ copies (``--model /tmp/bench-models/int8/resnet18.onnx``)
with every engine at its f32 hint, as bench_cpu.py's int8 rows. A build named twice with
``--set`` (``--env tbb=... --env tbboff=... --set tbboff:OPFORGE_CPU_TBB_UNSTACK=0``) is a
same-build A/B of a switch in the same rounds.

A model's inputs come from ``ref/<m>.npz`` beside its ``onnx/`` folder (``in.<name>`` arrays, as
bench_cpu.py reads them).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from engine_process import SETTLE_S, interleaved_medians_remote  # noqa: E402 - after the path

#: the child: prepares one engine on one model (bench_cpu's prepare_*), then answers "n" with n
#: latencies (ms) as a JSON line, until stdin closes
CHILD = r"""
import json, sys, time
import numpy as np
sys.path.insert(0, sys.argv[1])
import bench_cpu
engine, path, threads, precision = sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
data = np.load(sys.argv[6])
feeds = {k.removeprefix("in."): data[k] for k in data.files if k.startswith("in.")}
if precision == "int8":
    precision = "f32"  # a QDQ model: the graph decides what runs in int8, the rest f32 (as bench_cpu)
if engine == "openvino":
    infer, _, prec = bench_cpu.prepare_openvino(path, feeds, threads, None if precision == "bf16" else "f32")
elif engine == "onnxruntime":
    infer, _, prec = bench_cpu.prepare_ort(path, feeds, threads)
else:
    infer, _, prec = bench_cpu.prepare_opforge(path, feeds, threads, precision)
    from opforge_cpu._loader import load_core
    core = load_core()  # a build from before the option is an OpenMP one
    prec = f"{prec} {core.threading_runtime() if hasattr(core, 'threading_runtime') else 'omp'}"
print(json.dumps({"ready": prec}), flush=True)
for line in sys.stdin:
    times = []
    for _ in range(int(line)):
        t0 = time.perf_counter(); infer(); times.append((time.perf_counter() - t0) * 1e3)
    print(json.dumps(times), flush=True)
"""

class Child:
    def __init__(self, python: str, engine: str, model: Path, threads: int, precision: str, ref: Path,
                 env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen([python, "-c", CHILD, str(HERE), engine, str(model), str(threads), precision,
                                      str(ref)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     env=dict(os.environ, **(env or {})))
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"{python} {engine}: the child died preparing {model}")
        self.precision = json.loads(line)["ready"]

    def run(self, n: int) -> list[float]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"{n}\n")
        self.proc.stdin.flush()
        return list(json.loads(self.proc.stdout.readline()))

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=30)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--env", action="append", required=True, metavar="NAME=PYTHON",
                    help="an opforge build: its name and its environment's Python (the first also runs OpenVINO)")
    ap.add_argument("--model", type=Path, action="append", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--precision", choices=["f32", "bf16", "int8"], default="f32",
                    help="int8: give the QDQ copies (int8/<m>.onnx); every engine runs them with an f32 hint, "
                         "so the graph's QDQ pairs decide what runs in int8 (as bench_cpu.py)")
    ap.add_argument("--ort", action="store_true", help="time ONNX Runtime (f32, under the first environment's "
                                                          "Python) in the same rounds too")
    ap.add_argument("--runs", type=int, default=24)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--set", action="append", default=[], metavar="NAME:VAR=VALUE",
                    help="an environment variable for one build's child (e.g. tbb:OPFORGE_CPU_KEEP_WARM=0)")
    ap.add_argument("--hog", type=int, default=0, help="busy loops running during the timing")
    ap.add_argument("--reverse", action="store_true", help="time the engines in the reverse order")
    args = ap.parse_args()
    envs = dict(e.split("=", 1) for e in args.env)
    first_python = next(iter(envs.values()))
    child_env: dict[str, dict[str, str]] = {}
    for s in args.set:
        name, _, assignment = s.partition(":")
        var, _, value = assignment.partition("=")
        child_env.setdefault(name, {})[var] = value
    print(f"# {time.strftime('%H:%M:%S')} load {os.getloadavg()[0]:.2f} threads {args.threads} {args.precision} "
          f"runs {args.runs} rounds {args.rounds} hog {args.hog}", flush=True)
    for model in args.model:
        ref = model.parent.parent / "ref" / f"{model.stem}.npz"
        children: dict[str, Child] = {}
        hogs: list[subprocess.Popen[Any]] = []
        try:
            for name, python in envs.items():
                children[name] = Child(python, "opforge", model, args.threads, args.precision, ref,
                                       child_env.get(name))
            children["openvino"] = Child(first_python, "openvino", model, args.threads, args.precision, ref)
            if args.ort:
                children["onnxruntime"] = Child(first_python, "onnxruntime", model, args.threads, args.precision,
                                                ref)
            order = list(children.items())
            if args.reverse:
                order.reverse()
            for _, c in order:
                c.run(5)  # warm-up
                time.sleep(SETTLE_S)
            hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.hog)]
            time.sleep(0.5 if hogs else 0)
            # the rounds as every other A/B here times them (each after one untimed run)
            med = interleaved_medians_remote(dict(order), args.runs, args.rounds, warmup=0)
        finally:
            for h in hogs:
                h.kill()
                h.wait()
            for c in children.values():
                c.close()
        ov = med["openvino"]
        cells = "  ".join(f"{k} {v:.3f} ms ({v / ov:.2f})" for k, v in med.items()
                          if k not in ("openvino", "onnxruntime"))
        names = list(envs)
        pair = f"  {names[1]}/{names[0]} {med[names[1]] / med[names[0]]:.3f}" if len(names) >= 2 else ""
        ort = ""
        if "onnxruntime" in med:  # each build over ONNX Runtime's median of the same rounds
            ort = f"  onnxruntime {med['onnxruntime']:.3f} ms (" + " ".join(
                f"{n} {med[n] / med['onnxruntime']:.2f}" for n in names) + ")"
        print(f"{model.stem:22s} {cells}  openvino {ov:.3f} ms [{children['openvino'].precision}]{pair}{ort}",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
