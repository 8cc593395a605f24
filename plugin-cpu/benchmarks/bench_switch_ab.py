"""Same-build A/B of an ``OPFORGE_CPU_*`` switch: this checkout's opforge_cpu with the switch at 0
("off") and at 1 ("on"), each in its own process (a switch is read once a process, from the
environment the process was spawned with), OpenVINO and ONNX Runtime timed in the same alternating
rounds (engine_process.interleaved_medians_remote); medians in ms and the ratios. bench_ab.py
compares two builds (git revisions); this compares two settings of one build, with no rebuild.
``--on-first`` swaps the order of the two opforge processes in every round.

    python plugin-cpu/benchmarks/bench_switch_ab.py mobilenet_v2 --switch OPFORGE_CPU_DW_F32_3X3_RELU --threads 1 2
    python plugin-cpu/benchmarks/bench_switch_ab.py tv_mnasnet1_0 --models-dir /tmp/real-models-2 --on-first
    python plugin-cpu/benchmarks/bench_switch_ab.py inception_v3 --models-dir /tmp/real-models --int8 \\
        --switch OPFORGE_CPU_INT8_AVG_POOL_REGS --threads 1

``--int8`` times the QDQ copy ``int8/<name>.onnx`` instead (bench_cpu.py's int8 rows).
``--bf16`` compiles opforge with INFERENCE_PRECISION_HINT=bf16 and OpenVINO at its default
precision (bench_cpu.py's bf16 rows):

    python plugin-cpu/benchmarks/bench_switch_ab.py tv_swin_t --models-dir /tmp/real-models-2 --bf16 \\
        --switch OPFORGE_CPU_QKV_PICK --threads 2
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from engine_process import EngineProcess, interleaved_medians_remote


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", help="comma-separated model names (onnx/<name>.onnx of --models-dir)")
    ap.add_argument("--models-dir", type=Path, default=Path("/tmp/bench-models"))
    ap.add_argument("--switch", required=True, help="the OPFORGE_CPU_* variable set to 0 / 1")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--runs", type=int, default=24, help="timed runs per engine and model (default 24)")
    ap.add_argument("--rounds", type=int, default=6, help="alternating rounds the runs are split into (default 6)")
    ap.add_argument("--int8", action="store_true",
                    help="time the QDQ copy int8/<name>.onnx of each model (as bench_cpu --precision int8: "
                         "the rest of the graph in f32 on every engine)")
    ap.add_argument("--on-first", action="store_true", help="time 'on' before 'off' in each round")
    ap.add_argument("--bf16", action="store_true",
                    help="opforge with INFERENCE_PRECISION_HINT=bf16 against OpenVINO at its default precision "
                         "(bf16 on bf16 hosts; bench_cpu --precision bf16); ONNX Runtime f32")
    args = ap.parse_args(argv)
    if args.bf16 and args.int8:
        ap.error("--bf16 and --int8 together: pick one")
    if not args.switch.startswith("OPFORGE_CPU_"):
        ap.error(f"--switch {args.switch}: an OPFORGE_CPU_* variable is expected")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from bench_cpu import host_header, models_in

    available = models_in(args.models_dir)
    names = [m for m in args.models.split(",") if m]
    unknown = [m for m in names if m not in available]
    if unknown:
        raise SystemExit(f"bench_switch_ab: no model {', '.join(unknown)} in {args.models_dir}/onnx")
    order = ["on", "off"] if args.on_first else ["off", "on"]
    print(host_header())
    if args.int8:
        missing = [m for m in names if not (args.models_dir / "int8" / f"{m}.onnx").exists()]
        if missing:
            raise SystemExit(f"bench_switch_ab: no int8 copy of {', '.join(missing)} in {args.models_dir}/int8")
    print(f"# {args.switch}: off = 0, on = 1, this checkout; {'int8 (QDQ)' if args.int8 else 'bf16 (OpenVINO default)' if args.bf16 else 'f32'}; "
          f"runs={args.runs} rounds={args.rounds}; "
          f"{'/'.join(order)} first; ms medians; each engine in its own process")
    saved = os.environ.get(args.switch)
    for threads in args.threads:
        for name in names:
            path, feeds = available[name]
            if args.int8:
                path = args.models_dir / "int8" / f"{name}.onnx"
            procs: dict[str, EngineProcess] = {}
            try:
                for setting in order:
                    # the process is spawned by its first prepare(), with the environment as it is then
                    os.environ[args.switch] = "1" if setting == "on" else "0"
                    procs[setting] = EngineProcess("opforge")
                    procs[setting].prepare(path, feeds, threads, "bf16" if args.bf16 else "f32")
                if saved is None:
                    os.environ.pop(args.switch, None)
                else:
                    os.environ[args.switch] = saved
                procs["openvino"] = EngineProcess("openvino")
                procs["openvino"].prepare(path, feeds, threads, None if args.bf16 else "f32")
                procs["onnxruntime"] = EngineProcess("onnxruntime")
                procs["onnxruntime"].prepare(path, feeds, threads)
                l0 = os.getloadavg()[0]
                med = interleaved_medians_remote(procs, args.runs, args.rounds)
            finally:
                for proc in procs.values():
                    proc.close()
            cols = "  ".join(f"{k} {v:7.3f}" for k, v in med.items())
            ov, ort = med["openvino"], med["onnxruntime"]
            print(f"{name:20s} thr {threads}: {cols} | on/off {med['on'] / med['off']:.3f}  on/ov {med['on'] / ov:.3f} "
                  f"off/ov {med['off'] / ov:.3f}  on/ort {med['on'] / ort:.3f} off/ort {med['off'] / ort:.3f} "
                  f"| load {l0:.1f}-{os.getloadavg()[0]:.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
