"""A/B of a CPU-plugin change in one command: opforge_cpu as built at a git revision ("before")
vs this checkout ("now") vs OpenVINO, each engine in its own process (engine_process.py), timed
in the same alternating rounds; medians in ms, the ratios, the load, and how far the
two opforge outputs are apart.

The "before" package is built from the revision itself: ``git worktree add`` of the revision in
a temporary folder, ``pip wheel --no-deps`` of its plugin-cpu (a full C++ build: minutes on a
loaded 2-core host; in pip's isolated build environment, so with the revision's own
``build-system.requires`` and nothing asked of this venv, which has no oneDNN headers), the wheel unpacked into ``--cache/<commit>/pkg`` and
the worktree removed. The unpacked package is kept per commit, so the next A/B against the same
revision starts at once; ``--before-pkg DIR`` uses any unpacked wheel instead. The before
process imports that opforge_cpu (bench_hotspots.use_cpu_package) with this checkout's core.

    python plugin-cpu/benchmarks/bench_ab.py resnet18,mobilenet_v2 --before HEAD~3 --threads 1 2
    python plugin-cpu/benchmarks/bench_ab.py swin_t --models-dir /tmp/real-models-2 --precision bf16
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import engine_process
from engine_process import EngineProcess, interleaved_medians_remote

REPO = Path(__file__).resolve().parents[2]
BEFORE_ENGINE = "opforge-before"
#: where unpacked "before" packages are kept, one folder per commit
DEFAULT_CACHE = Path(tempfile.gettempdir()) / "opforge-ab"


def prepare_before(path: Path, feeds: dict[str, np.ndarray], threads: int, precision: str,
                   folder: str) -> tuple[Any, np.ndarray, str]:
    """The before engine's preparer (run in its own process): imports opforge_cpu from ``folder``
    (before anything imported the installed one), then compiles like bench_cpu.prepare_opforge."""
    from bench_hotspots import use_cpu_package

    use_cpu_package(Path(folder))
    import opforge_cpu

    if not str(Path(opforge_cpu.__file__).resolve()).startswith(str(Path(folder).resolve())):
        raise RuntimeError(f"the before process imported opforge_cpu from {opforge_cpu.__file__}, not {folder}")
    from bench_cpu import prepare_opforge

    return prepare_opforge(path, feeds, threads, precision)


def resolve(rev: str) -> str:
    """The full commit id of ``rev`` (a branch, tag, HEAD~2...); SystemExit when git does not know it."""
    done = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--verify", f"{rev}^{{commit}}"],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"bench_ab: git does not know revision '{rev}': {done.stderr.strip()}")
    return done.stdout.strip()


def build_before(commit: str, cache: Path) -> Path:
    """The opforge_cpu of ``commit``, built once into ``cache/<commit>/pkg`` (see the module doc)."""
    pkg = cache / commit / "pkg"
    if (pkg / "opforge_cpu" / "__init__.py").exists():
        return pkg
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="opforge-ab-", dir=cache) as tmp:
        src, wheels = Path(tmp) / "src", Path(tmp) / "wheels"
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "--quiet", str(src), commit], check=True)
        try:
            print(f"# building opforge_cpu at {commit[:10]} (pip wheel, full C++ build)", flush=True)
            subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                            str(src / "plugin-cpu"), "-w", str(wheels)], check=True)
        finally:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(src)], check=False)
        built = sorted(wheels.glob("opforge_cpu-*.whl"))
        if not built:
            raise SystemExit(f"bench_ab: pip wheel made no opforge_cpu wheel in {wheels}")
        staging = Path(tmp) / "pkg"
        with zipfile.ZipFile(built[0]) as whl:
            whl.extractall(staging)
        pkg.parent.mkdir(parents=True, exist_ok=True)
        staging.rename(pkg)  # last: a half-built package is never taken for a finished one
    return pkg


def relative_difference(a: np.ndarray, b: np.ndarray) -> float:
    a64, b64 = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if a64.shape != b64.shape:
        return float("inf")
    return float(np.max(np.abs(a64 - b64), initial=0.0) / max(float(np.max(np.abs(a64), initial=0.0)), 1e-12))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", help="comma-separated model names (onnx/<name>.onnx of --models-dir)")
    ap.add_argument("--models-dir", type=Path, default=Path("/tmp/bench-models"),
                    help="a make_real_models.py / shared/bench make_models.py folder (default /tmp/bench-models)")
    ap.add_argument("--before", default="HEAD", metavar="REV",
                    help="git revision whose opforge_cpu is the 'before' column (default HEAD: the last commit "
                         "against the uncommitted tree)")
    ap.add_argument("--before-pkg", type=Path, metavar="DIR",
                    help="an unpacked opforge_cpu wheel to use as 'before' instead of building --before")
    ap.add_argument("--cache", type=Path, default=DEFAULT_CACHE,
                    help=f"where built 'before' packages are kept, per commit (default {DEFAULT_CACHE})")
    ap.add_argument("--precision", choices=["f32", "bf16", "int8"], default="f32",
                    help="opforge's precision; OpenVINO runs f32, or its default (bf16 on this host) for bf16; "
                         "int8 runs the QDQ copy int8/<m>.onnx with the rest in f32 (default f32)")
    ap.add_argument("--threads", type=int, nargs="+", default=[1])
    ap.add_argument("--runs", type=int, default=40, help="timed runs per engine and model (default 40)")
    ap.add_argument("--rounds", type=int, default=8, help="alternating rounds the runs are split into (default 8)")
    ap.add_argument("--no-openvino", action="store_true", help="before vs now only")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from bench_cpu import host_header, int8_files, models_in

    engine_process.PREPARERS[BEFORE_ENGINE] = "bench_ab:prepare_before"
    if args.before_pkg:
        pkg, label = args.before_pkg.resolve(), "--before-pkg"
        if not (pkg / "opforge_cpu" / "__init__.py").exists():
            raise SystemExit(f"bench_ab: {pkg} holds no opforge_cpu package (an unpacked wheel is expected)")
    else:
        commit = resolve(args.before)
        pkg, label = build_before(commit, args.cache), f"{args.before} ({commit[:10]})"
    available = models_in(args.models_dir)
    names = [m for m in args.models.split(",") if m]
    unknown = [m for m in names if m not in available]
    if unknown:
        raise SystemExit(f"bench_ab: no model {', '.join(unknown)} in {args.models_dir}/onnx "
                         f"(there: {', '.join(sorted(available))})")
    int8 = int8_files(args.models_dir, names) if args.precision == "int8" else {}
    missing = [m for m in names if args.precision == "int8" and m not in int8]
    if missing:
        raise SystemExit(f"bench_ab: no int8 copy {args.models_dir}/int8/<m>.onnx of {', '.join(missing)}")
    print(host_header())
    print(f"# before = {label}, {pkg}; now = this checkout; {args.precision}; runs={args.runs} rounds={args.rounds}; "
          "ms medians; each engine in its own process")
    of_prec = "f32" if args.precision == "int8" else args.precision
    ov_prec = None if args.precision == "bf16" else "f32"
    procs = {"before": EngineProcess(BEFORE_ENGINE), "now": EngineProcess("opforge")}
    if not args.no_openvino:
        procs["openvino"] = EngineProcess("openvino")
    try:
        for threads in args.threads:
            for name in names:
                path, feeds = available[name]
                path = int8.get(name, path)
                l0 = os.getloadavg()[0]
                out_b, _ = procs["before"].prepare(path, feeds, threads, of_prec, str(pkg))
                out_n, prec = procs["now"].prepare(path, feeds, threads, of_prec)
                ov = ""
                if "openvino" in procs:
                    _, ov_got = procs["openvino"].prepare(path, feeds, threads, ov_prec)
                    ov = f"({ov_got})"
                med = interleaved_medians_remote(procs, args.runs, args.rounds)
                ratio = f"now/before {med['now'] / med['before']:.3f}"
                if "openvino" in procs:
                    ratio += f"  before/ov {med['before'] / med['openvino']:.3f}  now/ov {med['now'] / med['openvino']:.3f}"
                cols = "  ".join(f"{k}{ov if k == 'openvino' else ''} {v:8.3f}" for k, v in med.items())
                # an int8 (QDQ) file compiles at f32 (its int8 nodes run int8 anyway): say int8
                shown = "int8" if args.precision == "int8" else prec
                print(f"{name:20s} {shown:5s} thr {threads}: {cols} | {ratio} | rel diff {relative_difference(out_b, out_n):.1e}"
                      f" | load {l0:.1f}-{os.getloadavg()[0]:.1f}", flush=True)
                for proc in procs.values():
                    proc.drop()
    finally:
        for proc in procs.values():
            proc.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
